#include "agent/store/state_dir.h"

#include <fcntl.h>

#include "agent/store/journal_file.h"
#include "agent/store/snapshot.h"

namespace hostport::agent::store {

StateDirPlan classifyStateDir(const std::filesystem::path& dir,
                              const std::vector<std::string>& names,
                              std::optional<uint64_t> snapshotGeneration) {
  const uint64_t generation = snapshotGeneration.value_or(0);
  StateDirPlan plan;
  plan.liveJournal = journalPath(dir, generation);
  for (const std::string& name : names) {
    if (name == kSnapshotTmpName) {
      plan.stale.push_back(dir / name);
      continue;
    }
    const auto fileGeneration = parseJournalName(name);
    if (!fileGeneration) continue;
    const auto path = dir / name;
    if (*fileGeneration == generation) {
      plan.liveJournalExists = true;
    } else if (*fileGeneration < generation) {
      plan.stale.push_back(path);  // its records are in the snapshot
    } else if (*fileGeneration == generation + 1) {
      plan.nextJournal = path;
      plan.stale.push_back(path);
    } else {
      plan.refusal = Error{ErrorCode::kIo,
                           path.string() + " is newer than the snapshot generation " +
                               std::to_string(generation) +
                               "; the snapshot may have been lost or replaced, refusing to start",
                           {}};
      return plan;
    }
  }
  if (!plan.liveJournalExists && snapshotGeneration) {
    plan.refusal = Error{ErrorCode::kIo,
                         "the snapshot is at generation " + std::to_string(generation) + " but " +
                             plan.liveJournal.string() +
                             " is missing; acknowledged leases may be lost, refusing to start",
                         {}};
  } else if (!plan.liveJournalExists && plan.nextJournal) {
    plan.refusal = Error{ErrorCode::kIo,
                         plan.nextJournal->string() + " is there but neither the snapshot nor " +
                             plan.liveJournal.string() +
                             " is; acknowledged leases may be lost, refusing to start",
                         {}};
  }
  return plan;
}

Result<void> checkNextJournalIsEmpty(FileOps& fs, const std::filesystem::path& path,
                                     uint64_t snapshotGeneration) {
  HOSTPORT_TRY(const UniqueFd fd, fs.open(path, O_RDONLY, 0));
  auto size = fs.fileSize(fd.get());
  if (!size) return withContext(size.error(), path.string());
  if (*size > kJournalHeaderBytes) {
    return fail(ErrorCode::kIo, path.string() +
                                    " holds records but the snapshot is at generation " +
                                    std::to_string(snapshotGeneration) +
                                    "; the snapshot may have been lost or replaced, refusing to "
                                    "start");
  }
  return {};
}

}  // namespace hostport::agent::store
