#include "agent/csi/pod_volumes.h"

#include <sys/stat.h>

#include "agent/csi/volume_files.h"
#include "agent/log/event_log.h"
#include "common/scope_exit.h"

namespace hostport::agent::csi {
namespace {

using log::Component;
using log::Level;

std::string podText(const PodIdentity& pod) { return pod.namespaceName + "/" + pod.name; }

/// The volume's directory's parent, which the kubelet makes for the volume and removes with it.
bool kubeletKeepsVolume(const TargetPath& target) {
  struct stat info {};
  return ::lstat(target.path.parent_path().c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

struct PodVolumes::Published {
  PodVolume volume;
  std::unique_ptr<server::VolumeSocket> socket;
  bool stale = false;  // its last write failed: sweep() writes it again
};

PodVolumes::PodVolumes(PodLeases leases, ServeVolumeSocket serveSocket, VolumeRecords records)
    : leases_(std::move(leases)),
      serveSocket_(std::move(serveSocket)),
      records_(std::move(records)) {}

PodVolumes::~PodVolumes() = default;

void PodVolumes::restore() {
  auto loaded = records_.load();
  if (!loaded) {
    log::event(Component::kCsi, Level::kError, "csi.records_unreadable",
               {{"cause", loaded.error().message}});
    return;
  }
  for (const Error& skipped : loaded->skipped) {
    log::event(Component::kCsi, Level::kWarn, "csi.record_skipped", {{"cause", skipped.message}});
  }
  std::size_t restored = 0, forgotten = 0;
  for (const PodVolume& volume : loaded->volumes) {
    if (!kubeletKeepsVolume(volume.target)) {
      ++forgotten;
      (void)records_.remove(volume.volumeId);
      continue;
    }
    if (auto published = publish(volume); !published) {
      log::event(Component::kCsi, Level::kError, "csi.restore_failed",
                 {{"volume", volume.volumeId},
                  {"pod", podText(volume.pod)},
                  {"cause", published.error().message}});
      continue;
    }
    ++restored;
  }
  log::event(Component::kCsi, Level::kInfo, "csi.restored",
             {{"volumes", restored}, {"forgotten", forgotten}});
}

Result<void> PodVolumes::publish(const PodVolume& volume) {
  std::lock_guard lock(mutex_);
  if (const auto found = volumes_.find(volume.volumeId); found != volumes_.end()) {
    if (found->second->volume == volume) return {};
    return fail(ErrorCode::kConflict, "volume " + volume.volumeId + " is published at " +
                                          found->second->volume.target.path.string() + " for pod " +
                                          podText(found->second->volume.pod) + ", not at " +
                                          volume.target.path.string());
  }
  for (const auto& [id, published] : volumes_) {
    if (published->volume.target.path == volume.target.path) {
      return fail(ErrorCode::kConflict,
                  volume.target.path.string() + " is already volume " + id + "'s target path");
    }
  }
  HOSTPORT_TRY_VOID(makeVolumeDirectory(volume.target.path));
  bool done = false;
  ScopeExit undo([&] {
    if (!done) (void)removeVolumeDirectory(volume.target.path);
  });
  auto published = std::make_unique<Published>(Published{volume, nullptr});
  if (auto written = writePortFiles(volume.target.path, volume.pod, leases_(volume.pod.uid));
      !written) {
    return withContext(written.error(), "cannot write the volume's port files");
  }
  if (serveSocket_) {
    auto socket = serveSocket_((volume.target.path / kPodSocketFile).string(), volume.pod.uid);
    if (!socket) return withContext(socket.error(), "cannot serve the volume's pod socket");
    published->socket = std::move(*socket);
  }
  if (auto recorded = records_.save(volume); !recorded) {
    return withContext(recorded.error(), "cannot record the volume");
  }
  done = true;
  volumes_.emplace(volume.volumeId, std::move(published));
  log::event(Component::kCsi, Level::kInfo, "csi.published",
             {{"volume", volume.volumeId},
              {"pod", podText(volume.pod)},
              {"uid", volume.pod.uid},
              {"target", volume.target.path.string()}});
  return {};
}

Result<void> PodVolumes::unpublish(std::string_view volumeId, const TargetPath& target) {
  std::lock_guard lock(mutex_);
  const auto found = volumes_.find(volumeId);
  if (found != volumes_.end() && found->second->volume.target.path != target.path) {
    return fail(ErrorCode::kConflict, "volume " + std::string(volumeId) + " is published at " +
                                          found->second->volume.target.path.string() + ", not at " +
                                          target.path.string());
  }
  for (const auto& [id, published] : volumes_) {
    if (id != volumeId && published->volume.target.path == target.path) {
      return fail(ErrorCode::kConflict, target.path.string() + " is volume " + id +
                                            "'s target path, not volume " + std::string(volumeId) +
                                            "'s");
    }
  }
  const bool known = found != volumes_.end();
  HOSTPORT_TRY_VOID(tearDown(volumeId, target.path));
  log::event(Component::kCsi, Level::kInfo, "csi.unpublished",
             {{"volume", volumeId}, {"uid", target.podUid}, {"known", known}});
  return {};
}

Result<void> PodVolumes::tearDown(std::string_view volumeId, const std::filesystem::path& target) {
  if (const auto found = volumes_.find(volumeId); found != volumes_.end()) {
    found->second->socket.reset();  // stops accepting and removes pod.sock
    volumes_.erase(found);
  }
  HOSTPORT_TRY_VOID(removeVolumeDirectory(target));
  return records_.remove(volumeId);
}

void PodVolumes::leaseChanged(const Lease& lease) {
  const std::string_view hostNetworkUid = lease.key.hostNetworkPodUid();
  std::lock_guard lock(mutex_);
  for (auto& [id, published] : volumes_) {
    const std::string& uid = published->volume.pod.uid;
    if (uid == lease.pod.uid || uid == hostNetworkUid) refresh(*published);
  }
}

void PodVolumes::refresh(Published& published) {
  const PodVolume& volume = published.volume;
  auto written = writePortFiles(volume.target.path, volume.pod, leases_(volume.pod.uid));
  if (written) {
    published.stale = false;
    return;
  }
  ++writeFailures_;
  published.stale = true;
  log::event(Component::kCsi, Level::kError, "csi.write_failed",
             {{"volume", volume.volumeId},
              {"pod", podText(volume.pod)},
              {"cause", written.error().message}});
}

void PodVolumes::sweep() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> gone;
  for (auto& [id, published] : volumes_) {
    if (!kubeletKeepsVolume(published->volume.target)) {
      gone.push_back(id);
    } else if (published->stale) {
      refresh(*published);
    }
  }
  for (const std::string& id : gone) {
    const PodVolume volume = volumes_.at(id)->volume;
    auto removed = tearDown(id, volume.target.path);
    log::event(Component::kCsi, Level::kInfo, "csi.swept",
               {{"volume", id},
                {"pod", podText(volume.pod)},
                {"cause", "its directory is gone, with no unpublish"},
                {"record_removed", removed.has_value()}});
  }
}

void PodVolumes::writeMetrics(prometheus::TextWriter& out) const {
  std::lock_guard lock(mutex_);
  out.family("hostport_csi_volumes", prometheus::Type::kGauge,
             "hostport.io CSI volumes published on this node.");
  out.sample("hostport_csi_volumes", static_cast<uint64_t>(volumes_.size()));
  out.family("hostport_csi_file_write_failures_total", prometheus::Type::kCounter,
             "Writes of a volume's ports.json and ports.env that failed (retried by the sweep).");
  out.sample("hostport_csi_file_write_failures_total", writeFailures_);
}

}  // namespace hostport::agent::csi
