// The journal as the agent replays it after a crash (agent/store/journal_file.h, lease_codec.h):
// the input is a journal image after its header. Invariants: the scan's offsets add up; every
// record that decodes encodes to bytes that decode to the same record; and the replayed leases
// survive a snapshot (snapshot.h) unchanged, so a compaction after replay loses nothing.

#include <string>

#include "agent/store/journal_file.h"
#include "agent/store/lease_codec.h"
#include "agent/store/replay_state.h"
#include "agent/store/snapshot.h"
#include "tests/fuzz/fuzz_check.h"

namespace store = hostport::agent::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string image =
      store::journalHeader(1) + std::string(hostport::fuzz::textOf(data, size));
  store::ReplayState state;
  const auto scan =
      store::scanFrames(image, store::kJournalHeaderBytes, "journal.1",
                        [&](std::string_view payload, uint64_t) -> hostport::Result<void> {
                          auto record = store::decodeRecord(payload);
                          if (!record) return std::unexpected(record.error());
                          std::string encoded;
                          FUZZ_CHECK(store::encodeRecord(*record, encoded).has_value());
                          // Records of older codec versions come back in the current one: compare
                          // values.
                          const auto again = store::decodeRecord(encoded);
                          FUZZ_CHECK(again.has_value() && *again == *record);
                          if (record->kind == store::JournalRecord::Kind::kGrant) {
                            state.grant(std::move(record->lease));
                          } else {
                            state.release(record->lease.key);
                          }
                          return {};
                        });
  if (!scan) return 0;
  FUZZ_CHECK(scan->validEnd >= store::kJournalHeaderBytes && scan->validEnd <= image.size());
  FUZZ_CHECK(scan->tornTail == (scan->tornBytes != 0));
  FUZZ_CHECK(scan->validEnd + scan->tornBytes == image.size());
  const auto leases = state.takeSorted();
  const auto snapshot = store::encodeSnapshot(2, leases);
  FUZZ_CHECK(snapshot.has_value());
  const auto loaded = store::decodeSnapshot(*snapshot);
  FUZZ_CHECK(loaded.has_value() && loaded->generation == 2 && loaded->leases == leases);
  return 0;
}
