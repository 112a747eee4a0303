// hostport-agent: owns this node's port pools. Reads its configuration and hands the run to the
// daemon (agent/daemon/daemon.h), which starts everything in order and stops it in reverse.

#include <CLI/CLI.hpp>
#include <utility>

#include "agent/config/agent_config.h"
#include "agent/config/command_line.h"
#include "agent/config/log_options.h"
#include "agent/daemon/daemon.h"
#include "agent/log/event_log.h"

int main(int argc, char** argv) {
  using namespace hostport::agent;
  CLI::App app{
      "hostport-agent: owns this node's host-port pools, allocates ports durably, checks them "
      "against live host sockets, and serves the hostport CNI plugin and hostportctl on a Unix "
      "socket.",
      "hostport-agent"};
  config::CommandLine flags;
  config::registerFlags(app, flags);
  CLI11_PARSE(app, argc, argv);

  log::configure(config::flagLogOptions(flags));
  auto config = config::resolveConfig(flags);
  if (!config) {
    log::event(log::Component::kAgent, log::Level::kError, "agent.config_invalid",
               {{"cause", config.error().message}});
    return 2;
  }
  log::configure(config::logOptions(*config));
  auto run = daemon::Daemon::start(std::move(*config), std::move(flags));
  if (!run) {
    log::event(log::Component::kAgent, log::Level::kError, "agent.start_failed",
               {{"cause", run.error().message}});
    return 1;
  }
  return (*run)->serve();
}
