// The built hostport-agent's pod socket (--pod-socket): each pod, a process in a netns of its own,
// learns exactly its own ports and nothing else; the node's netns, a netns without a lease and a
// caller that is gone are refused, a caller whose main thread has exited is not; ?wait= answers
// once the lease comes, in a sandbox of a user namespace of its own too, but not in a netns the
// caller made; a flood of idle connections stops neither another pod nor the control socket, a
// closed connection frees its slot at once, and callers that make namespaces cannot multiply
// their slots (issue 29); a caller whose cgroup is another pod's is refused its netns's leases;
// the sockets' directories are the agent's alone, whatever the umask.
//
// A "pod" is a named netns whose path is the lease's netns, as CNI_NETNS is at ADD; the lease is
// made through the control socket. The caller is a child process that joined that netns
// (tests/support/pod_caller.h): the agent identifies the process, not the thread.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "tests/support/agent_process.h"
#include "tests/support/netns.h"
#include "tests/support/pod_caller.h"
#include "tests/support/pod_cgroup.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class AgentPodSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HOSTPORT_SKIP_UNLESS_ROOT();
    // The pods' netns exist before the agent starts, as sandboxes exist before their ADD.
    for (auto* pod : {&podA_, &podB_, &noLease_}) {
      auto created = Netns::create();
      ASSERT_OK(created);
      pod->emplace(std::move(*created));
    }
    AgentOptions options{.portRange = "40000-40049",
                         .reserveLocalPorts = false,
                         .logLevel = "debug",
                         .privateNetns = true};
    auto started = AgentProcess::start(HOSTPORT_AGENT_PATH, options);
    ASSERT_OK(started);
    agent_ = std::move(*started);
  }

  /// A lease for `pod` in netns `netns`, with dynamic ports named as given.
  Result<Lease> lease(const Netns& netns, const std::string& pod,
                      const std::vector<std::string>& portNames, const std::string& uid = "") {
    AllocationRequest request;
    request.key = {"c-" + netns.name(), "eth0"};
    request.pod = {"games", pod, uid.empty() ? "uid-" + pod : uid};
    request.netns = netns.path();
    uint16_t containerPort = 7000;
    for (const auto& name : portNames) {
      request.dynamics.push_back({name, containerPort++, 1, PortProtocol::kTcp});
    }
    return agent_->client().allocate(request);
  }

  std::string agentNetns() const { return "/proc/" + std::to_string(agent_->pid()) + "/ns/net"; }
  const std::string& podSocket() const { return agent_->podSocketPath(); }

  /// Lets every user reach the pod socket, as a pod's mount of its directory does: the agent's
  /// temp dir above it is root's alone.
  void openToEveryUser() {
    const auto tempDir = std::filesystem::path(podSocket()).parent_path().parent_path();
    ASSERT_EQ(::chmod(tempDir.c_str(), 0711), 0) << tempDir;
  }

  /// The agent's log once it holds `count` lines with `event`, or after 10 s.
  bool logged(const std::string& event, std::size_t count = 1) {
    return waitUntil([&] {
      const std::string log = agent_->runLog();
      std::size_t found = 0;
      for (auto at = log.find(event); at != std::string::npos; at = log.find(event, at + 1)) {
        ++found;
      }
      return found >= count;
    });
  }

  /// GET `target` from a fresh process in `netnsPath`.
  Result<HttpAnswer> askFrom(const std::string& netnsPath, const std::string& target) {
    HOSTPORT_TRY(PodCaller caller, PodCaller::connect(netnsPath, podSocket()));
    return httpGet(caller.socket(), target);
  }

  std::optional<Netns> podA_, podB_, noLease_;
  std::unique_ptr<AgentProcess> agent_;
};

nlohmann::json bodyJson(const HttpAnswer& answer) {
  return nlohmann::json::parse(answer.body, nullptr, false);
}

/// What statusesOf() found on one connection.
struct Reply {
  enum class Kind { kAnswered, kClosedUnanswered, kNoReplyYet } kind = Kind::kNoReplyYet;
  unsigned status = 0;
  std::string text;
};

/// Sends "GET <target>" on every socket, then reads them all until each holds an answer's status
/// line or was closed, for at most `deadline` in all.
std::vector<Reply> repliesTo(const std::vector<UniqueFd>& sockets, const std::string& target,
                             std::chrono::milliseconds deadline) {
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: pod\r\n\r\n";
  for (const auto& socket : sockets) {
    (void)::send(socket.get(), request.data(), request.size(), MSG_NOSIGNAL);  // may be shed
  }
  std::vector<Reply> replies(sockets.size());
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    std::vector<pollfd> pending;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < sockets.size(); ++i) {
      if (replies[i].kind != Reply::Kind::kNoReplyYet) continue;
      pending.push_back({sockets[i].get(), POLLIN, 0});
      which.push_back(i);
    }
    if (pending.empty()) break;
    if (::poll(pending.data(), pending.size(), 50) <= 0) continue;
    for (std::size_t j = 0; j < pending.size(); ++j) {
      if (pending[j].revents == 0) continue;
      Reply& reply = replies[which[j]];
      char buffer[4096];
      const ssize_t got = ::recv(pending[j].fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got > 0) reply.text.append(buffer, static_cast<std::size_t>(got));
      if (reply.text.starts_with("HTTP/1.1 ") && reply.text.find("\r\n\r\n") != std::string::npos) {
        reply.kind = Reply::Kind::kAnswered;
        reply.status = static_cast<unsigned>(std::stoul(reply.text.substr(9, 3)));
      } else if (got == 0 || (got < 0 && errno != EAGAIN)) {
        reply.kind = Reply::Kind::kClosedUnanswered;
      }
    }
  }
  return replies;
}

std::size_t countOf(const std::vector<Reply>& replies, Reply::Kind kind) {
  return static_cast<std::size_t>(
      std::ranges::count(replies, kind, [](const Reply& reply) { return reply.kind; }));
}

/// Field 3 of /proc/<pid>/stat: 'Z' for a zombie.
char stateOf(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto end = text.rfind(')');
  return end == std::string::npos || end + 2 >= text.size() ? '?' : text[end + 2];
}

/// Whether uid 65534 can make a file in `dir` (errno 0) or why not: another user in a directory
/// it may write can replace the agent's socket with its own.
int createAsNobody(const std::filesystem::path& dir) {
  const std::string path = (dir / "impostor").string();
  const pid_t pid = ::fork();
  if (pid == 0) {  // syscalls only: the test process has other threads
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(255);
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    ::_exit(fd >= 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::unlink(path.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 254;
}

TEST_F(AgentPodSocketTest, EachPodSeesExactlyItsOwnPorts) {
  ASSERT_OK_AND_ASSIGN(const auto leaseA, lease(*podA_, "server-a", {"web", "game"}));
  ASSERT_OK_AND_ASSIGN(const auto leaseB, lease(*podB_, "server-b", {"voice"}));

  ASSERT_OK_AND_ASSIGN(const auto answerA, askFrom(podA_->path(), "/v1/self"));
  ASSERT_EQ(answerA.status, 200u) << answerA.body << agent_->describe();
  const auto a = bodyJson(answerA);
  EXPECT_EQ(a["namespace"], "games");
  EXPECT_EQ(a["name"], "server-a");
  ASSERT_EQ(a["ports"].size(), 2u) << answerA.body;
  EXPECT_EQ(a["ports"][0]["name"], "web");
  EXPECT_EQ(a["ports"][0]["hostPort"], leaseA.ports[0].hostPort);
  EXPECT_EQ(a["ports"][1]["name"], "game");
  EXPECT_EQ(a["ports"][1]["hostPort"], leaseA.ports[1].hostPort);

  ASSERT_OK_AND_ASSIGN(const auto answerB, askFrom(podB_->path(), "/v1/self"));
  ASSERT_EQ(answerB.status, 200u) << answerB.body;
  const auto b = bodyJson(answerB);
  EXPECT_EQ(b["name"], "server-b");
  ASSERT_EQ(b["ports"].size(), 1u) << answerB.body;
  EXPECT_EQ(b["ports"][0]["name"], "voice");
  EXPECT_EQ(b["ports"][0]["hostPort"], leaseB.ports[0].hostPort);
  EXPECT_THAT(answerB.body, Not(HasSubstr("server-a")));

  ASSERT_OK_AND_ASSIGN(const auto web, askFrom(podA_->path(), "/v1/self/ports/web"));
  EXPECT_EQ(web.status, 200u) << web.body;
  EXPECT_EQ(web.body, std::to_string(leaseA.ports[0].hostPort) + "\n");
  // B has no port named web, and A's is not B's to see.
  ASSERT_OK_AND_ASSIGN(const auto notB, askFrom(podB_->path(), "/v1/self/ports/web"));
  EXPECT_EQ(notB.status, 404u) << notB.body;
  EXPECT_THAT(notB.body, HasSubstr("its named ports: voice"));
  EXPECT_THAT(notB.body, Not(HasSubstr(std::to_string(leaseA.ports[0].hostPort))));
}

TEST_F(AgentPodSocketTest, ACallerInTheNodesNetnsIsRefused) {
  ASSERT_OK(lease(*podA_, "server-a", {"web"}));
  ASSERT_OK_AND_ASSIGN(const auto answer, askFrom(agentNetns(), "/v1/self"));
  EXPECT_EQ(answer.status, 403u) << answer.body;
  EXPECT_EQ(bodyJson(answer)["code"], "node_network") << answer.body;
  EXPECT_THAT(answer.body, HasSubstr("node's network namespace and in no pod's cgroup"));
}

TEST_F(AgentPodSocketTest, ACallerInAnotherPodsCgroupIsRefusedItsNetnsLeases) {
  constexpr std::string_view kPodA = "0a4e28ba-2fa1-11d2-883f-0016d3cca427";
  constexpr std::string_view kOther = "0b4e28ba-2fa1-11d2-883f-0016d3cca427";
  ASSERT_OK(lease(*podA_, "server-a", {"web"}, std::string(kPodA)));
  ASSERT_OK_AND_ASSIGN(PodCgroup own, PodCgroup::create(kPodA, CgroupDriver::kSystemd));
  ASSERT_OK_AND_ASSIGN(PodCgroup other, PodCgroup::create(kOther, CgroupDriver::kCgroupfs));
  {
    // Its own pod's cgroup and netns agree.
    ASSERT_OK_AND_ASSIGN(PodCaller caller,
                         PodCaller::start(podSocket(), {.cgroupProcs = own.procsPath(),
                                                        .netnsPath = podA_->path()}));
    ASSERT_OK_AND_ASSIGN(const auto answer, httpGet(caller.socket(), "/v1/self"));
    EXPECT_EQ(answer.status, 200u) << answer.body << agent_->describe();
  }
  // A process put into pod A's netns from another pod's cgroup is neither.
  ASSERT_OK_AND_ASSIGN(PodCaller caller,
                       PodCaller::start(podSocket(), {.cgroupProcs = other.procsPath(),
                                                      .netnsPath = podA_->path()}));
  ASSERT_OK_AND_ASSIGN(const auto answer, httpGet(caller.socket(), "/v1/self"));
  EXPECT_EQ(answer.status, 403u) << answer.body;
  EXPECT_EQ(bodyJson(answer)["code"], "unidentified_caller") << answer.body;
  EXPECT_THAT(answer.body, HasSubstr("cgroup is pod " + std::string(kOther)));
  EXPECT_THAT(answer.body, Not(HasSubstr("server-a")));
  EXPECT_TRUE(logged("server.pod_identity_mismatch")) << agent_->describe();
}

TEST_F(AgentPodSocketTest, ACallerInANetnsWithoutALeaseIsRefused) {
  ASSERT_OK(lease(*podA_, "server-a", {"web"}));
  for (const std::string& netns : {noLease_->path(), std::string()}) {  // and the test's own
    ASSERT_OK_AND_ASSIGN(const auto answer, askFrom(netns, "/v1/self"));
    EXPECT_EQ(answer.status, 403u) << answer.body;
    EXPECT_EQ(bodyJson(answer)["code"], "no_lease") << answer.body;
    EXPECT_THAT(answer.body, HasSubstr("no hostport lease holds the caller's network namespace"));
    EXPECT_THAT(answer.body, Not(HasSubstr("server-a")));
  }
}

TEST_F(AgentPodSocketTest, ALeaseWhoseSandboxPathIsGoneAnswersNobody) {
  // The kernel gives a freed namespace's inode to a later namespace, and a lease outlives its
  // sandbox until the reconciler's grace has passed: the inode alone must not name the caller.
  // Reuse cannot be forced, so the same view is made by hand: pod A's namespace stays alive (an
  // fd holds it) under another path, while the path its lease recorded is gone.
  ASSERT_OK(lease(*podA_, "server-a", {"web"}));
  const UniqueFd held(::open(podA_->path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(held.valid());
  podA_.reset();  // the sandbox's path is gone, without a DEL
  TempDir dir;
  const std::string other = (dir / "netns").string();
  { std::ofstream touch(other); }
  const std::string source = "/proc/self/fd/" + std::to_string(held.get());
  ASSERT_EQ(::mount(source.c_str(), other.c_str(), nullptr, MS_BIND, nullptr), 0) << errno;
  ASSERT_OK_AND_ASSIGN(const auto answer, askFrom(other, "/v1/self"));
  ::umount2(other.c_str(), MNT_DETACH);
  EXPECT_EQ(answer.status, 403u) << answer.body;
  EXPECT_THAT(answer.body, Not(HasSubstr("server-a")));
}

TEST_F(AgentPodSocketTest, AConnectionWhoseCallerDiedGetsNoAnswerForItsPod) {
  ASSERT_OK(lease(*podA_, "server-a", {"web"}));
  ASSERT_OK_AND_ASSIGN(PodCaller caller, PodCaller::connect(podA_->path(), podSocket()));
  ASSERT_OK_AND_ASSIGN(const auto first, httpGet(caller.socket(), "/v1/self"));
  ASSERT_EQ(first.status, 200u) << first.body;  // the connection was identified as pod A's
  const pid_t pid = caller.pid();
  // The process that connected exits and is reaped: its pid may now be anyone's. The test
  // keeps the connection and asks again, as a process that inherited it would.
  ASSERT_OK(caller.exit());
  ASSERT_OK_AND_ASSIGN(const auto second, httpGet(caller.socket(), "/v1/self"));
  EXPECT_EQ(second.status, 403u) << second.body;
  EXPECT_EQ(bodyJson(second)["code"], "unidentified_caller") << second.body;
  EXPECT_THAT(second.body, HasSubstr("process " + std::to_string(pid) + " has exited"));
  EXPECT_THAT(second.body, Not(HasSubstr("server-a")));
  EXPECT_THAT(second.body, Not(HasSubstr("hostPort")));
}

TEST_F(AgentPodSocketTest, WaitAnswersOnceTheLeaseIsGranted) {
  ASSERT_OK_AND_ASSIGN(PodCaller caller, PodCaller::connect(podB_->path(), podSocket()));
  std::optional<Result<HttpAnswer>> answer;
  std::thread asker([&] { answer = httpGet(caller.socket(), "/v1/self/ports/voice?wait=60s"); });
  // Granted only once the request is parked, so the grant's wake-up is what answers it.
  const bool parked = agent_->waitForLog("server.pod_waiting", std::chrono::seconds(30));
  auto granted = lease(*podB_, "server-b", {"voice"});
  asker.join();
  ASSERT_TRUE(parked) << agent_->describe();
  ASSERT_OK(granted);
  ASSERT_TRUE(answer.has_value());
  ASSERT_OK(*answer);
  EXPECT_EQ((*answer)->status, 200u) << (*answer)->body;
  EXPECT_EQ((*answer)->body, std::to_string(granted->ports[0].hostPort) + "\n");
}

TEST_F(AgentPodSocketTest, AWaitThatEndsWithoutALeaseSaysSo) {
  ASSERT_OK_AND_ASSIGN(const auto answer, askFrom(noLease_->path(), "/v1/self?wait=200ms"));
  EXPECT_EQ(answer.status, 403u) << answer.body;
  EXPECT_EQ(bodyJson(answer)["code"], "no_lease") << answer.body;
  EXPECT_THAT(answer.body, HasSubstr("within wait=200ms"));
}

TEST_F(AgentPodSocketTest, ABadWaitNamesTheParameterAndTheValue) {
  ASSERT_OK_AND_ASSIGN(const auto answer, askFrom(podA_->path(), "/v1/self?wait=10m"));
  EXPECT_EQ(answer.status, 400u) << answer.body;
  EXPECT_THAT(answer.body, HasSubstr(R"(wait: \"10m\" is not a duration)"));
}

TEST_F(AgentPodSocketTest, NothingButTheTwoReadsIsServed) {
  ASSERT_OK(lease(*podA_, "server-a", {"web"}));
  ASSERT_OK_AND_ASSIGN(PodCaller caller, PodCaller::connect(podA_->path(), podSocket()));
  for (const auto& [method, target, status] : {std::tuple{"POST", "/v1/self", 405u},
                                               {"DELETE", "/v1/self", 405u},
                                               {"DELETE", "/v1/self/ports/web", 405u},
                                               {"GET", "/v1/attachments", 404u},
                                               {"POST", "/v1/attachments", 404u},
                                               {"GET", "/v1/pools", 404u},
                                               {"GET", "/metrics", 404u},
                                               {"GET", "/v1/self?namespace=x", 400u}}) {
    ASSERT_OK_AND_ASSIGN(const auto answer, httpRequest(caller.socket(), method, target));
    EXPECT_EQ(answer.status, status) << method << " " << target << ": " << answer.body;
  }
  // Refusing released nothing.
  ASSERT_OK_AND_ASSIGN(const auto leases, agent_->client().list("games", "server-a"));
  EXPECT_EQ(leases.size(), 1u);
}

TEST_F(AgentPodSocketTest, TheSocketIsOpenToAllAndAloneInItsDirectory) {
  struct stat info {};
  ASSERT_EQ(::stat(podSocket().c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0666u);
  std::set<std::string> entries;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(podSocket()).parent_path())) {
    entries.insert(entry.path().filename().string());
  }
  EXPECT_EQ(entries, std::set<std::string>{"pod.sock"});
}

TEST_F(AgentPodSocketTest, AFloodOfIdleConnectionsStopsNeitherAnotherPodNorTheControlSocket) {
  ASSERT_OK_AND_ASSIGN(const auto leaseA, lease(*podA_, "server-a", {"web"}));
  ASSERT_OK(lease(*podB_, "server-b", {"voice"}));
  // Pod B opens far more connections than its share and sends nothing on them; the test's own
  // netns adds a trickler that never finishes its headers.
  ASSERT_OK_AND_ASSIGN(PodCaller flood, PodCaller::connect(podB_->path(), podSocket(), 150));
  std::vector<UniqueFd> tricklers;
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK_AND_ASSIGN(UniqueFd fd, connectUnix(podSocket()));
    const std::string partial = "GET /v1/self HTTP/1.1\r\nHost: p";
    ASSERT_EQ(::send(fd.get(), partial.data(), partial.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(partial.size()));
    tricklers.push_back(std::move(fd));
  }
  // The cap per netns sheds B's extra connections, and says so.
  EXPECT_TRUE(agent_->waitForLog("server.pod_connection_shed", std::chrono::seconds(30)))
      << agent_->describe();

  ASSERT_OK_AND_ASSIGN(const auto answer, askFrom(podA_->path(), "/v1/self/ports/web"));
  EXPECT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(answer.body, std::to_string(leaseA.ports[0].hostPort) + "\n");
  ASSERT_OK_AND_ASSIGN(const auto pools, agent_->client().poolUsage());
  EXPECT_EQ(pools.size(), 1u);
}

TEST_F(AgentPodSocketTest, AClosedConnectionFreesItsSlotAtOnceWhileItsRequestWaits) {
  // Pod B's sandbox has no lease yet: 16 requests, its whole share, wait for one.
  ASSERT_OK_AND_ASSIGN(PodCaller waiting, PodCaller::connect(podB_->path(), podSocket(), 16));
  (void)repliesTo(waiting.sockets(), "/v1/self?wait=60s", std::chrono::milliseconds(0));
  ASSERT_TRUE(logged("server.pod_waiting", 16)) << agent_->describe();
  waiting.closeSockets();  // the client gives up
  EXPECT_TRUE(logged("server.pod_wait_abandoned", 16)) << agent_->describe();
  // Its slots are free now, not in a minute: the pod is answered.
  ASSERT_OK_AND_ASSIGN(PodCaller again, PodCaller::connect(podB_->path(), podSocket()));
  const auto answer = httpRequest(again.socket(), "GET", "/v1/self", std::chrono::seconds(5));
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 403u) << answer->body;
  EXPECT_EQ(bodyJson(*answer)["code"], "no_lease") << answer->body;
}

TEST_F(AgentPodSocketTest, TheFloodOfIssue29LeavesEveryPodItsSlots) {
  // 33 processes of uid 65534 each make a user and network namespace (`unshare -Urn`), open 16
  // connections, ask for ?wait=60s on each and close them at once: 528 requests, more than the
  // 512 connections the pod socket serves in all.
  ASSERT_OK_AND_ASSIGN(const auto leaseA, lease(*podA_, "server-a", {"web"}));
  openToEveryUser();
  std::vector<PodCaller> attackers;
  for (int i = 0; i < 33; ++i) {
    ASSERT_OK_AND_ASSIGN(
        PodCaller attacker,
        PodCaller::start(podSocket(), {.uid = 65534, .newUserAndNetns = true, .connections = 16}));
    (void)repliesTo(attacker.sockets(), "/v1/self?wait=60s", std::chrono::milliseconds(0));
    attacker.closeSockets();
    attackers.push_back(std::move(attacker));
  }
  // The pod's connection comes after all of theirs, and is served.
  ASSERT_OK_AND_ASSIGN(PodCaller pod, PodCaller::connect(podA_->path(), podSocket()));
  const auto answer =
      httpRequest(pod.socket(), "GET", "/v1/self/ports/web", std::chrono::seconds(5));
  ASSERT_OK(answer) << agent_->describe();
  EXPECT_EQ(answer->status, 200u) << answer->body;
  EXPECT_EQ(answer->body, std::to_string(leaseA.ports[0].hostPort) + "\n");
}

TEST_F(AgentPodSocketTest, NamespacesOneUserMakesShareOneCapAndNeverWait) {
  // Three processes of uid 65534, each in namespaces of its own making, keep 16 connections open
  // each: together they are one caller, the uid, with 16 slots.
  openToEveryUser();
  std::vector<PodCaller> callers;
  std::vector<UniqueFd> sockets;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(
        PodCaller caller,
        PodCaller::start(podSocket(), {.uid = 65534, .newUserAndNetns = true, .connections = 16}));
    callers.push_back(std::move(caller));
  }
  for (auto& caller : callers) {
    for (const auto& socket : caller.sockets()) sockets.emplace_back(::dup(socket.get()));
    caller.closeSockets();
  }
  const auto replies = repliesTo(sockets, "/v1/self?wait=60s", std::chrono::seconds(10));
  EXPECT_EQ(countOf(replies, Reply::Kind::kAnswered), 16u) << agent_->describe();
  EXPECT_EQ(countOf(replies, Reply::Kind::kClosedUnanswered), 32u);
  // No sandbox will ever have a namespace they made: refused at once, not held for a minute.
  for (const auto& reply : replies) {
    if (reply.kind != Reply::Kind::kAnswered) continue;
    EXPECT_EQ(reply.status, 403u) << reply.text;
    EXPECT_THAT(reply.text, HasSubstr("and none ever will: it belongs to a user namespace that "
                                      "uid 65534 made"));
  }
  EXPECT_TRUE(agent_->waitForLog("server.pod_connection_shed caller=\"uid 65534\""))
      << agent_->describe();
}

TEST_F(AgentPodSocketTest, TheProcessesOfOneContainerShareOneCapHoweverManyNetnsTheyMake) {
  // Two processes of one "container" (a pid namespace below the agent's), each in a user and
  // network namespace it made: one caller, the container's pid namespace, with 16 slots.
  ASSERT_OK_AND_ASSIGN(PodCaller first, PodCaller::start(podSocket(), {.newPidns = true,
                                                                       .newUserAndNetns = true,
                                                                       .connections = 12}));
  ASSERT_OK_AND_ASSIGN(PodCaller second,
                       PodCaller::start(podSocket(), {.pidnsPath = first.pidnsForChildren(),
                                                      .newUserAndNetns = true,
                                                      .connections = 12}));
  std::vector<UniqueFd> sockets;
  for (auto* caller : {&first, &second}) {
    for (const auto& socket : caller->sockets()) sockets.emplace_back(::dup(socket.get()));
    caller->closeSockets();
  }
  const auto replies = repliesTo(sockets, "/v1/self", std::chrono::seconds(10));
  EXPECT_EQ(countOf(replies, Reply::Kind::kAnswered), 16u) << agent_->describe();
  EXPECT_EQ(countOf(replies, Reply::Kind::kClosedUnanswered), 8u);
  EXPECT_TRUE(agent_->waitForLog("server.pod_connection_shed caller=\"pid namespace"))
      << agent_->describe();
}

TEST_F(AgentPodSocketTest, ASandboxInAUserNamespaceOfItsOwnWaitsAndIsAnswered) {
  // A pod with hostUsers: false (KEP-127): the runtime, root, makes its user namespace and, in
  // it, the sandbox's netns, which the pod's processes then join.
  ASSERT_OK_AND_ASSIGN(PodCaller sandbox, PodCaller::start(podSocket(), {.newUserAndNetns = true}));
  // Pinned where `ip netns` pins, a shared mount: the agent, in a mount namespace of its own,
  // sees it as a runtime's agent sees /var/run/netns.
  const std::string pinned = "/run/netns/" + uniqueName("hpt");
  { std::ofstream touch(pinned); }
  struct Unpin {
    std::string path;
    ~Unpin() {
      ::umount2(path.c_str(), MNT_DETACH);
      ::unlink(path.c_str());
    }
  } unpin{pinned};
  const std::string source = "/proc/" + std::to_string(sandbox.pid()) + "/ns/net";
  ASSERT_EQ(::mount(source.c_str(), pinned.c_str(), nullptr, MS_BIND, nullptr), 0) << errno;

  ASSERT_OK_AND_ASSIGN(PodCaller caller, PodCaller::connect(pinned, podSocket()));
  std::optional<Result<HttpAnswer>> answer;
  std::thread asker([&] { answer = httpGet(caller.socket(), "/v1/self/ports/web?wait=60s"); });
  const bool parked = logged("server.pod_waiting");
  AllocationRequest request;
  request.key = {"c-userns-pod", "eth0"};
  request.pod = {"games", "userns-pod", "uid-userns-pod"};
  request.netns = pinned;
  request.dynamics.push_back({"web", 7000, 1, PortProtocol::kTcp});
  auto granted = agent_->client().allocate(request);
  asker.join();
  ASSERT_TRUE(parked) << agent_->describe();
  ASSERT_OK(granted);
  ASSERT_TRUE(answer.has_value());
  ASSERT_OK(*answer);
  EXPECT_EQ((*answer)->status, 200u) << (*answer)->body;
  EXPECT_EQ((*answer)->body, std::to_string(granted->ports[0].hostPort) + "\n");
}

TEST_F(AgentPodSocketTest, ACallerWhoseMainThreadHasExitedIsServedUntilItsLastThreadExits) {
  ASSERT_OK(lease(*podA_, "server-a", {"web"}));
  for (const LeaderExit exit : {LeaderExit::kAfterConnect, LeaderExit::kBeforeConnect}) {
    const std::string when = exit == LeaderExit::kAfterConnect
                                 ? "main thread exited after connect"
                                 : "main thread exited before connect";
    ASSERT_OK_AND_ASSIGN(
        PodCaller caller,
        PodCaller::start(podSocket(), {.netnsPath = podA_->path(), .leaderExit = exit}));
    ASSERT_EQ(stateOf(caller.pid()), 'Z') << when << ": the leader must show as a zombie";
    ASSERT_OK_AND_ASSIGN(const auto answer, httpGet(caller.socket(), "/v1/self"));
    EXPECT_EQ(answer.status, 200u) << when << ": " << answer.body;
    EXPECT_EQ(bodyJson(answer)["name"], "server-a") << when;
    // Its last thread gone, the process is: no answer for the pod any more.
    ASSERT_OK(caller.exit());
    ASSERT_OK_AND_ASSIGN(const auto after, httpGet(caller.socket(), "/v1/self"));
    EXPECT_EQ(after.status, 403u) << when << ": " << after.body;
    EXPECT_EQ(bodyJson(after)["code"], "unidentified_caller") << when;
    EXPECT_THAT(after.body, Not(HasSubstr("server-a")));
  }
}

/// The agent's socket directories, made by the agent under `umask 000` and refused when another
/// user may write them (issue 29, item 7).
class AgentSocketDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HOSTPORT_SKIP_UNLESS_ROOT();
    auto started = AgentProcess::start(HOSTPORT_AGENT_PATH, {.reserveLocalPorts = false,
                                                             .privateNetns = true,
                                                             .umask = 0,
                                                             .socketSubdir = "run/hostport"});
    ASSERT_OK(started);
    agent_ = std::move(*started);
    socketDir_ = std::filesystem::path(agent_->socketPath()).parent_path();
    podDir_ = std::filesystem::path(agent_->podSocketPath()).parent_path();
    // Every user may reach them, as on a node: only the directories' own modes protect them.
    ASSERT_EQ(::chmod(socketDir_.parent_path().parent_path().c_str(), 0711), 0);
  }

  std::unique_ptr<AgentProcess> agent_;
  std::filesystem::path socketDir_;
  std::filesystem::path podDir_;
};

TEST_F(AgentSocketDirectoryTest, UnderUmask000NoOtherUserCanReplaceASocket) {
  for (const auto& dir : {socketDir_.parent_path(), socketDir_, podDir_}) {
    struct stat info {};
    ASSERT_EQ(::stat(dir.c_str(), &info), 0) << dir;
    EXPECT_EQ(info.st_mode & 07777, 0755u) << dir;
    EXPECT_EQ(info.st_uid, 0u) << dir;
    EXPECT_EQ(createAsNobody(dir), EACCES) << dir << ": uid 65534 may write it";
  }
  // And the agent still answers root on its socket.
  ASSERT_OK(agent_->client().poolUsage());
}

TEST_F(AgentSocketDirectoryTest, ADirectoryAnotherUserMayWriteStopsTheAgentNamingIt) {
  struct Case {
    std::filesystem::path dir;
    mode_t mode;
    uid_t owner;
    std::string refusal;
  };
  const std::vector<Case> cases = {
      {socketDir_, 0777, 0,
       socketDir_.string() + " is mode 0777 (owner uid 0): others may write it"},
      {podDir_, 0777, 0, podDir_.string() + " is mode 0777 (owner uid 0): others may write it"},
      {podDir_, 0755, 65534,
       podDir_.string() + " is mode 0755 (owner uid 65534): it belongs to another user"},
  };
  for (const auto& entry : cases) {
    ASSERT_OK(agent_->stop());
    ASSERT_EQ(::chmod(entry.dir.c_str(), entry.mode), 0);
    ASSERT_EQ(::chown(entry.dir.c_str(), entry.owner, entry.owner), 0);
    const auto restarted = agent_->restart();
    EXPECT_FALSE(restarted.has_value()) << entry.refusal;
    EXPECT_THAT(agent_->runLog(), HasSubstr(entry.refusal));
    ASSERT_EQ(::chmod(entry.dir.c_str(), 0755), 0);
    ASSERT_EQ(::chown(entry.dir.c_str(), 0, 0), 0);
    ASSERT_OK(agent_->restart()) << "put back, it serves again";
  }
}
}  // namespace
}  // namespace hostport::test
