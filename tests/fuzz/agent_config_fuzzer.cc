// The agent's YAML configuration (agent/config/agent_config.h) as a ConfigMap gives it, and
// --port-range's text. Invariants: a configuration that finalizes has pools whose ranges are
// non-empty, within 1..65535 and accepted by the allocator; port ranges print back to text that
// parses to the same ranges.

#include <string>

#include "agent/config/agent_config.h"
#include "agent/core/allocator.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace agent = hostport::agent;
namespace config = hostport::agent::config;

void checkPortRanges(std::string_view text) {
  const auto ranges = config::parsePortRanges(text);
  if (!ranges) return;
  std::string printed;
  for (const auto& range : *ranges) {
    FUZZ_CHECK(range.first >= 1 && range.first <= range.last);
    printed += (printed.empty() ? "" : ",") + range.str();
  }
  const auto again = config::parsePortRanges(printed);
  FUZZ_CHECK(again.has_value() && *again == *ranges);
}

void checkConfig(std::string_view text) {
  config::AgentConfig parsed;
  if (!config::applyYamlConfig(text, "fuzz.yaml", parsed)) return;
  if (!config::finalizeConfig(parsed)) return;
  FUZZ_CHECK(!parsed.pools.empty());
  for (const auto& pool : parsed.pools) {
    FUZZ_CHECK(!pool.ranges.empty());
    for (const auto& range : pool.ranges) FUZZ_CHECK(range.first >= 1 && range.first <= range.last);
  }
  FUZZ_CHECK(agent::core::Allocator::create(parsed.pools, [] { return uint64_t{0}; }).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hostport::fuzz::textOf(data, size);
  checkConfig(text);
  checkPortRanges(text);
  return 0;
}
