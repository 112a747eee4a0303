#pragma once
// Start-up: the leases on disk back into a new allocator, before the agent serves.
//
// Design note: the decoded leases (~25 MB at 50,000) live only inside recoverState(), so they are
// freed before the agent serves; the allocator keeps them packed (packed_lease.h). While recovery
// runs, glibc's fastbins are off, and the heap is trimmed at the end (recovery.cc says why), so
// the start-up peak does not stay resident. 50,000 leases recover in ~110 ms (docs/benchmarks.md).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "agent/core/allocator.h"
#include "agent/store/lease_store.h"

namespace hostport::agent::daemon {

/// The recovered store (its committer running) and the allocator holding its leases.
struct RecoveredState {
  std::unique_ptr<store::LeaseStore> store;
  core::Allocator allocator;
};

/// Opens the lease store in `stateDir` with `options`, reads its leases back into a new allocator
/// over `pools` (whose random strategy draws from `random`), and logs store.recovered. Errors: the
/// store's (a dir another agent holds, a journal that does not replay), invalid pools, and a lease
/// that does not fit the pools: losing track of it could hand its ports out twice, so the agent
/// refuses to serve instead. The sticky memory comes back too, at most `stickyCapacity` pods.
Result<RecoveredState> recoverState(
    const std::filesystem::path& stateDir, const std::vector<core::PoolSpec>& pools,
    std::function<uint64_t()> random, store::StoreOptions options = {},
    std::size_t stickyCapacity = core::StickyMemory::kDefaultCapacity);

}  // namespace hostport::agent::daemon
