// A snapshot file image as the agent loads it at start (agent/store/snapshot.h). Invariant: what
// decodes encodes (in the current format) to an image that decodes to the same leases and sticky
// memory, so a compaction after loading loses nothing.

#include <string>

#include "agent/store/snapshot.h"
#include "tests/fuzz/fuzz_check.h"

namespace store = hostport::agent::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view image = hostport::fuzz::textOf(data, size);
  const auto snapshot = store::decodeSnapshot(image);
  if (!snapshot) return 0;
  const auto encoded =
      store::encodeSnapshot(snapshot->generation, snapshot->leases, snapshot->sticky);
  FUZZ_CHECK(encoded.has_value());
  const auto again = store::decodeSnapshot(*encoded);
  FUZZ_CHECK(again.has_value() && again->generation == snapshot->generation &&
             again->leases == snapshot->leases && again->sticky == snapshot->sticky);
  return 0;
}
