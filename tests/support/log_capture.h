#pragma once
// Points the agent's event log (agent/log/event_log.h) at memory for one test, and back at stderr
// afterwards. The lines are kept behind a mutex of their own, so a test may read them while the
// store's committer thread logs. Header-only: its users link hostport_agent_log themselves.

#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/log/event_log.h"

namespace hostport::agent::log::testing {

class LogCapture {
 public:
  explicit LogCapture(Level level = Level::kDebug, Format format = Format::kText)
      : lines_(std::make_shared<Lines>()) {
    configure({.level = level, .format = format, .sink = [lines = lines_](std::string_view line) {
                 std::lock_guard guard(lines->mu);
                 lines->text += line;
               }});
  }
  ~LogCapture() { configure({}); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// Everything logged so far.
  std::string text() const {
    std::lock_guard guard(lines_->mu);
    return lines_->text;
  }
  /// The lines logged so far, without their newlines.
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(text());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  /// The text lines of event `name`, from the name on ("name key=value ..."). A text line is
  /// "<time> <level> <component>: <event> <fields>", and only the time holds ':' before that.
  std::vector<std::string> events(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& line : lines()) {
      const auto colon = line.find(": ");
      if (colon == std::string::npos) continue;
      const std::string rest = line.substr(colon + 2);
      if (rest == name || rest.starts_with(std::string(name) + " ")) out.push_back(rest);
    }
    return out;
  }
  /// events(name) once it holds `count` lines, or after `timeout`: for an event logged after
  /// the callback the test waited for has answered, on another thread.
  std::vector<std::string> eventsOnce(
      std::string_view name, std::size_t count,
      std::chrono::milliseconds timeout = std::chrono::seconds(30)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto found = events(name);
    while (found.size() < count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      found = events(name);
    }
    return found;
  }

 private:
  struct Lines {
    std::mutex mu;
    std::string text;
  };
  std::shared_ptr<Lines> lines_;
};

}  // namespace hostport::agent::log::testing
