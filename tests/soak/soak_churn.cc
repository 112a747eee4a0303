#include "tests/soak/soak_churn.h"

#include <algorithm>
#include <iostream>

#include "agent/api/node_files.h"

namespace hostport::soak {
namespace {

constexpr auto kDeleteRetry = 500ms;

/// The dynamic rows a pod may ask for: every protocol kind, single ports and ranges.
struct RowChoice {
  const char* entry;  // hostport.io/ports entry
  uint16_t containerPort;
  uint16_t count;
  bool tcp;
  bool udp;
};
constexpr RowChoice kRows[] = {
    {"web=8080/tcp", 8080, 1, true, false},      {"dns=5353/udp", 5353, 1, false, true},
    {"game=7000/tcpudp", 7000, 1, true, true},   {"rtp=9000-9002/udp", 9000, 3, false, true},
    {"rng=9100-9101/tcp", 9100, 2, true, false},
};

bool coin(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

}  // namespace

struct Churn::Spec {
  test::AddOptions options;
  std::vector<std::pair<test::Transport, uint16_t>> servers;
  uint16_t staticPort = 0;
  bool probe = false;
  std::shared_ptr<SoakPod> holder;  // the live pod whose static port the probe claims
};

void Churn::start(int workers) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker(i); });
}

void Churn::stop() {
  stopping_ = true;
  for (auto& worker : workers_) worker.join();
  workers_.clear();
}

std::size_t Churn::podCount() const {
  std::lock_guard lock(mutex_);
  return pods_.size();
}

std::string Churn::census() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, int> count;
  for (const auto& [key, pod] : pods_) ++count[stateName(pod->state)];
  std::string text;
  for (const auto& [state, n] : count) text += " " + state + "=" + std::to_string(n);
  return text;
}

std::vector<PodView> Churn::pods() const {
  std::lock_guard lock(mutex_);
  std::vector<PodView> views;
  for (const auto& [key, pod] : pods_) {
    views.push_back({key, pod->pod->label, pod->pod->ipv4, pod->state, pod->acked, pod->since});
  }
  return views;
}

void Churn::drop(const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto found = pods_.find(key);
  if (found == pods_.end() || found->second->busy) return;
  if (found->second->staticPort != 0) staticUsed_[found->second->staticPort - kStaticFirst] = false;
  pods_.erase(found);
}

void Churn::markReleased(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (const auto found = pods_.find(key); found != pods_.end()) found->second->released = true;
}

void Churn::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (const auto found = pods_.find(key); found != pods_.end()) {
    if (found->second->state != PodState::kVanished) found->second->state = PodState::kDeleting;
    found->second->released = true;
    found->second->retryAt = Clock::now();
  }
}

void Churn::worker(int index) {
  std::mt19937_64 rng(seed_ + 7919 * static_cast<uint64_t>(index + 1));
  while (!stopping_) {
    auto [action, pod] = pick(rng);
    switch (action) {
      case Action::kIdle:
        std::this_thread::sleep_for(20ms);
        break;
      case Action::kCreate:
        createAndAdd(rng);
        break;
      case Action::kDelete:
      case Action::kRetryDelete:
        del(pod, true);
        break;
      case Action::kLateDelete:
        del(pod, false);
        break;
      case Action::kVanish:
        vanish(pod);
        break;
    }
  }
}

std::pair<Churn::Action, std::shared_ptr<SoakPod>> Churn::pick(std::mt19937_64& rng) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  std::vector<std::shared_ptr<SoakPod>> live;
  // Sandboxes on the node: a deleted pod has none (it waits only for a check to see its lease
  // gone); a vanished one still holds its address until its late DEL.
  int total = creating_;
  for (const auto& [key, pod] : pods_) {
    if (pod->state != PodState::kDeleted) ++total;
    if (pod->busy) continue;
    if ((pod->state == PodState::kAddFailed || pod->state == PodState::kDeleting) &&
        pod->retryAt <= now) {
      pod->busy = true;
      return {Action::kRetryDelete, pod};
    }
    if (pod->state == PodState::kVanished && pod->released) {
      pod->busy = true;
      return {Action::kLateDelete, pod};
    }
    if (pod->state == PodState::kLive) live.push_back(pod);
  }
  if (total < maxPods_ &&
      (live.size() < static_cast<std::size_t>(maxPods_) / 2 || coin(rng, 0.5))) {
    ++creating_;
    return {Action::kCreate, nullptr};
  }
  if (live.empty()) return {Action::kIdle, nullptr};
  auto pod = live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
  pod->busy = true;
  return {coin(rng, 0.1) ? Action::kVanish : Action::kDelete, pod};
}

Churn::Spec Churn::makeSpec(std::mt19937_64& rng) {
  Spec spec;
  nlohmann::json mappings = nlohmann::json::array();
  std::string annotation;
  {
    std::lock_guard lock(mutex_);
    // Now and then claim a live pod's static port: the agent must refuse it (101).
    if (coin(rng, 0.04)) {
      std::vector<std::pair<std::shared_ptr<SoakPod>, PortGrant>> held;
      for (const auto& [key, pod] : pods_) {
        if (pod->state != PodState::kLive || pod->busy) continue;
        for (const auto& grant : pod->acked) {
          if (grant.isStatic) held.emplace_back(pod, grant);
        }
      }
      if (!held.empty()) {
        const auto& [holder, grant] =
            held[std::uniform_int_distribution<std::size_t>(0, held.size() - 1)(rng)];
        // The holder stays live (no worker takes it) until the claim has been answered.
        holder->busy = true;
        spec.holder = holder;
        spec.probe = true;
        mappings.push_back({{"hostPort", grant.hostPort},
                            {"containerPort", 8082},
                            {"protocol", grant.protocol == PortProtocol::kUdp ? "udp" : "tcp"}});
      }
    }
    if (!spec.probe && coin(rng, 0.3)) {
      std::vector<uint16_t> free;
      for (uint16_t i = 0; i < kStaticCount; ++i) {
        if (!staticUsed_[i]) free.push_back(i);
      }
      if (!free.empty()) {
        const uint16_t index =
            free[std::uniform_int_distribution<std::size_t>(0, free.size() - 1)(rng)];
        staticUsed_[index] = true;
        spec.staticPort = kStaticFirst + index;
        const bool udp = coin(rng, 0.5);
        mappings.push_back({{"hostPort", spec.staticPort},
                            {"containerPort", udp ? 5354 : 8081},
                            {"protocol", udp ? "udp" : "tcp"}});
        spec.servers.emplace_back(udp ? test::Transport::kUdp : test::Transport::kTcp,
                                  udp ? 5354 : 8081);
      }
    }
  }
  if (!spec.probe) {
    for (const auto& row : kRows) {
      if (!coin(rng, 0.4)) continue;
      annotation += (annotation.empty() ? "" : ", ") + std::string(row.entry);
      for (uint16_t offset = 0; offset < row.count; ++offset) {
        const auto port = static_cast<uint16_t>(row.containerPort + offset);
        if (row.tcp) spec.servers.emplace_back(test::Transport::kTcp, port);
        if (row.udp) spec.servers.emplace_back(test::Transport::kUdp, port);
      }
    }
    if (annotation.empty() && mappings.empty()) {
      annotation = kRows[0].entry;
      spec.servers.emplace_back(test::Transport::kTcp, kRows[0].containerPort);
    }
  }
  nlohmann::json runtimeConfig = nlohmann::json::object();
  if (!annotation.empty()) {
    nlohmann::json annotations = {{"hostport.io/ports", annotation}};
    if (coin(rng, 0.25)) annotations["hostport.io/pool"] = "media";
    runtimeConfig["io.kubernetes.cri.pod-annotations"] = annotations;
  }
  if (!mappings.empty()) runtimeConfig["portMappings"] = mappings;
  spec.options.pluginKeys = {{"agentSocket", env_.agent->socketPath()},
                             {"releaseSpool", env_.agent->releaseSpool()},
                             {"runtimeConfig", runtimeConfig}};
  return spec;
}

void Churn::failed(const std::string& verb, const AgentState::Snapshot& before,
                   const std::string& label, const std::string& what) {
  const std::string reason = env_.agentState.disruption(before, env_.agentState.snapshot(), what);
  if (!reason.empty()) {
    stats_.add("expected." + verb + "." + reason);
    return;
  }
  stats_.add("unexpected." + verb);
  stats_.violation(verb + "_failed", label + ": " + what);
}

void Churn::createAndAdd(std::mt19937_64& rng) {
  const std::string label = [&] {
    std::lock_guard lock(mutex_);
    return "s" + std::to_string(++nextLabel_);
  }();
  Spec spec = makeSpec(rng);
  auto soakPod = std::make_shared<SoakPod>();
  soakPod->staticPort = spec.staticPort;
  soakPod->probe = spec.probe;
  soakPod->busy = true;
  auto abandon = [&](const std::string& what) {
    stats_.violation("harness", label + ": " + what);
    std::lock_guard lock(mutex_);
    --creating_;
    if (spec.holder) spec.holder->busy = false;
    if (spec.staticPort != 0) staticUsed_[spec.staticPort - kStaticFirst] = false;
  };
  Result<test::Pod*> created = [&] {
    std::lock_guard lock(nodeMutex_);
    return env_.node->createPod(label);
  }();
  if (!created) return abandon("create pod: " + created.error().message);
  soakPod->pod = *created;
  soakPod->key = (*created)->owner();
  for (const auto& [transport, port] : spec.servers) {
    auto server =
        test::Server::start((*created)->netns, transport, port, serverId(label, port, transport));
    if (!server) return abandon("server: " + server.error().message);
    soakPod->servers.push_back(std::move(*server));
  }

  // host-local hands addresses out again after it wrapped around: the node's neighbour entry
  // may still name a gone pod's MAC (REACHABLE for up to 45 s), and Debian's bridge plugin sends
  // no gratuitous ARP. Forget it, as a runtime whose bridge announces the new pod would.
  if (auto bridged = env_.node->bridgeUp(*soakPod->pod); !bridged) {
    return abandon("bridge ADD: " + bridged.error().message);
  }
  (void)env_.node->node().ip({"neigh", "del", soakPod->pod->ipv4, "dev", env_.node->bridge()});

  gate_.enter();
  const auto before = env_.agentState.snapshot();
  auto added = env_.node->add(*soakPod->pod, spec.options);
  if (!added) {
    stats_.violation("harness", label + ": ADD: " + added.error().message);
    soakPod->state = PodState::kAddFailed;
  } else if (added->ok()) {
    auto record = agent::api::readAttachmentRecord(
        env_.recordDir(), {soakPod->pod->containerId, soakPod->pod->ifname});
    if (spec.probe) {
      stats_.violation("conflict_not_refused",
                       label + " got a live pod's static port: " + added->out);
      soakPod->state = PodState::kDeleting;
    } else if (!record || !*record) {
      stats_.violation("record_missing",
                       label + ": " + (record ? "no attachment record" : record.error().message));
      soakPod->state = PodState::kDeleting;
    } else {
      stats_.add("add.ok");
      soakPod->acked = (*record)->ports;
      soakPod->state = PodState::kLive;
    }
  } else {
    const auto error = test::parseCniError(added->out);
    if (spec.probe && error && error->code == 101) {
      stats_.add("probe.refused");
    } else {
      failed("add", before, label,
             error ? "CNI code " + std::to_string(error->code) + ": " + error->msg
                   : added->describe());
    }
    soakPod->state = PodState::kAddFailed;
  }
  soakPod->retryAt = Clock::now();
  const bool failedAdd = soakPod->state != PodState::kLive;
  {
    std::lock_guard lock(mutex_);
    --creating_;
    if (spec.holder) spec.holder->busy = false;
    pods_[soakPod->key] = soakPod;
    if (!failedAdd) soakPod->busy = false;
  }
  gate_.leave();
  // The runtime DELs a sandbox whose ADD failed.
  if (failedAdd) del(soakPod, true);
}

void Churn::del(const std::shared_ptr<SoakPod>& pod, bool withNetns) {
  gate_.enter();
  const auto before = env_.agentState.snapshot();
  auto deleted = env_.node->del(*pod->pod, {.withNetns = withNetns});
  bool ok = false;
  if (!deleted) {
    // A bridge DEL that failed: the plugin's DEL ran first; try the whole chain again.
    stats_.violation("harness", pod->pod->label + ": DEL: " + deleted.error().message);
  } else if (deleted->ok()) {
    ok = true;
    stats_.add(withNetns ? "del.ok" : "del.late_ok");
  } else {
    const auto error = test::parseCniError(deleted->out);
    failed("del", before, pod->pod->label,
           error ? "CNI code " + std::to_string(error->code) + ": " + error->msg
                 : deleted->describe());
  }
  {
    std::lock_guard lock(mutex_);
    if (ok) {
      pod->state = PodState::kDeleted;
      pod->since = Clock::now();
    } else {
      if (pod->state != PodState::kVanished) pod->state = PodState::kDeleting;
      pod->retryAt = Clock::now() + kDeleteRetry;
    }
  }
  gate_.leave();
  if (ok) {
    // The runtime tears the sandbox down after its DEL.
    pod->servers.clear();
    { test::Netns gone = std::move(pod->pod->netns); }
  }
  std::lock_guard lock(mutex_);
  pod->busy = false;
}

void Churn::vanish(const std::shared_ptr<SoakPod>& pod) {
  gate_.enter();
  pod->servers.clear();  // sockets would keep the namespace (and its veth) alive
  { test::Netns gone = std::move(pod->pod->netns); }
  {
    std::lock_guard lock(mutex_);
    pod->state = PodState::kVanished;
    pod->since = Clock::now();
    pod->busy = false;
  }
  stats_.add("vanish.ok");
  gate_.leave();
}

void Churn::teardown() {
  std::mt19937_64 rng(seed_ ^ 0x7ea2u);
  std::vector<std::shared_ptr<SoakPod>> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, pod] : pods_) all.push_back(pod);
  }
  for (const auto& pod : all) {
    if (pod->state == PodState::kLive) {
      if (coin(rng, 0.5)) {
        del(pod, true);
      } else {
        vanish(pod);
      }
    } else if (pod->state == PodState::kAddFailed || pod->state == PodState::kDeleting) {
      del(pod, true);
    }
  }
}

void Churn::cleanupReleased() {
  std::vector<std::shared_ptr<SoakPod>> due;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, pod] : pods_) {
      if ((pod->state == PodState::kVanished && pod->released) ||
          pod->state == PodState::kAddFailed || pod->state == PodState::kDeleting) {
        due.push_back(pod);
      }
    }
  }
  for (const auto& pod : due) del(pod, pod->state != PodState::kVanished);
}

}  // namespace hostport::soak
