#pragma once
// The hostport.io volumes this node has published, and what keeps each one true: its files
// follow its pod's leases, its socket serves while it is published, and its record lets a
// restarted agent take it up again.
//
// When the files are written:
// - at NodePublishVolume, from the pod's leases then (none yet, as a rule: the kubelet mounts
//   volumes before it creates the sandbox);
// - at each grant of a lease of the pod, before the grant is answered
//   (AgentService::LeaseObserver::grantedBeforeAnswer): the runtime starts the containers once
//   ADD is answered, so they find their ports at their first start; and at each release;
// - at restore() and, for a volume whose last write failed, at each sweep().
// One mutex orders them: a grant either finds the volume published, or the publish that comes
// after it reads the lease it made.
//
// A volume the kubelet tore down without an unpublish (its directory gone: the kubelet removed
// the pod's) is forgotten by sweep().

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "agent/csi/pod_volume.h"
#include "agent/csi/volume_records.h"
#include "agent/server/pod_server.h"
#include "common/error.h"
#include "common/prometheus_text.h"
#include "lease/lease.h"

namespace hostport::agent::csi {

/// The live leases of a pod, by UID (service::podLeases()).
using PodLeases = std::function<std::vector<Lease>(const std::string& podUid)>;
/// Serves the pod socket's API at a path for one pod (server::PodServer::serveVolume()).
using ServeVolumeSocket = std::function<Result<std::unique_ptr<server::VolumeSocket>>(
    const std::string& path, const std::string& podUid)>;

class PodVolumes {
 public:
  PodVolumes(PodLeases leases, ServeVolumeSocket serveSocket, VolumeRecords records);
  ~PodVolumes();
  PodVolumes(const PodVolumes&) = delete;
  PodVolumes& operator=(const PodVolumes&) = delete;

  /// Takes up the recorded volumes: each whose directory is still there is served and written
  /// again, each whose directory is gone is forgotten. Logs csi.restored.
  void restore();

  /// NodePublishVolume: makes the directory, writes the files, serves the socket and records the
  /// volume, or undoes what it did and fails. Idempotent: the same volume again is success; the
  /// same id at another path, or another volume at its path, is kConflict.
  Result<void> publish(const PodVolume& volume);
  /// NodeUnpublishVolume: closes the socket, removes the files and the directory, forgets the
  /// volume. A volume not published is success once its directory is cleaned (an unpublish the
  /// agent may have half done before a crash).
  Result<void> unpublish(std::string_view volumeId, const TargetPath& target);

  /// A lease of `lease.pod` was granted or released: rewrites its pod's volumes' files.
  void leaseChanged(const Lease& lease);

  /// Forgets the volumes whose directory is gone, and writes again the files whose last write
  /// failed.
  void sweep();

  /// hostport_csi_volumes and hostport_csi_file_write_failures_total.
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  struct Published;

  /// Writes `published`'s files from its pod's leases; logs a failure and marks it for sweep().
  void refresh(Published& published);
  /// Closes the socket and removes the directory and the record.
  Result<void> tearDown(std::string_view volumeId, const std::filesystem::path& target);

  PodLeases leases_;
  ServeVolumeSocket serveSocket_;
  VolumeRecords records_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Published>, std::less<>> volumes_;  // by volume id
  uint64_t writeFailures_ = 0;                                              // under mutex_
};

}  // namespace hostport::agent::csi
