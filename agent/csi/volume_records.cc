#include "agent/csi/volume_records.h"

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"

namespace hostport::agent::csi {
namespace {

constexpr std::size_t kMaxRecordBytes = 16 << 10;
constexpr std::string_view kSuffix = ".json";

nlohmann::json toJson(const PodVolume& volume) {
  return {{"volumeId", volume.volumeId},
          {"targetPath", volume.target.path.string()},
          {"pod",
           {{"namespace", volume.pod.namespaceName},
            {"name", volume.pod.name},
            {"uid", volume.pod.uid}}}};
}

Result<PodVolume> fromJson(const std::string& text, const std::filesystem::path& kubeletDir) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_object() || !json.contains("pod") || !json["pod"].is_object()) {
    return fail(ErrorCode::kDecode, "not a volume record");
  }
  const auto text_of = [](const nlohmann::json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : std::string{};
  };
  const std::string volumeId = text_of(json, "volumeId");
  HOSTPORT_TRY_VOID(checkVolumeId(volumeId));
  HOSTPORT_TRY(TargetPath target, parseTargetPath(text_of(json, "targetPath"), kubeletDir));
  const nlohmann::json& pod = json["pod"];
  PodIdentity identity{text_of(pod, "namespace"), text_of(pod, "name"), text_of(pod, "uid")};
  if (identity.uid != target.podUid) {
    return fail(ErrorCode::kDecode, "its pod is not its target path's");
  }
  return PodVolume{volumeId, std::move(target), std::move(identity)};
}

}  // namespace

VolumeRecords::VolumeRecords(std::filesystem::path dir, std::filesystem::path kubeletDir)
    : dir_(std::move(dir)), kubeletDir_(std::move(kubeletDir)) {}

Result<void> VolumeRecords::save(const PodVolume& volume) const {
  return writeFileAtomically(dir_, volume.volumeId + std::string(kSuffix),
                             toJson(volume).dump() + "\n", Durability::kDurable);
}

Result<void> VolumeRecords::remove(std::string_view volumeId) const {
  return removeFile(dir_ / (std::string(volumeId) + std::string(kSuffix)));
}

Result<VolumeRecords::Loaded> VolumeRecords::load() const {
  Loaded loaded;
  std::error_code error;
  for (std::filesystem::directory_iterator entry(dir_, error), end; !error && entry != end;
       entry.increment(error)) {
    const std::filesystem::path& path = entry->path();
    const std::string name = path.filename().string();
    if (name.starts_with('.') || !name.ends_with(kSuffix)) continue;  // a temporary file
    auto text = readSmallFile(path, kMaxRecordBytes);
    if (!text || !*text) {
      loaded.skipped.push_back(
          text ? Error{ErrorCode::kNotFound, path.string() + " is gone", {}, {}}
               : withContext(text.error(), "cannot read " + path.string()).error());
      continue;
    }
    auto volume = fromJson(**text, kubeletDir_);
    if (!volume) {
      loaded.skipped.push_back(withContext(volume.error(), path.string()).error());
      continue;
    }
    loaded.volumes.push_back(std::move(*volume));
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    return failSystem(ErrorCode::kIo, "list " + dir_.string(), error.value());
  }
  return loaded;
}

}  // namespace hostport::agent::csi
