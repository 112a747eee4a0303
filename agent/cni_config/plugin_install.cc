#include "agent/cni_config/plugin_install.h"

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/quote.h"
#include "common/subprocess.h"

namespace hostport::agent::cni_config {
namespace {

constexpr std::string_view kPluginName = "hostport";
constexpr std::size_t kMaxAnswer = 64 * 1024;
// The newest version we speak: a plugin that cannot answer it is not this one.
constexpr std::string_view kVersionRequest = R"({"cniVersion":"1.1.0"})";

}  // namespace

Result<std::string> pluginVersion(const std::filesystem::path& plugin,
                                  std::chrono::milliseconds deadline) {
  const std::string program = plugin.string();
  // VERSION needs nothing else; the runtime's own environment is not ours to pass on.
  auto ran = runProgram({{program},
                         {"CNI_COMMAND=VERSION", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
                         std::string(kVersionRequest),
                         deadline,
                         kMaxAnswer});
  if (!ran && ran.error().code == ErrorCode::kUnavailable) {
    return fail(ErrorCode::kUnavailable, program + " did not answer VERSION within " +
                                             std::to_string(deadline.count()) + " ms");
  }
  HOSTPORT_TRY(const ProgramOutcome outcome, std::move(ran));
  if (!outcome.succeeded()) {
    // 127: the loader could not start it (a missing library), the usual failure on a node.
    return fail(ErrorCode::kKernel,
                program + " " + outcome.describe() + " on VERSION: " + quoteText(outcome.out));
  }
  const auto parsed = nlohmann::json::parse(outcome.out, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("supportedVersions")) {
    return fail(ErrorCode::kDecode, program + " answered VERSION with no CNI version result: " +
                                        quoteText(outcome.out));
  }
  return parsed.dump();
}

Result<InstalledPlugin> installPlugin(const std::filesystem::path& binary,
                                      const std::filesystem::path& binDir,
                                      std::chrono::milliseconds deadline) {
  auto copied = copyFileAtomically(binary, binDir, kPluginName, Durability::kDurable, 0755);
  if (!copied) return withContext(copied.error(), "installing " + binary.string());
  const auto installed = binDir / kPluginName;
  HOSTPORT_TRY(std::string version, pluginVersion(installed, deadline));
  return InstalledPlugin{installed, std::move(version)};
}

}  // namespace hostport::agent::cni_config
