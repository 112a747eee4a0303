#include "agent/config/config_watch.h"

#include <fstream>
#include <sstream>

#include "agent/log/event_log.h"

namespace hostport::agent::config {
namespace {

using Clock = std::chrono::steady_clock;

/// The file's text; empty when it cannot be read (between a ConfigMap's unlink and rename, or
/// gone): the reload that follows then reports the problem itself.
std::string readText(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// How long a wait without a change lasts: the watch only has to notice a lost watch now and
/// then, since every change wakes it at once.
constexpr std::chrono::seconds kIdleWake{30};
/// Changes that keep coming (a writer in a loop) delay a reload by at most this many debounces.
constexpr int kMaxDebounceRounds = 20;

}  // namespace

Result<std::unique_ptr<ConfigWatch>> ConfigWatch::start(std::filesystem::path file,
                                                        std::function<void()> changed,
                                                        std::chrono::milliseconds debounce) {
  HOSTPORT_TRY(DirWatch watch, DirWatch::create());
  const auto dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  HOSTPORT_TRY_VOID(watch.watch(dir));
  std::unique_ptr<ConfigWatch> self(
      new ConfigWatch(std::move(file), std::move(changed), debounce, std::move(watch)));
  self->lastText_ = readText(self->file_);
  try {
    self->thread_ = std::thread([raw = self.get()] { raw->run(); });
  } catch (const std::system_error& error) {
    return fail(ErrorCode::kInternal,
                std::string("cannot start the config watch thread: ") + error.what());
  }
  return self;
}

ConfigWatch::ConfigWatch(std::filesystem::path file, std::function<void()> changed,
                         std::chrono::milliseconds debounce, DirWatch watch)
    : file_(std::move(file)),
      changed_(std::move(changed)),
      debounce_(debounce),
      watch_(std::move(watch)) {}

ConfigWatch::~ConfigWatch() {
  watch_.wake();
  if (thread_.joinable()) thread_.join();
}

void ConfigWatch::run() {
  const auto dir = file_.has_parent_path() ? file_.parent_path() : std::filesystem::path(".");
  for (;;) {
    if (watch_.watchLost()) (void)watch_.watch(dir);  // the dir was replaced: follow the new one
    auto wake = watch_.wait(Clock::now() + kIdleWake);
    if (!wake || *wake == DirWatch::Wake::kStopped) {
      if (!wake) {
        log::event(log::Component::kAgent, log::Level::kError, "agent.config_watch_failed",
                   {{"cause", wake.error().message}, {"fallback", "SIGHUP"}});
      }
      return;
    }
    if (*wake != DirWatch::Wake::kChanged) continue;
    for (int round = 0; *wake == DirWatch::Wake::kChanged && round < kMaxDebounceRounds; ++round) {
      wake = watch_.wait(Clock::now() + debounce_);
      if (!wake || *wake == DirWatch::Wake::kStopped) return;
    }
    std::string text = readText(file_);
    if (text == lastText_) continue;
    lastText_ = std::move(text);
    changed_();
  }
}

}  // namespace hostport::agent::config
