#pragma once
// Keeps hostport chained into the node's CNI configuration, on a thread of its own: a pass at
// start, then one after each burst of changes in the conf dir (inotify, debounced) and every
// `backstop` in case an event was missed. Each pass is planChain() + applyChain(), logged as one
// `cni.*` event per thing that happened (docs/operations.md, "Logs").
//
// Design note:
// - A config sorted first that does not parse is a primary's write in progress: retried after the
//   debounce, never written over (cni.torn_read, once per episode).
// - Our entry missing from a file we had chained is a removal (a primary rewrote its file):
//   re-inserted at once (cni.rechained), unless the FlapDetector sees a fight; then no writes,
//   onFlapping(true) (the agent's /readyz fails) and one cni.flapping naming the fix, until the
//   quiet period is over.
// - A primary's rewrite that lands while we write (after the plan, before our rename) is never
//   written over: applyChain() leaves it, and a pass after the debounce plans from it
//   (cni.source_changed). The removal that pass answers is the one already counted.
// - The plugin binary must be in cniBinDir first: a chain naming a plugin the runtime cannot find
//   fails every pod's ADD.
// - Stopping never unchains (SIGTERM must not take networking away from pods; uninstall is
//   `hostportctl uninstall-cni`).

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "agent/cni_config/chain_files.h"
#include "agent/cni_config/flap_detector.h"
#include "common/dir_watch.h"

namespace hostport::agent::cni_config {

struct ChainerOptions {
  ChainPaths paths;
  ChainOptions chain;
  std::filesystem::path pluginBinary;  // <cniBinDir>/hostport
  std::chrono::milliseconds debounce{500};
  std::chrono::milliseconds backstop{30'000};
  FlapPolicy flap;
  /// Called on the chainer's thread when a fight starts (true) and ends (false).
  std::function<void(bool flapping)> onFlapping;
  /// Tests only: applyChain()'s beforeSourceCheck, on the chainer's thread.
  std::function<void()> beforeSourceCheck;
};

class Chainer {
 public:
  /// Starts the thread; its first pass runs at once.
  static Result<std::unique_ptr<Chainer>> start(ChainerOptions options);
  ~Chainer();
  Chainer(const Chainer&) = delete;
  Chainer& operator=(const Chainer&) = delete;

  /// Stops and joins the thread; leaves the configuration as it is.
  void stop();

  /// True while a fight stops the writes; set after the pass that found it is counted.
  bool flapping() const { return flapping_.load(); }
  /// Config writes made so far (tests wait on it). Counted once durable: the file shows a write
  /// a little earlier (at the rename, before the dir's fsync).
  uint64_t writes() const { return writes_.load(); }
  /// Passes completed so far (tests wait on it).
  uint64_t passes() const { return passes_.load(); }

 private:
  Chainer(ChainerOptions options, DirWatch watch);
  void run();
  /// One look at the conf dir; returns when the next pass is due at the latest.
  Clock::time_point pass();
  Clock::time_point writePlan(const ChainPlan& plan, Clock::time_point now);
  void ensureWatch();

  ChainerOptions options_;
  DirWatch watch_;
  FlapDetector flap_;
  bool chainedThisRun_ = false;
  // The removal the next write answers is counted already: in the fight that just ended, or by
  // a pass whose write found the source changed.
  bool removalCounted_ = false;
  bool watchWarned_ = false;
  // One event per episode, not per pass.
  bool tornLogged_ = false;
  bool noConfigLogged_ = false;
  bool pluginMissingLogged_ = false;
  std::string lastFailure_;
  std::atomic<bool> flapping_{false};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> passes_{0};
  std::thread thread_;
};

}  // namespace hostport::agent::cni_config
