#pragma once
// The published volumes, one small file each in <stateDir>/csi-volumes/<volume id>.json, so an
// agent that restarts serves each pod's socket and writes its files again: the kubelet does not
// publish a mounted volume twice. Written durably before NodePublishVolume answers, removed once
// NodeUnpublishVolume has cleaned up.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "agent/csi/pod_volume.h"
#include "common/error.h"

namespace hostport::agent::csi {

class VolumeRecords {
 public:
  /// Records under `dir`, checked against `kubeletDir` when read back.
  VolumeRecords(std::filesystem::path dir, std::filesystem::path kubeletDir);

  Result<void> save(const PodVolume& volume) const;
  /// A record that is not there is success.
  Result<void> remove(std::string_view volumeId) const;

  struct Loaded {
    std::vector<PodVolume> volumes;
    std::vector<Error> skipped;  // records that could not be read or do not hold a volume
  };
  /// Every record; none when the directory does not exist yet.
  Result<Loaded> load() const;

 private:
  std::filesystem::path dir_;
  std::filesystem::path kubeletDir_;
};

}  // namespace hostport::agent::csi
