#include "agent/cni_config/chainer.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "agent/log/event_log.h"

namespace hostport::agent::cni_config {
namespace {

using log::Component;
using log::Level;

int64_t seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration_cast<std::chrono::seconds>(duration).count();
}

/// A directory that never stops changing must not starve the passes.
constexpr int kMaxDebounceRounds = 10;

std::string paths(const std::vector<UnparseableFile>& files) {
  std::string text;
  for (const auto& file : files) text += (text.empty() ? "" : ",") + file.path.string();
  return text;
}

}  // namespace

Result<std::unique_ptr<Chainer>> Chainer::start(ChainerOptions options) {
  HOSTPORT_TRY(DirWatch watch, DirWatch::create());
  std::unique_ptr<Chainer> chainer(new Chainer(std::move(options), std::move(watch)));
  chainer->thread_ = std::thread([raw = chainer.get()] { raw->run(); });
  return chainer;
}

Chainer::Chainer(ChainerOptions options, DirWatch watch)
    : options_(std::move(options)), watch_(std::move(watch)), flap_(options_.flap) {}

Chainer::~Chainer() { stop(); }

void Chainer::stop() {
  if (!thread_.joinable()) return;
  watch_.wake();
  thread_.join();
}

void Chainer::ensureWatch() {
  if (watch_.watching() && !watch_.watchLost()) return;
  if (auto watching = watch_.watch(options_.paths.confDir); !watching) {
    if (!watchWarned_) {
      log::event(Component::kCni, Level::kWarn, "cni.watch_unavailable",
                 {{"dir", options_.paths.confDir.string()},
                  {"cause", watching.error().message},
                  {"fallback_seconds", seconds(options_.backstop)}});
    }
    watchWarned_ = true;
    return;
  }
  watchWarned_ = false;
}

void Chainer::run() {
  for (;;) {
    ensureWatch();
    const auto due = pass();
    // In this order: a reader that sees the fight also sees the pass that found it.
    passes_.fetch_add(1);
    flapping_ = flap_.flapping();
    auto wake = watch_.wait(due);
    if (!wake || *wake == DirWatch::Wake::kStopped) {
      if (!wake) {
        log::event(Component::kCni, Level::kError, "cni.watch_failed",
                   {{"cause", wake.error().message}});
      }
      return;
    }
    // Debounce: wait for the writer to finish (a cp -f is a truncate and several writes).
    for (int round = 0; *wake == DirWatch::Wake::kChanged && round < kMaxDebounceRounds; ++round) {
      wake = watch_.wait(Clock::now() + options_.debounce);
      if (!wake || *wake == DirWatch::Wake::kStopped) return;
    }
  }
}

Clock::time_point Chainer::pass() {
  const auto now = Clock::now();
  auto due = now + options_.backstop;
  if (flap_.tick(now) == FlapDetector::Change::kEnded) {
    removalCounted_ = true;
    log::event(Component::kCni, Level::kInfo, "cni.flapping_over",
               {{"quiet_seconds", seconds(options_.flap.quietPeriod)}});
    if (options_.onFlapping) options_.onFlapping(false);
  }
  if (const auto quietEnds = flap_.quietEnds()) due = std::min(due, *quietEnds);
  auto plan = planChain(options_.paths, options_.chain);
  if (!plan) {
    if (plan.error().message != lastFailure_) {
      log::event(Component::kCni, Level::kError, "cni.failed", {{"cause", plan.error().message}});
    }
    lastFailure_ = plan.error().message;
    return due;
  }
  lastFailure_.clear();
  if (plan->kind != ChainPlan::Kind::kUnparseable) tornLogged_ = false;
  if (plan->kind != ChainPlan::Kind::kNoConfig) noConfigLogged_ = false;
  switch (plan->kind) {
    case ChainPlan::Kind::kNoConfig:
      if (!noConfigLogged_) {
        log::event(Component::kCni, Level::kInfo, "cni.no_config",
                   {{"dir", options_.paths.confDir.string()}});
      }
      noConfigLogged_ = true;
      return due;
    case ChainPlan::Kind::kUnparseable:
      if (!tornLogged_) {
        log::event(Component::kCni, Level::kWarn, "cni.torn_read",
                   {{"files", paths(plan->unparseable)},
                    {"cause", plan->unparseable.front().cause},
                    {"retry_ms", static_cast<int64_t>(options_.debounce.count())}});
      }
      tornLogged_ = true;
      return std::min(due, now + options_.debounce);
    case ChainPlan::Kind::kUpToDate:
      if (!chainedThisRun_) {
        log::event(Component::kCni, Level::kInfo, "cni.chained",
                   {{"file", plan->target.string()}, {"written", false}});
      }
      chainedThisRun_ = true;
      return due;
    case ChainPlan::Kind::kWrite:
      return std::min(due, writePlan(*plan, now));
  }
  return due;
}

Clock::time_point Chainer::writePlan(const ChainPlan& plan, Clock::time_point now) {
  const auto backstop = now + options_.backstop;
  if (::access(options_.pluginBinary.c_str(), X_OK) != 0) {
    if (!pluginMissingLogged_) {
      log::event(Component::kCni, Level::kWarn, "cni.plugin_missing",
                 {{"binary", options_.pluginBinary.string()}, {"file", plan.target.string()}});
    }
    pluginMissingLogged_ = true;
    return backstop;
  }
  pluginMissingLogged_ = false;
  const bool removal = plan.inserted && chainedThisRun_;
  const bool countsAsRemoval = removal && !std::exchange(removalCounted_, false);
  if (countsAsRemoval && flap_.removalSeen(now) == FlapDetector::Change::kStarted) {
    log::event(Component::kCni, Level::kError, "cni.flapping",
               {{"file", plan.source.string()},
                {"removals", flap_.recentRemovals()},
                {"window_seconds", seconds(options_.flap.window)},
                {"resume_seconds", seconds(options_.flap.quietPeriod)},
                {"fix",
                 "another installer keeps taking hostport out of this file; with Cilium set "
                 "cni.exclusive=false (Helm) so it leaves chained plugins alone"}});
    if (options_.onFlapping) options_.onFlapping(true);
  }
  if (flap_.flapping()) return *flap_.quietEnds();
  const auto applied = applyChain(options_.paths, plan, options_.beforeSourceCheck);
  if (!applied) {
    if (applied.error().message != lastFailure_) {
      log::event(Component::kCni, Level::kError, "cni.write_failed",
                 {{"file", plan.target.string()}, {"cause", applied.error().message}});
    }
    lastFailure_ = applied.error().message;
    return now + options_.debounce;  // a full disk or a racing writer: soon, not in 30 s
  }
  if (*applied == Applied::kSourceChanged) {
    log::event(Component::kCni, Level::kInfo, "cni.source_changed",
               {{"file", plan.source.string()},
                {"retry_ms", static_cast<int64_t>(options_.debounce.count())}});
    if (removal) removalCounted_ = true;  // the next pass answers the same removal
    return now + options_.debounce;
  }
  writes_.fetch_add(1);
  const bool converted = plan.source != plan.target;
  const bool replaced = plan.record.replacedPortmap.has_value();
  if (removal) {
    log::event(Component::kCni, Level::kInfo, "cni.rechained",
               {{"file", plan.target.string()}, {"converted", converted}});
  } else if (!chainedThisRun_) {
    log::event(Component::kCni, Level::kInfo, "cni.chained",
               {{"file", plan.target.string()},
                {"written", true},
                {"converted_from", converted ? plan.source.string() : std::string("-")},
                {"replaced_portmap", replaced}});
  } else {
    log::event(Component::kCni, Level::kInfo, "cni.updated", {{"file", plan.target.string()}});
  }
  chainedThisRun_ = true;
  return backstop;
}

}  // namespace hostport::agent::cni_config
