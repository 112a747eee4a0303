// hostport-admission: the cluster's front door for pods that ask hostport for ports. Reads its
// flags and the agents' pools and hands the run to AdmissionServer (admission_server.h).

#include <CLI/CLI.hpp>

#include "admission/admission_config.h"
#include "admission/admission_server.h"
#include "agent/log/event_log.h"
#include "settings/flags.h"

int main(int argc, char** argv) {
  using namespace hostport;
  namespace log = agent::log;
  CLI::App app{
      "hostport-admission: the admission webhook of hostport. Refuses at creation, in the node's "
      "words, a pod the node would refuse alone (a malformed hostport.io/ports, a pool that does "
      "not exist or does not serve the pod's namespace or protocol, more ports than the pool "
      "allows a pod), and completes pods: the hostport.io/<pool> resource requests the scheduler "
      "counts, and hostport.io/ports for pods written for the hostport-operator. Keeps its own "
      "certificates in a Secret, or serves cert-manager's from files.",
      "hostport-admission"};
  settings::FlagValues flags;
  // Flags only: the one file it reads is the agents' (--config).
  settings::registerFlags(app, admission::admissionSettings(), flags, settings::FileKeys::kHidden);
  CLI11_PARSE(app, argc, argv);

  auto config = admission::resolveAdmissionConfig(flags);
  if (!config) {
    log::event(log::Component::kAdmission, log::Level::kError, "admission.config_invalid",
               {{"cause", config.error().message}});
    return 2;
  }
  log::Options logOptions;
  logOptions.level = *log::parseLevel(config->settings.logLevel);  // resolve checked both
  logOptions.format = *log::parseFormat(config->settings.logFormat);
  log::configure(std::move(logOptions));
  auto server = admission::AdmissionServer::start(std::move(*config));
  if (!server) {
    log::event(log::Component::kAdmission, log::Level::kError, "admission.start_failed",
               {{"cause", server.error().message}});
    return 1;
  }
  return (*server)->serve();
}
