#include "agent/csi/csi_driver.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "agent/csi/csi_services.h"
#include "agent/csi/registration_service.h"
#include "agent/log/event_log.h"
#include "agent/server/socket_directory.h"

namespace hostport::agent::csi {
namespace {

using log::Component;
using log::Level;

/// Calls under way at shutdown get this long to finish.
constexpr std::chrono::seconds kShutdownGrace{2};

/// A gRPC server on the Unix socket `path` alone: its directory made (0750) or checked, a stale
/// socket removed (the agent's state dir lock says no other agent runs), the socket 0600.
Result<std::unique_ptr<grpc::Server>> serveOn(const std::filesystem::path& path,
                                              const std::vector<grpc::Service*>& services) {
  HOSTPORT_TRY_VOID(server::prepareSocketDirectory(path.parent_path(), 0750));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return failSystem(ErrorCode::kIo, "remove the stale socket " + path.string(), errno);
  }
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + path.string(), grpc::InsecureServerCredentials(), &bound);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) {
    return fail(ErrorCode::kIo, "cannot serve gRPC on " + path.string());
  }
  if (::chmod(path.c_str(), 0600) != 0) {
    server->Shutdown();
    return failSystem(ErrorCode::kIo, "chmod " + path.string(), errno);
  }
  return server;
}

}  // namespace

std::filesystem::path csiSocketPath(const std::filesystem::path& kubeletDir) {
  return kubeletDir / "plugins" / std::string(kDriverName) / "csi.sock";
}

std::filesystem::path registrationSocketPath(const std::filesystem::path& kubeletDir) {
  return kubeletDir / "plugins_registry" / (std::string(kDriverName) + "-reg.sock");
}

struct CsiDriver::Servers {
  Servers(PodVolumes& volumes, const CsiDriverOptions& options, AwaitPodLeases await)
      : identity(counts),
        node(volumes, counts, options.kubeletDir, options.nodeId, std::move(await)),
        registration(csiSocketPath(options.kubeletDir).string()) {}

  ~Servers() {
    // The registration first: the kubelet stops finding the driver before it stops answering.
    for (auto* server : {registrationServer.get(), csiServer.get()}) {
      if (server == nullptr) continue;
      server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
      server->Wait();
    }
    ::unlink(registrationPath.c_str());
    ::unlink(csiPath.c_str());
  }

  CallCounts counts;
  IdentityService identity;
  NodeService node;
  RegistrationService registration;
  std::filesystem::path csiPath;
  std::filesystem::path registrationPath;
  std::unique_ptr<grpc::Server> csiServer;
  std::unique_ptr<grpc::Server> registrationServer;
};

CsiDriver::CsiDriver(std::unique_ptr<PodVolumes> volumes, CsiDriverOptions options)
    : options_(std::move(options)), volumes_(std::move(volumes)) {}

void CsiDriver::stopServing() {
  servers_.reset();
  if (sweeper_.joinable()) {
    sweeper_.request_stop();
    sweeper_.join();
  }
}

CsiDriver::~CsiDriver() { stopServing(); }

std::unique_ptr<CsiDriver> CsiDriver::open(PodLeases leases, ServeVolumeSocket serveSocket,
                                           CsiDriverOptions options) {
  auto volumes = std::make_unique<PodVolumes>(
      std::move(leases), std::move(serveSocket),
      VolumeRecords(options.stateDir / "csi-volumes", options.kubeletDir));
  volumes->restore();
  return std::unique_ptr<CsiDriver>(new CsiDriver(std::move(volumes), std::move(options)));
}

Result<void> CsiDriver::serve(AwaitPodLeases await) {
  auto servers = std::make_unique<Servers>(*volumes_, options_, std::move(await));
  servers->csiPath = csiSocketPath(options_.kubeletDir);
  servers->registrationPath = registrationSocketPath(options_.kubeletDir);
  HOSTPORT_TRY(servers->csiServer, serveOn(servers->csiPath, {&servers->identity, &servers->node}));
  HOSTPORT_TRY(servers->registrationServer,
               serveOn(servers->registrationPath, {&servers->registration}));
  servers_ = std::move(servers);
  sweeper_ =
      std::jthread([volumes = volumes_.get(), every = options_.sweepEvery](std::stop_token stop) {
        std::mutex mutex;
        std::condition_variable_any wake;
        std::unique_lock lock(mutex);
        while (!stop.stop_requested()) {
          wake.wait_for(lock, stop, every, [] { return false; });
          if (!stop.stop_requested()) volumes->sweep();
        }
      });
  log::event(Component::kCsi, Level::kInfo, "csi.serving",
             {{"driver", kDriverName},
              {"socket", servers_->csiPath.string()},
              {"registration", servers_->registrationPath.string()},
              {"node", options_.nodeId}});
  return {};
}

void CsiDriver::leaseChanged(const Lease& lease) { volumes_->leaseChanged(lease); }

void CsiDriver::writeMetrics(prometheus::TextWriter& out) const {
  if (servers_) {  // the metrics serve only after serve(), but say nothing wrong before it
    servers_->registration.writeMetrics(out);
    servers_->counts.writeMetrics(out);
  }
  volumes_->writeMetrics(out);
}

}  // namespace hostport::agent::csi
