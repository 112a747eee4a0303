#include "agent/log/event_log.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "common/quote.h"

namespace hostport::agent::log {
namespace {

constexpr std::array<Component, kComponentCount> kComponents = {
    Component::kAgent,     Component::kAlloc,  Component::kStore, Component::kSocket,
    Component::kTable,     Component::kServer, Component::kCni,   Component::kKube,
    Component::kAdmission, Component::kCsi};
constexpr std::array<std::string_view, 5> kLevelNames = {"trace", "debug", "info", "warn", "error"};

spdlog::level::level_enum spdlogLevel(Level level) {
  switch (level) {
    case Level::kTrace:
      return spdlog::level::trace;
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

/// Our level names ("warn", not spdlog's "warning"), so a line says what --log-level takes.
class LevelFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string_view name = "error";
    switch (msg.level) {
      case spdlog::level::trace:
        name = "trace";
        break;
      case spdlog::level::debug:
        name = "debug";
        break;
      case spdlog::level::info:
        name = "info";
        break;
      case spdlog::level::warn:
        name = "warn";
        break;
      default:
        break;
    }
    dest.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<LevelFlag>();
  }
};

/// Hands each formatted line to a function (Options::sink).
class FunctionSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit FunctionSink(std::function<void(std::string_view)> write) : write_(std::move(write)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    write_(std::string_view(line.data(), line.size()));
  }
  void flush_() override {}

 private:
  std::function<void(std::string_view)> write_;
};

/// Every component's logger and the format they share; replaced whole by configure().
struct Loggers {
  Format format = Format::kText;
  std::array<std::shared_ptr<spdlog::logger>, kComponents.size()> byComponent;
};

std::shared_ptr<const Loggers> makeLoggers(Options options) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  if (options.sink) {
    sink = std::make_shared<FunctionSink>(std::move(options.sink));
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  // The event's own text (formatEvent) is the whole %v; the pattern adds time, level, component.
  const std::string pattern =
      options.format == Format::kJson
          ? R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%*","component":"%n",%v})"
          : "%Y-%m-%dT%H:%M:%S.%e%z %* %n: %v";
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<LevelFlag>('*').set_pattern(pattern);
  sink->set_formatter(std::move(formatter));

  auto loggers = std::make_shared<Loggers>();
  loggers->format = options.format;
  for (const Component component : kComponents) {
    auto logger = std::make_shared<spdlog::logger>(std::string(componentName(component)), sink);
    // Levels are ours (detail::componentLevels, checked before a line is built): spdlog takes all.
    logger->set_level(spdlog::level::trace);
    // Each line is flushed as it is written: the agent may exit (or be killed) right after.
    logger->flush_on(spdlog::level::trace);
    loggers->byComponent[static_cast<std::size_t>(component)] = std::move(logger);
  }
  return loggers;
}

std::atomic<std::shared_ptr<const Loggers>>& current() {
  static std::atomic<std::shared_ptr<const Loggers>> loggers{makeLoggers({})};
  return loggers;
}

/// Printable ASCII but for space, '"', '=' and '\': what a logfmt reader takes bare.
bool isBare(std::string_view text) {
  return !text.empty() && std::ranges::all_of(text, [](char c) {
    return c > ' ' && c < 0x7f && c != '"' && c != '=' && c != '\\';
  });
}

/// The agent's own text (error causes, paths from its config) as a JSON string, whole.
std::string wholeString(std::string_view text) { return quoteText(text, std::string_view::npos); }

/// Text from outside the agent as a JSON string, bounded by quoteText() as on a text line, with
/// the "..." that marks a cut moved inside the quotes so the line still parses. Plain text (what a
/// text line writes bare) is whole, as there.
std::string untrustedString(std::string_view text) {
  if (isBare(text)) return wholeString(text);
  std::string quoted = quoteText(text);
  if (quoted.back() != '"') {  // cut: `"..."...`
    quoted.resize(quoted.size() - 3);
    quoted.insert(quoted.size() - 1, "...");
  }
  return quoted;
}

void appendText(const Field& field, std::string& out) {
  out += ' ';
  out += field.key;
  out += '=';
  if (field.kind == Field::Kind::kNumber || field.kind == Field::Kind::kBool ||
      isBare(field.value)) {
    out += field.value;
  } else if (field.kind == Field::Kind::kUntrustedText) {
    out += quoteText(field.value);
  } else {
    out += wholeString(field.value);
  }
}

void appendJson(const Field& field, std::string& out) {
  out += ',';
  out += wholeString(field.key);
  out += ':';
  switch (field.kind) {
    case Field::Kind::kNumber:
    case Field::Kind::kBool:
      out += field.value;
      break;
    case Field::Kind::kUntrustedText:
      out += untrustedString(field.value);
      break;
    case Field::Kind::kText:
      out += wholeString(field.value);
      break;
  }
}

}  // namespace

std::string_view componentName(Component component) {
  switch (component) {
    case Component::kAgent:
      return "agent";
    case Component::kAlloc:
      return "alloc";
    case Component::kStore:
      return "store";
    case Component::kSocket:
      return "socket";
    case Component::kTable:
      return "table";
    case Component::kServer:
      return "server";
    case Component::kCni:
      return "cni";
    case Component::kKube:
      return "kube";
    case Component::kAdmission:
      return "admission";
    case Component::kCsi:
      return "csi";
  }
  return "agent";
}

Result<Level> parseLevel(std::string_view text) {
  for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
    if (text == kLevelNames[i]) return static_cast<Level>(i);
  }
  return fail(ErrorCode::kInvalidArgument,
              quoteText(text) + " is not trace, debug, info, warn or error");
}

Result<Format> parseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  return fail(ErrorCode::kInvalidArgument, quoteText(text) + " is not text or json");
}

namespace detail {
// Every component at info until configure(): one initializer each (a missing one would be 0,
// trace).
constinit std::array<std::atomic<Level>, kComponentCount> componentLevels = {
    Level::kInfo, Level::kInfo, Level::kInfo, Level::kInfo, Level::kInfo,
    Level::kInfo, Level::kInfo, Level::kInfo, Level::kInfo, Level::kInfo};
static_assert(kComponentCount == 10, "one initializer per component above");
}  // namespace detail

void configure(Options options) {
  const Level level = options.level;
  current().store(makeLoggers(std::move(options)));
  for (const Component component : kComponents) setLevel(component, level);
}

void setLevel(Component component, Level level) {
  detail::componentLevels[static_cast<std::size_t>(component)].store(level,
                                                                     std::memory_order_relaxed);
}

Field::Field(std::string_view key, std::string_view text)
    : key(key), value(text), kind(Kind::kText) {}

Field::Field(std::string_view key, bool flag)
    : key(key), value(flag ? "true" : "false"), kind(Kind::kBool) {}

Field untrusted(std::string_view key, std::string_view text) {
  Field field(key, text);
  field.kind = Field::Kind::kUntrustedText;
  return field;
}

void event(Component component, Level level, std::string_view name, std::span<const Field> fields) {
  if (!enabled(component, level)) return;
  const auto loggers = current().load();
  const auto& logger = loggers->byComponent[static_cast<std::size_t>(component)];
  const std::string line = formatEvent(loggers->format, name, fields);
  logger->log(spdlogLevel(level), spdlog::string_view_t(line.data(), line.size()));
}

std::string formatEvent(Format format, std::string_view name, std::span<const Field> fields) {
  std::string out;
  if (format == Format::kJson) {
    out = "\"event\":" + wholeString(name);
    for (const Field& field : fields) appendJson(field, out);
  } else {
    out = name;
    for (const Field& field : fields) appendText(field, out);
  }
  return out;
}

}  // namespace hostport::agent::log
