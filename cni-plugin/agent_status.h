#pragma once
// STATUS as the runtimes call it. containerd runs STATUS on every plugin of the chain on the
// kubelet's 5 s status poll, and one failure makes the node NotReady. A restarting agent must not
// do that, so STATUS fails (CNI code 50) only once the agent has been unreachable for longer than
// a grace: then ADD has been failing for a sustained time and the node truly cannot start pods.
//
// The plugin lives for one call, so the moment of the first failure is kept in a small file,
// <stateDir>/agent-unreachable-since, written (atomically) at the first failure only and removed
// at the first success. A healthy node pays one agent round trip and one unlink of a missing file
// per STATUS. The moment is CLOCK_BOOTTIME, which the wall clock cannot move, with the boot id:
// the state dir survives a reboot, and a file from an earlier boot counts as no file at all.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::cni {

inline constexpr std::string_view kUnreachableSinceFile = "agent-unreachable-since";

/// A moment that the plugin processes of one boot can compare.
struct BootInstant {
  std::string bootId;                      // /proc/sys/kernel/random/boot_id
  std::chrono::milliseconds sinceBoot{0};  // CLOCK_BOOTTIME
};

/// Now, as the kernel tells it.
BootInstant bootClockNow();

/// "<bootId> <milliseconds>\n", the file's content; and back, nullopt for anything else.
std::string formatBootInstant(const BootInstant& instant);
std::optional<BootInstant> parseBootInstant(std::string_view text);

/// STATUS's verdict on one readiness probe of the agent (`ready`):
///  - ready: the record is removed, success;
///  - not ready: the record is written unless it already holds a moment of this boot; success
///    while that moment is at most `grace` ago, else `ready`'s error saying for how long. A grace
///    of 0 fails at once.
/// A record that cannot be read or written is reported through `warn` and counts as a first
/// failure: bookkeeping trouble must not make the node NotReady.
Result<void> judgeAgentStatus(const Result<void>& ready, const std::filesystem::path& stateDir,
                              std::chrono::seconds grace, const BootInstant& now,
                              const std::function<void(const std::string&)>& warn);

}  // namespace hostport::cni
