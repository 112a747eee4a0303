#include "cni-plugin/agent_status.h"

#include <ctime>
#include <optional>

#include "common/ascii.h"
#include "common/atomic_file.h"

namespace hostport::cni {
namespace {

constexpr std::size_t kMaxRecordBytes = 128;
constexpr std::size_t kBootIdLength = 36;  // a UUID: 8-4-4-4-12 hex digits

bool isBootId(std::string_view text) {
  if (text.size() != kBootIdLength) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const bool hex = ascii::isDigit(text[i]) || (text[i] >= 'a' && text[i] <= 'f');
    if (dash ? text[i] != '-' : !hex) return false;
  }
  return true;
}

std::string readBootId() {
  auto text = readSmallFile("/proc/sys/kernel/random/boot_id", kMaxRecordBytes);
  if (!text || !*text) return {};
  std::string id = **text;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return isBootId(id) ? id : std::string();
}

/// The moment of the first failure of this boot, when the record holds one.
std::optional<std::chrono::milliseconds> recordedSince(
    const std::filesystem::path& path, const BootInstant& now,
    const std::function<void(const std::string&)>& warn) {
  auto text = readSmallFile(path, kMaxRecordBytes);
  if (!text) {
    warn("warning: cannot read " + path.string() + ": " + text.error().message);
    return std::nullopt;
  }
  if (!*text) return std::nullopt;
  const auto recorded = parseBootInstant(**text);
  // Another boot's record, or a moment after now (impossible within one boot): start again.
  if (!recorded || recorded->bootId != now.bootId || recorded->sinceBoot > now.sinceBoot) {
    return std::nullopt;
  }
  return recorded->sinceBoot;
}

std::string secondsText(std::chrono::milliseconds duration) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(duration).count()) + " s";
}

}  // namespace

BootInstant bootClockNow() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return {readBootId(),
          std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec))};
}

std::string formatBootInstant(const BootInstant& instant) {
  return instant.bootId + " " + std::to_string(instant.sinceBoot.count()) + "\n";
}

std::optional<BootInstant> parseBootInstant(std::string_view text) {
  if (text.ends_with('\n')) text.remove_suffix(1);
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view id = text.substr(0, space);
  const std::string_view digits = text.substr(space + 1);
  if (!isBootId(id) || digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t milliseconds = 0;
  for (const char c : digits) {
    if (!ascii::isDigit(c)) return std::nullopt;
    milliseconds = milliseconds * 10 + (c - '0');
  }
  return BootInstant{std::string(id), std::chrono::milliseconds(milliseconds)};
}

Result<void> judgeAgentStatus(const Result<void>& ready, const std::filesystem::path& stateDir,
                              std::chrono::seconds grace, const BootInstant& now,
                              const std::function<void(const std::string&)>& warn) {
  const auto path = stateDir / kUnreachableSinceFile;
  if (ready) {
    if (auto removed = removeFile(path); !removed) {
      warn("warning: cannot remove " + path.string() + ": " + removed.error().message);
    }
    return {};
  }
  if (grace.count() == 0) return ready;
  const auto since = recordedSince(path, now, warn);
  if (!since) {
    auto written = writeFileAtomically(stateDir, kUnreachableSinceFile, formatBootInstant(now),
                                       Durability::kCache);
    if (!written) {
      warn("warning: cannot record the agent's first failure: " + written.error().message);
    }
  }
  const auto down = since ? now.sinceBoot - *since : std::chrono::milliseconds(0);
  if (down <= grace) {
    warn("warning: " + ready.error().message + "; STATUS succeeds for up to " + secondsText(grace) +
         " (unreachable for " + secondsText(down) + ")");
    return {};
  }
  Error error = ready.error();
  error.message += " (unreachable for " + secondsText(down) + ", longer than the grace of " +
                   secondsText(grace) + ")";
  return std::unexpected(std::move(error));
}

}  // namespace hostport::cni
