#pragma once
// The soak's invariants (docs/soak.md), checked with the churn paused and the agent up:
// - no acknowledged lease is lost: every live pod's lease is in the agent with the ports ADD
//   acknowledged (checked at once, no grace: it must survive every kill);
// - no port is in two leases (from the agent's list), and every element of map `ports` belongs
//   to the lease that holds its port;
// - no owner-tagged element lacks a lease, and no lease is unknown to the runtime;
// - every live lease carries traffic: one real TCP or UDP exchange per live pod, from the node to
//   nodeIP:hostPort, answered by that pod's server for that container port;
// - deleted pods' leases are gone within the repair grace, vanished pods' within the vanished
//   grace;
// - the agent's RSS and open fds stay under their bounds.
// What a repair may still be fixing (a missing forward after a flush, a stray, a release note
// not yet consumed, traffic) is polled until the repair grace has passed; only then is it a
// violation.

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/soak/soak_churn.h"
#include "tests/soak/soak_env.h"
#include "tests/soak/soak_stats.h"

namespace hostport::soak {

inline constexpr int64_t kMaxAgentFds = 256;
inline constexpr int64_t kMaxAgentRssKb = 128 * 1024;

class Checker {
 public:
  Checker(Env& env, Stats& stats, Churn& churn, uint64_t seed)
      : env_(env), stats_(stats), churn_(churn), rng_(seed) {}

  /// One check of every invariant; the churn must be paused and the agent up.
  void check(const std::string& why);
  /// After the teardown: no lease and no owner-tagged element left.
  void checkEmpty();
  /// Reads the agent's repair counters (this run's) and adds them to the totals; the next run
  /// starts from zero.
  void foldMetrics();

 private:
  struct Problem {
    std::string kind;
    std::string detail;
    bool immediate = false;  // a violation now; otherwise it may still be repaired
    std::string podKey;      // the pod it is about, if any
  };
  struct Evaluation {
    std::vector<Problem> problems;
    std::vector<std::string> drop;     // deleted pods whose lease is gone
    std::vector<std::string> release;  // vanished pods whose lease is gone
    int64_t leasesCompared = 0;
    int64_t elementsCompared = 0;
    int64_t trafficSamples = 0;
  };
  Evaluation evaluate();
  void sampleTraffic(const PodView& pod, Evaluation& out);
  void sampleProcess();
  void scrapeMetrics();

  Env& env_;
  Stats& stats_;
  Churn& churn_;
  std::mt19937_64 rng_;
  std::map<std::string, int64_t> metrics_;  // this agent run's, as last read
  std::set<std::string> reportedUnknown_;
};

}  // namespace hostport::soak
