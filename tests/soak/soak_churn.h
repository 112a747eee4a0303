#pragma once
// The soak's pod churn: worker threads that create pods and run the chain's ADD, DEL or abandon
// them (netns removed without DEL), in parallel, as a busy node's runtime does. Each CNI verb
// runs inside the Gate, which the conductor closes to check the invariants on a quiet node.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tests/soak/soak_env.h"
#include "tests/soak/soak_model.h"
#include "tests/soak/soak_stats.h"

namespace hostport::soak {

/// Workers enter for one operation; the conductor pauses it and waits until none is inside.
class Gate {
 public:
  void enter() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !paused_; });
    ++inside_;
  }
  void leave() {
    std::lock_guard lock(mutex_);
    --inside_;
    changed_.notify_all();
  }
  void pause() {
    std::unique_lock lock(mutex_);
    paused_ = true;
    changed_.wait(lock, [&] { return inside_ == 0; });
  }
  void resume() {
    std::lock_guard lock(mutex_);
    paused_ = false;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;
  int inside_ = 0;
};

/// What a check reads of a pod (copied under the model's lock).
struct PodView {
  std::string key;
  std::string label;
  std::string ipv4;  // the pod's address, from bridge's result
  PodState state;
  std::vector<PortGrant> acked;
  Clock::time_point since;
};

class Churn {
 public:
  Churn(Env& env, Stats& stats, uint64_t seed, int maxPods)
      : env_(env), stats_(stats), seed_(seed), maxPods_(maxPods), staticUsed_(kStaticCount) {}
  Churn(const Churn&) = delete;
  Churn& operator=(const Churn&) = delete;
  ~Churn() { stop(); }

  void start(int workers);
  /// Stops and joins the workers (each finishes its operation).
  void stop();
  Gate& gate() { return gate_; }

  std::size_t podCount() const;
  /// " live=12 deleted=3 ...": the pods by state, for progress lines.
  std::string census() const;
  std::vector<PodView> pods() const;
  /// A check saw no lease for a deleted pod: it leaves the model, its static port is free.
  void drop(const std::string& key);
  /// A check saw no lease for a vanished pod: its late DEL (IPAM) may run.
  void markReleased(const std::string& key);
  /// After a violation about the pod: nothing is known of its lease any more; DEL it.
  void forget(const std::string& key);

  /// With the workers stopped: DEL half of the live pods, abandon the other half's netns, DEL
  /// the failed ones.
  void teardown();
  /// With the workers stopped: the late DELs of released vanished pods, and DELs to retry.
  void cleanupReleased();

 private:
  enum class Action { kIdle, kCreate, kDelete, kVanish, kRetryDelete, kLateDelete };
  struct Spec;

  void worker(int index);
  std::pair<Action, std::shared_ptr<SoakPod>> pick(std::mt19937_64& rng);
  Spec makeSpec(std::mt19937_64& rng);
  void createAndAdd(std::mt19937_64& rng);
  void del(const std::shared_ptr<SoakPod>& pod, bool withNetns);
  void vanish(const std::shared_ptr<SoakPod>& pod);
  /// Counts a failed verb as expected (with the disruption that explains it) or as a violation.
  void failed(const std::string& verb, const AgentState::Snapshot& before, const std::string& label,
              const std::string& what);

  Env& env_;
  Stats& stats_;
  uint64_t seed_;
  int maxPods_;
  Gate gate_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;

  mutable std::mutex mutex_;  // the model below
  std::map<std::string, std::shared_ptr<SoakPod>> pods_;
  int creating_ = 0;
  uint64_t nextLabel_ = 0;
  std::vector<bool> staticUsed_;
  std::mutex nodeMutex_;  // CniNode::createPod
};

}  // namespace hostport::soak
