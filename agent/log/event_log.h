#pragma once
// The agent's logs: one logger per component, and every line one event with a stable name and
// key=value fields, so an operator can grep for `alloc.conflict` or `pool=media` and a log
// pipeline can parse the lines. docs/operations.md ("Logs") lists the events and their keys.
//
// Design note:
// - Text lines (the default) look like logfmt after a timestamp, the level and the component:
//   `2026-11-25T10:00:00.123+00:00 info alloc: alloc.granted key=c1/eth0 pod=ns/web pool=default`.
//   A value is written bare when it is printable ASCII without spaces, quotes, '=' or '\';
//   otherwise it is quoted. Text from outside the agent (pod names, container IDs, a process's
//   comm, request paths) is quoted by common/quote.h's quoteText(), which also bounds it, so a
//   pod cannot forge a line; the agent's own text (error causes, paths from its config) is quoted
//   whole, by the same function.
// - JSON lines (--log-format json) are one object per line: "time", "level", "component",
//   "event", then the fields; numbers and booleans as JSON numbers and booleans. Outside text is
//   bounded as on a text line, its "..." inside the string.
// - Only events are logged: there is no free-text call, so a JSON log always parses.
// - spdlog stays inside event_log.cc. agent/core does not log at all: the service logs what the
//   allocator decided.

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::agent::log {

enum class Component : uint8_t {
  kAgent,
  kAlloc,
  kStore,
  kSocket,
  kTable,
  kServer,
  kCni,
  kKube,
  kAdmission,  // hostport-admission's own events (the webhook, its certificates)
  kCsi,        // the hostport.io CSI driver: registration, volumes (agent/csi)
};
inline constexpr std::size_t kComponentCount = 10;
/// "agent", "alloc", "store", "socket", "table", "server", "cni", "kube", "admission", "csi": the
/// logger's name on each line.
std::string_view componentName(Component component);

enum class Level : uint8_t { kTrace, kDebug, kInfo, kWarn, kError };
/// "trace", "debug", "info", "warn" or "error"; kInvalidArgument quoting the text otherwise.
Result<Level> parseLevel(std::string_view text);

enum class Format : uint8_t { kText, kJson };
/// "text" or "json"; kInvalidArgument quoting the text otherwise.
Result<Format> parseFormat(std::string_view text);

struct Options {
  Level level = Level::kInfo;
  Format format = Format::kText;
  /// Receives each line (with its newline); null: stderr. Tests read the lines back this way.
  std::function<void(std::string_view line)> sink;
};

/// Replaces every component's logger. Call it before other threads log: at start, or in a test.
/// Until it is called, the loggers write text at info to stderr.
void configure(Options options);

/// Sets one component's level (configure() sets them all), from any thread.
void setLevel(Component component, Level level);

namespace detail {
/// Each component's level, as configure() or setLevel() left it: the one thing enabled() reads.
extern std::array<std::atomic<Level>, kComponentCount> componentLevels;
}  // namespace detail

/// True when `component` logs at `level`: an event whose fields cost something to build is
/// skipped otherwise. One relaxed atomic load, so a disabled debug event costs next to nothing.
inline bool enabled(Component component, Level level) {
  return level >= detail::componentLevels[static_cast<std::size_t>(component)].load(
                      std::memory_order_relaxed);
}

/// One key=value of an event. The key is a literal of ours; see untrusted() for outside text.
struct Field {
  enum class Kind : uint8_t { kText, kUntrustedText, kNumber, kBool };

  Field(std::string_view key, std::string_view text);
  Field(std::string_view key, const char* text) : Field(key, std::string_view(text)) {}
  Field(std::string_view key, const std::string& text) : Field(key, std::string_view(text)) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) Field(std::string_view key, T number)
      : key(key), value(std::to_string(number)), kind(Kind::kNumber) {}
  Field(std::string_view key, bool flag);

  std::string_view key;
  std::string value;
  Kind kind;
};

/// A field whose text comes from outside the agent: quoted through quoteText() when it needs
/// quoting.
Field untrusted(std::string_view key, std::string_view text);

/// Logs event `name` (`<component>.<what>`) with `fields`, in the configured format.
void event(Component component, Level level, std::string_view name, std::span<const Field> fields);
inline void event(Component component, Level level, std::string_view name,
                  std::initializer_list<Field> fields = {}) {
  event(component, level, name, std::span(fields.begin(), fields.size()));
}

/// What follows the time, level and component on a line: `name key=value...` in text, the
/// `"event":...` members in JSON.
std::string formatEvent(Format format, std::string_view name, std::span<const Field> fields);

}  // namespace hostport::agent::log
