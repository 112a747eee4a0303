// The node's CNI configuration as the install step edits it (agent/cni_config/conf_editor.h,
// conf_dir.h): the input is one file, read both as a .conflist and as a .conf. Invariants: chaining
// leaves exactly one hostport entry and is idempotent (chaining again changes nothing); unchaining
// with what chaining recorded leaves no hostport entry and gives back a portmap it replaced.

#include <string>

#include "agent/cni_config/conf_dir.h"
#include "agent/cni_config/conf_editor.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace cni_config = hostport::agent::cni_config;
using cni_config::Json;

std::size_t countType(const Json& conflist, std::string_view type) {
  std::size_t count = 0;
  for (const auto& plugin : conflist.at("plugins")) {
    if (plugin.is_object() && plugin.contains("type") && plugin["type"] == type) ++count;
  }
  return count;
}

void checkChaining(const Json& conflist, bool replacePortmap) {
  const cni_config::ChainOptions options{.replacePortmap = replacePortmap,
                                         .agentSocket = "/run/hostport/agent.sock"};
  const auto edit = cni_config::chainIntoConflist(conflist, options);
  if (!edit) return;
  FUZZ_CHECK(cni_config::isChained(edit->conflist));
  const auto again = cni_config::chainIntoConflist(edit->conflist, options);
  FUZZ_CHECK(again.has_value() && !again->changed && again->conflist == edit->conflist);
  const auto restored = cni_config::unchainFromConflist(edit->conflist, edit->replacedPortmap);
  FUZZ_CHECK(restored.has_value());
  FUZZ_CHECK(countType(*restored, cni_config::kPluginType) == 0);
  if (edit->replacedPortmap) FUZZ_CHECK(countType(*restored, cni_config::kPortmapType) >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hostport::fuzz::textOf(data, size);
  if (const auto conflist = cni_config::parseConf(text, cni_config::ConfFormat::kConflist)) {
    checkChaining(*conflist, true);
    checkChaining(*conflist, false);
  }
  if (const auto conf = cni_config::parseConf(text, cni_config::ConfFormat::kConf)) {
    if (const auto conflist = cni_config::conflistFromConf(*conf)) {
      checkChaining(*conflist, true);
    }
  }
  return 0;
}
