#include "tests/support/agent_process.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "agent/api/routes.h"

namespace hostport::test {
namespace {

std::string socketDir(const TempDir& dir, const AgentOptions& options) {
  return options.socketSubdir.empty() ? dir.path() : (dir / options.socketSubdir).string();
}

}  // namespace

AgentProcess::AgentProcess(TempDir dir, std::string binaryPath, std::string netnsPath,
                           AgentOptions options)
    : dir_(std::move(dir)),
      binaryPath_(std::move(binaryPath)),
      netnsPath_(std::move(netnsPath)),
      options_(std::move(options)),
      socketPath_(socketDir(dir_, options_) + "/agent.sock"),
      podSocketPath_(socketDir(dir_, options_) + "/pod/pod.sock"),
      stateDir_(options_.stateDir.empty() ? dir_.path() + "/state" : options_.stateDir),
      releaseSpool_(dir_.path() + "/released"),
      logPath_(dir_.path() + "/agent.log"),
      configPath_(options_.configYaml.empty() ? std::string() : dir_.path() + "/agent.yaml"),
      server_({.name = "hostport-agent (socket " + socketPath_ + ")",
               .argv = commandLine(),
               .netnsPath = netnsPath_,
               .logPath = logPath_,
               .ready = [this]() -> Result<void> {
                 auto answer =
                     client(std::chrono::milliseconds{500}).getText(agent::api::kReadyzPath);
                 if (!answer) return std::unexpected(std::move(answer).error());
                 return {};
               },
               .umask = options_.umask,
               .readyTimeout = options_.readyTimeout,
               .stopTimeout = options_.stopTimeout}) {}

AgentProcess::~AgentProcess() = default;

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(std::string binaryPath,
                                                          const Netns& netns,
                                                          AgentOptions options) {
  if (options.privateNetns) {
    return fail(ErrorCode::kInvalidArgument,
                "AgentOptions::privateNetns asks for a netns of its own, yet " + netns.name() +
                    " was given");
  }
  return start(std::move(binaryPath), netns.path(), std::move(options));
}

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(std::string binaryPath,
                                                          AgentOptions options) {
  if (!options.privateNetns) {
    return fail(ErrorCode::kInvalidArgument,
                "an agent without a Netns needs AgentOptions::privateNetns: it must not run in "
                "the host's netns");
  }
  return start(std::move(binaryPath), std::string(), std::move(options));
}

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(std::string binaryPath,
                                                          std::string netnsPath,
                                                          AgentOptions options) {
  HOSTPORT_TRY(auto dir, TempDir::create());
  std::unique_ptr<AgentProcess> agent(new AgentProcess(std::move(dir), std::move(binaryPath),
                                                       std::move(netnsPath), std::move(options)));
  if (!agent->configPath_.empty()) {
    std::ofstream file(agent->configPath_);
    file << agent->options_.configYaml;
    file.close();
    if (!file) return fail(ErrorCode::kIo, "cannot write " + agent->configPath_);
  }
  HOSTPORT_TRY_VOID(agent->server_.start());
  return agent;
}

std::vector<std::string> AgentProcess::commandLine() const {
  std::vector<std::string> args{binaryPath_, "--state-dir", stateDir_, "--socket", socketPath_,
                                "--pod-socket", podSocketPath_, "--log-level", options_.logLevel,
                                "--release-spool", releaseSpool_,
                                // Tests write their own conflists: never the machine's net.d.
                                "--chain-cni", "false"};
  if (!options_.portRange.empty()) {
    args.insert(args.end(), {"--port-range", options_.portRange});
  }
  if (!configPath_.empty()) args.insert(args.end(), {"--config", configPath_});
  if (!options_.reserveLocalPorts) args.push_back("--reserve-local-ports=false");
  args.insert(args.end(), options_.extraArgs.begin(), options_.extraArgs.end());
  return args;
}

agent::api::AgentClient AgentProcess::client(std::chrono::milliseconds timeout) const {
  return agent::api::AgentClient::forSocket(socketPath_, timeout);
}

std::string agentUnderTest(const std::string& builtPath) {
  const char* override = std::getenv("HOSTPORT_TEST_AGENT");
  return override && *override ? override : builtPath;
}

}  // namespace hostport::test
