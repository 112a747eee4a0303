#include "agent/daemon/recovery.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <chrono>

#include "agent/log/event_log.h"
#include "common/heap.h"

namespace hostport::agent::daemon {
namespace {

// The heap while recovery runs. glibc keeps freed memory for reuse, and the decoded leases
// (~250,000 small strings at 50,000 leases) sat below the allocator's packed ones, out of reach
// of its trimming at the top of the heap: malloc_trim() hands their pages back to the kernel at
// the end. Fastbins are off meanwhile, so those strings coalesce as they are freed instead of
// all at once inside malloc_trim() (free and trim: 27 -> 16 ms at 50,000 leases).
class RecoveryHeap {
 public:
  RecoveryHeap() {
#ifdef __GLIBC__
    mallopt(M_MXFAST, 0);
#endif
  }
  ~RecoveryHeap() {
    returnFreedHeap();
#ifdef __GLIBC__
    mallopt(M_MXFAST, 64 * sizeof(std::size_t) / 4);  // glibc's default
#endif
  }
  RecoveryHeap(const RecoveryHeap&) = delete;
  RecoveryHeap& operator=(const RecoveryHeap&) = delete;
};

// The allocator of `store`'s leases. The decoded leases live only in this function, so they are
// freed (inside the caller's RecoveryHeap) before the agent serves.
//
// The sticky memory is read into a memory of its own as the store replays (bounded as the
// allocator's, so a long journal costs no more), and replayed onto the allocator after the leases:
// restoring a lease records it as a grant, and the journal's order, newest last, must win.
Result<core::Allocator> restoreLeases(store::LeaseStore& store,
                                      const std::vector<core::PoolSpec>& pools,
                                      std::function<uint64_t()> random,
                                      std::size_t stickyCapacity) {
  core::StickyMemory recalled(stickyCapacity);
  auto leases = store.recover([&recalled](const StickyEntry& entry) { recalled.apply(entry); });
  if (!leases) {
    // The store refuses what it found on disk: the event a store failing later logs too, so one
    // grep finds both. The agent does not start (exit 1).
    log::event(log::Component::kStore, log::Level::kError, "store.failed",
               {{"cause", leases.error().message}, {"exit_in_ms", 0}});
    return withContext(leases.error(), "cannot recover leases");
  }
  auto allocator = core::Allocator::create(pools, std::move(random), {}, stickyCapacity);
  if (!allocator) return withContext(allocator.error(), "invalid pools");
  allocator->reserve(leases->size());
  for (const auto& lease : *leases) {
    if (auto restored = allocator->restore(lease); !restored) {
      return withContext(restored.error(), "cannot restore a recovered lease");
    }
  }
  allocator->recallSticky(recalled.entries());
  return std::move(*allocator);
}

}  // namespace

Result<RecoveredState> recoverState(const std::filesystem::path& stateDir,
                                    const std::vector<core::PoolSpec>& pools,
                                    std::function<uint64_t()> random, store::StoreOptions options,
                                    std::size_t stickyCapacity) {
  const auto started = std::chrono::steady_clock::now();
  auto store = store::LeaseStore::open(stateDir, std::move(options));
  if (!store) return withContext(store.error(), "cannot open the state dir");
  Result<core::Allocator> allocator = [&] {
    const RecoveryHeap heap;
    return restoreLeases(**store, pools, std::move(random), stickyCapacity);
  }();
  HOSTPORT_TRY(core::Allocator restored, std::move(allocator));
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  const store::RecoveryStats found = (*store)->stats().recovery;
  log::event(log::Component::kStore, log::Level::kInfo, "store.recovered",
             {{"leases", restored.leaseCount()},
              {"ms", elapsed.count()},
              {"generation", found.generation},
              {"snapshot_leases", found.snapshotLeases},
              {"records", found.recordsReplayed},
              {"torn_tail", found.tornTailDropped},
              {"torn_bytes", found.tornBytes},
              {"stale_files", found.staleFilesRemoved},
              {"sticky_pods", restored.stickyPods()},
              {"dir", stateDir.string()}});
  return RecoveredState{std::move(*store), std::move(restored)};
}

}  // namespace hostport::agent::daemon
