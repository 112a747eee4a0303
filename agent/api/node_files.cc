#include "agent/api/node_files.h"

#include <algorithm>

#include "agent/api/json_codec.h"
#include "common/atomic_file.h"
#include "common/identifiers.h"

namespace hostport::agent::api {
namespace {

constexpr std::size_t kMaxRecordBytes = 256 * 1024;  // a lease of 256 rows is ~40 KiB of JSON
constexpr std::size_t kMaxNoteBytes = 4096;

template <typename T>
Result<T> decodeFile(const std::filesystem::path& path, const std::string& text,
                     Result<T> (*decode)(const nlohmann::json&)) {
  auto body = parseBody(text, kMaxRecordBytes);
  auto decoded = body ? decode(*body) : Result<T>(std::unexpected(body.error()));
  if (!decoded) {
    Error error = decoded.error();
    error.code = ErrorCode::kDecode;
    return withContext(std::move(error), path.string());
  }
  return decoded;
}

}  // namespace

Result<std::string> nodeFileName(const AttachmentKey& key) {
  if (!isContainerId(key.containerId) || !isIfname(key.ifname)) {
    return fail(ErrorCode::kInvalidArgument, "attachment " + key.str() +
                                                 " cannot name a file: its container ID or ifname "
                                                 "breaks the CNI grammar");
  }
  return key.containerId + ":" + key.ifname;
}

Result<void> writeAttachmentRecord(const std::filesystem::path& dir, const Lease& lease) {
  HOSTPORT_TRY(const std::string name, nodeFileName(lease.key));
  return writeFileAtomically(dir, name, dumpBody(toJson(lease)), Durability::kCache);
}

Result<std::optional<Lease>> readAttachmentRecord(const std::filesystem::path& dir,
                                                  const AttachmentKey& key) {
  HOSTPORT_TRY(const std::string name, nodeFileName(key));
  HOSTPORT_TRY(const auto text, readSmallFile(dir / name, kMaxRecordBytes));
  if (!text) return std::nullopt;
  HOSTPORT_TRY(Lease lease, decodeFile<Lease>(dir / name, *text, leaseFromJson));
  if (lease.key != key) {
    return fail(ErrorCode::kDecode, (dir / name).string() + " holds the lease of " +
                                        lease.key.str() + ", not of " + key.str());
  }
  return lease;
}

Result<void> removeAttachmentRecord(const std::filesystem::path& dir, const AttachmentKey& key) {
  HOSTPORT_TRY(const std::string name, nodeFileName(key));
  return removeFile(dir / name);
}

Result<void> writeReleaseNote(const std::filesystem::path& spool, const AttachmentKey& key) {
  HOSTPORT_TRY(const std::string name, nodeFileName(key));
  return writeFileAtomically(spool, name, dumpBody(toJson(key)), Durability::kDurable);
}

Result<std::vector<ReleaseNote>> readReleaseNotes(const std::filesystem::path& spool) {
  std::vector<ReleaseNote> notes;
  std::error_code error;
  std::filesystem::directory_iterator entries(spool, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return notes;
    return failSystem(ErrorCode::kIo, "read " + spool.string(), error.value());
  }
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) continue;  // a note being written
    auto text = readSmallFile(entry.path(), kMaxNoteBytes);
    if (!text || !*text) {
      notes.push_back({entry.path(), text ? fail(ErrorCode::kNotFound, "gone while read")
                                          : std::unexpected(text.error())});
      continue;
    }
    notes.push_back(
        {entry.path(), decodeFile<AttachmentKey>(entry.path(), **text, attachmentKeyFromJson)});
  }
  std::ranges::sort(notes, {}, &ReleaseNote::path);
  return notes;
}

}  // namespace hostport::agent::api
