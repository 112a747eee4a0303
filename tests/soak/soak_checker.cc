#include "tests/soak/soak_checker.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agent/api/json_codec.h"
#include "common/protocol.h"
#include "tests/support/nft_state.h"
#include "tests/support/traffic.h"

namespace hostport::soak {
namespace {

constexpr auto kRetryEvery = 300ms;
constexpr auto kSampleTimeout = 1000ms;

/// "tcp/30001": a kernel protocol and one host port.
std::string portName(std::string_view protocol, uint32_t port) {
  return std::string(protocol) + "/" + std::to_string(port);
}

/// Every kernel protocol/port a lease's grants occupy (a range is each of its ports).
std::vector<std::string> leasePorts(const std::vector<PortGrant>& grants) {
  std::vector<std::string> ports;
  for (const auto& grant : grants) {
    for (const Protocol protocol : kernelProtocols(grant.protocol)) {
      for (uint32_t offset = 0; offset < grant.count; ++offset) {
        ports.push_back(portName(protocolName(protocol), grant.hostPort + offset));
      }
    }
  }
  return ports;
}

/// An element of map `ports` ("tcp . 30001") as "tcp/30001"; empty for another key.
std::string elementPort(const std::string& key) {
  const auto dot = key.find(" . ");
  if (dot == std::string::npos) return {};
  return key.substr(0, dot) + "/" + key.substr(dot + 3);
}

std::string describeGrants(const std::vector<PortGrant>& grants) {
  std::string text;
  for (const auto& grant : grants) text += (text.empty() ? "" : ", ") + grant.str();
  return "[" + text + "]";
}

}  // namespace

Checker::Evaluation Checker::evaluate() {
  Evaluation out;
  auto problem = [&](std::string kind, std::string detail, bool immediate, std::string key = {}) {
    out.problems.push_back({std::move(kind), std::move(detail), immediate, std::move(key)});
  };
  const auto leases = env_.agent->client(5s).list("", "");
  if (!leases) {
    problem("agent_unreachable", leases.error().message, false);
    return out;
  }
  stats_.max("agent.max_leases", static_cast<int64_t>(leases->size()));
  std::map<std::string, const Lease*> byKey;
  std::map<std::string, std::string> portOwner;  // "tcp/30001" -> lease key
  for (const auto& lease : *leases) {
    const std::string key = lease.key.str();
    byKey[key] = &lease;
    for (const auto& port : leasePorts(lease.ports)) {
      const auto [at, fresh] = portOwner.try_emplace(port, key);
      if (!fresh) {
        problem("port_in_two_leases", port + " is leased to " + at->second + " and " + key, true);
      }
    }
  }

  const auto now = Clock::now();
  const auto readyAt = env_.agentState.readyAt();
  const auto pods = churn_.pods();
  std::set<std::string> known;
  for (const auto& pod : pods) {
    known.insert(pod.key);
    const auto found = byKey.find(pod.key);
    const bool held = found != byKey.end();
    switch (pod.state) {
      case PodState::kLive:
        ++out.leasesCompared;
        if (!held) {
          problem("lost_lease",
                  pod.label + " (" + pod.key + "), acknowledged with " + describeGrants(pod.acked) +
                      ", is not in the agent",
                  true, pod.key);
        } else if (found->second->ports != pod.acked) {
          problem("ports_changed",
                  pod.label + " was acknowledged " + describeGrants(pod.acked) +
                      ", the agent holds " + describeGrants(found->second->ports),
                  true, pod.key);
        } else {
          sampleTraffic(pod, out);
        }
        break;
      case PodState::kDeleted:
        if (held) {
          problem("deleted_lease_remains", pod.label + " (" + pod.key + ") was DELeted", false);
        } else {
          out.drop.push_back(pod.key);
        }
        break;
      case PodState::kVanished:
        if (!held) {
          out.release.push_back(pod.key);
        } else if (now > std::max(pod.since, readyAt) + kVanishGrace) {
          problem("vanished_not_released",
                  pod.label + " (" + pod.key + ")'s netns is gone, its lease stays", true, pod.key);
        }
        break;
      case PodState::kAddFailed:
      case PodState::kDeleting:
        break;  // either way, until its DEL succeeds
    }
  }
  for (const auto& [key, lease] : byKey) {
    if (!known.contains(key) && !reportedUnknown_.contains(key)) {
      problem("unknown_lease", key + " (" + lease->pod.name + ") is no pod the runtime knows", true,
              key);
      reportedUnknown_.insert(key);
    }
  }

  auto entries = test::hostportEntries(env_.node->node());
  if (!entries) {
    problem("nft_unreadable", entries.error().message, false);
    return out;
  }
  // What each live pod's elements must forward to: "tcp/30001" -> "10.88.0.5 . 8080".
  std::map<std::string, std::string> wantedData;
  for (const auto& pod : pods) {
    if (pod.state != PodState::kLive) continue;
    for (const auto& grant : pod.acked) {
      for (const Protocol protocol : kernelProtocols(grant.protocol)) {
        for (uint32_t offset = 0; offset < grant.count; ++offset) {
          wantedData[portName(protocolName(protocol), grant.hostPort + offset)] =
              pod.ipv4 + " . " + std::to_string(grant.containerPort + offset);
        }
      }
    }
  }
  std::map<std::string, std::string> elementOwner;  // "tcp/30001" -> owner tag
  for (const auto& entry : *entries) {
    if (entry.comment.empty()) continue;
    ++out.elementsCompared;
    const auto lease = byKey.find(entry.comment);
    if (lease == byKey.end()) {
      std::ostringstream text;
      text << entry;
      problem("stray_element", text.str(), false);
      continue;
    }
    if (entry.family != "ip" || entry.set != "ports") continue;
    const std::string port = elementPort(entry.key);
    elementOwner[port] = entry.comment;
    const auto holder = portOwner.find(port);
    if (holder == portOwner.end() || holder->second != entry.comment) {
      problem("element_mismatch",
              "element " + port + " of " + entry.comment + ", leased to " +
                  (holder == portOwner.end() ? std::string("nobody") : holder->second),
              false);
    } else if (const auto data = wantedData.find(port);
               data != wantedData.end() && data->second != entry.value) {
      problem("element_mismatch",
              "element " + port + " of " + entry.comment + " forwards to " + entry.value +
                  ", not " + data->second,
              false);
    }
  }
  for (const auto& pod : pods) {
    if (pod.state != PodState::kLive || !byKey.contains(pod.key)) continue;
    for (const auto& port : leasePorts(pod.acked)) {
      const auto element = elementOwner.find(port);
      if (element == elementOwner.end() || element->second != pod.key) {
        problem("missing_forward", pod.label + " " + port + " has no element", false);
      }
    }
  }
  return out;
}

void Checker::sampleTraffic(const PodView& pod, Evaluation& out) {
  if (pod.acked.empty()) return;
  const auto& grant =
      pod.acked[std::uniform_int_distribution<std::size_t>(0, pod.acked.size() - 1)(rng_)];
  const auto offset =
      static_cast<uint16_t>(std::uniform_int_distribution<int>(0, grant.count - 1)(rng_));
  const auto hostPort = static_cast<uint16_t>(grant.hostPort + offset);
  const auto containerPort = static_cast<uint16_t>(grant.containerPort + offset);
  bool udp = grant.protocol == PortProtocol::kUdp;
  if (grant.protocol == PortProtocol::kTcpUdp) udp = std::bernoulli_distribution(0.5)(rng_);
  const auto transport = udp ? test::Transport::kUdp : test::Transport::kTcp;
  const test::ClientOptions options{.timeout = kSampleTimeout};
  const auto reply = udp ? test::udpRequest(env_.node->node(), test::kNodeIpV4, hostPort, options)
                         : test::tcpRequest(env_.node->node(), test::kNodeIpV4, hostPort, options);
  ++out.trafficSamples;
  const std::string want = serverId(pod.label, containerPort, transport);
  const std::string where = std::string(udp ? "udp " : "tcp ") + test::kNodeIpV4 + ":" +
                            std::to_string(hostPort) + " (" + pod.label + ")";
  if (!reply) {
    // Is the pod itself reachable (the forward, or the path to the pod)? Only worth the time
    // when the check is about to give up, but cheap enough to ask every time it fails.
    const auto direct = udp ? test::udpRequest(env_.node->node(), pod.ipv4, containerPort, options)
                            : test::tcpRequest(env_.node->node(), pod.ipv4, containerPort, options);
    const auto neighbour = env_.node->node().ip({"neigh", "show", pod.ipv4});
    out.problems.push_back(
        {"no_traffic",
         where + ": " + reply.error().message + "; straight to " + pod.ipv4 + ":" +
             std::to_string(containerPort) + ": " +
             (direct ? "answered by " + direct->id : direct.error().message) +
             "; neighbour: " + (neighbour ? *neighbour : neighbour.error().message),
         false,
         {}});
  } else if (reply->id != want) {
    out.problems.push_back(
        {"wrong_pod", where + " answered by " + reply->id + ", not " + want, false, {}});
  }
}

void Checker::check(const std::string& why) {
  const auto start = Clock::now();
  const auto deadline = start + kRepairGrace;
  Evaluation last;
  int rounds = 0;
  bool failed = false;
  while (true) {
    last = evaluate();
    ++rounds;
    if (rounds == 1) {
      // What a repair was still fixing when the check began (kinds, once per check).
      std::set<std::string> kinds;
      for (const auto& problem : last.problems) kinds.insert(problem.kind);
      for (const auto& kind : kinds) stats_.add("checks.waited_for." + kind);
    }
    const bool immediate = std::ranges::any_of(last.problems, &Problem::immediate);
    if (last.problems.empty()) break;
    if (immediate || Clock::now() >= deadline) {
      for (const auto& problem : last.problems) {
        if (!immediate || problem.immediate) {
          stats_.violation(problem.kind, "[" + why + "] " + problem.detail);
          if (!problem.podKey.empty()) churn_.forget(problem.podKey);
        }
      }
      failed = true;
      break;
    }
    std::this_thread::sleep_for(kRetryEvery);
  }
  for (const auto& key : last.drop) churn_.drop(key);
  for (const auto& key : last.release) churn_.markReleased(key);
  stats_.add(failed ? "checks.failed" : "checks.passed");
  stats_.add("checks.rounds", rounds);
  if (rounds > 1) {
    stats_.max("checks.max_wait_ms",
               std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  }
  stats_.add("checks.leases_compared", last.leasesCompared);
  stats_.add("checks.elements_compared", last.elementsCompared);
  stats_.add("checks.traffic_samples", last.trafficSamples);
  sampleProcess();
  scrapeMetrics();
}

void Checker::checkEmpty() {
  const auto leases = env_.agent->client(5s).list("", "");
  if (!leases) {
    stats_.violation("agent_unreachable", "at the end: " + leases.error().message);
  } else {
    for (const auto& lease : *leases) {
      stats_.violation("leftover_lease", lease.key.str() + " " + describeGrants(lease.ports));
    }
  }
  const auto entries = test::hostportEntries(env_.node->node());
  if (!entries) {
    stats_.violation("nft_unreadable", "at the end: " + entries.error().message);
    return;
  }
  for (const auto& entry : *entries) {
    if (entry.comment.empty()) continue;
    std::ostringstream text;
    text << entry;
    stats_.violation("leftover_element", text.str());
  }
  for (const auto& pod : churn_.pods()) {
    stats_.violation("leftover_pod", pod.label + " still " + stateName(pod.state));
  }
  stats_.add("checks.final_empty", 1);
}

void Checker::sampleProcess() {
  const pid_t pid = env_.agent->pid();
  if (pid <= 0) return;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("VmRSS:")) continue;
    const int64_t rss = std::stoll(line.substr(6));
    stats_.max("agent.max_rss_kb", rss);
    if (rss > kMaxAgentRssKb) {
      stats_.violation("rss_unbounded", std::to_string(rss) + " KiB");
    }
  }
  std::error_code error;
  int64_t fds = 0;
  for (auto it = std::filesystem::directory_iterator(proc + "/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++fds;
  }
  stats_.max("agent.max_fds", fds);
  if (fds > kMaxAgentFds) stats_.violation("fds_unbounded", std::to_string(fds) + " open fds");
}

void Checker::scrapeMetrics() {
  const auto page = env_.agent->client(2s).getText("/metrics");
  if (!page) return;
  static const std::pair<const char*, const char*> kWanted[] = {
      {"hostport_repairs_total{kind=\"layout\"}", "layout"},
      {"hostport_repairs_total{kind=\"missing\"}", "missing"},
      {"hostport_repairs_total{kind=\"stray\"}", "stray"},
      {"hostport_leases_vanished_total", "vanished_released"},
      {"hostport_reconciles_total", "reconcile_passes"},
  };
  std::istringstream lines(*page);
  for (std::string line; std::getline(lines, line);) {
    for (const auto& [sample, name] : kWanted) {
      if (line.starts_with(std::string(sample) + " ")) {
        metrics_[name] = static_cast<int64_t>(std::stod(line.substr(std::strlen(sample) + 1)));
      }
    }
  }
}

void Checker::foldMetrics() {
  scrapeMetrics();
  for (const auto& [name, value] : metrics_) stats_.add("repairs." + name, value);
  metrics_.clear();
}

}  // namespace hostport::soak
