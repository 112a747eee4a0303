#include "agent/store/snapshot.h"

#include <fcntl.h>

#include <charconv>

#include "agent/store/bytes.h"
#include "agent/store/crc32c.h"
#include "agent/store/lease_codec.h"

namespace hostport::agent::store {
namespace {

constexpr std::string_view kSnapshotMagic = "HPSN";
constexpr std::string_view kJournalPrefix = "journal.";
constexpr size_t kSnapshotHeaderBytes = 28;  // magic, version, generation, count, body length
constexpr size_t kSnapshotCrcBytes = 4;

std::unexpected<Error> corrupt(std::string message) {
  return fail(ErrorCode::kDecode, "snapshot: " + std::move(message));
}

/// Compaction step 1: `image` in <dir>/snapshot.tmp, fsynced. The error names the step.
Result<void> writeSnapshotTmp(FileOps& fs, const std::filesystem::path& tmpPath,
                              std::string_view image) {
  auto fd = fs.open(tmpPath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!fd) return withContext(fd.error(), "creating " + tmpPath.string());
  if (auto ok = writeAll(fs, fd->get(), image, 0); !ok) {
    return withContext(ok.error(), "writing " + tmpPath.string());
  }
  if (auto ok = fs.fsync(fd->get()); !ok) {
    return withContext(ok.error(), "fsync of " + tmpPath.string());
  }
  return {};
}

}  // namespace

std::filesystem::path journalPath(const std::filesystem::path& dir, uint64_t generation) {
  return dir / (std::string(kJournalPrefix) + std::to_string(generation));
}

std::optional<uint64_t> parseJournalName(std::string_view name) {
  if (!name.starts_with(kJournalPrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kJournalPrefix.size());
  // Only the canonical spelling: "journal.01" or "journal.+1" are someone else's files.
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  uint64_t generation = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), generation);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return generation;
}

Result<std::string> encodeSnapshot(uint64_t generation, const std::vector<Lease>& leases,
                                   const std::vector<StickyEntry>& sticky) {
  if (leases.size() > UINT32_MAX) return fail(ErrorCode::kInvalidArgument, "too many leases");
  std::string image(kSnapshotMagic);
  bytes::put<uint32_t>(image, kSnapshotFormatVersion);
  bytes::put<uint64_t>(image, generation);
  bytes::put<uint32_t>(image, static_cast<uint32_t>(leases.size()));
  bytes::put<uint64_t>(image, 0);  // body length, patched below
  image.reserve(kSnapshotHeaderBytes + leases.size() * 160);
  std::string lease;
  for (const Lease& each : leases) {
    lease.clear();
    if (auto ok = encodeLease(each, lease); !ok) {
      return withContext(ok.error(), "snapshot of lease " + each.key.str());
    }
    bytes::put<uint32_t>(image, static_cast<uint32_t>(lease.size()));
    image += lease;
  }
  if (sticky.size() > UINT32_MAX) return fail(ErrorCode::kInvalidArgument, "too many pods");
  bytes::put<uint32_t>(image, static_cast<uint32_t>(sticky.size()));
  std::string entry;
  for (const StickyEntry& each : sticky) {
    entry.clear();
    if (auto ok = encodeStickyEntry(each, entry); !ok) {
      return withContext(ok.error(), "snapshot of the sticky memory");
    }
    bytes::put<uint32_t>(image, static_cast<uint32_t>(entry.size()));
    image += entry;
  }
  std::string length;
  bytes::put<uint64_t>(length, image.size() - kSnapshotHeaderBytes);
  image.replace(20, 8, length);
  bytes::put<uint32_t>(image, crc32c(image));
  return image;
}

Result<Snapshot> decodeSnapshot(std::string_view image) {
  if (image.size() < kSnapshotHeaderBytes + kSnapshotCrcBytes) {
    return corrupt("file of " + std::to_string(image.size()) + " bytes is too short");
  }
  if (image.substr(0, 4) != kSnapshotMagic) return corrupt("bad magic: not a hostport snapshot");
  const auto version = bytes::get<uint32_t>(image, 4);
  if (version != kSnapshotFormatVersion) {
    return corrupt("unsupported format version " + std::to_string(version) + " (this agent reads " +
                   std::to_string(kSnapshotFormatVersion) + ")");
  }
  const auto bodyLength = bytes::get<uint64_t>(image, 20);
  if (bodyLength != image.size() - kSnapshotHeaderBytes - kSnapshotCrcBytes) {
    return corrupt("body length " + std::to_string(bodyLength) + " does not match file size " +
                   std::to_string(image.size()));
  }
  const size_t crcAt = image.size() - kSnapshotCrcBytes;
  if (crc32c(image.substr(0, crcAt)) != bytes::get<uint32_t>(image, crcAt)) {
    return corrupt("CRC mismatch");
  }

  Snapshot snapshot;
  snapshot.generation = bytes::get<uint64_t>(image, 8);
  const auto count = bytes::get<uint32_t>(image, 16);
  // Each lease takes at least its 4-byte length, so a count the body cannot hold is rejected
  // before it can size an allocation.
  if (count > bodyLength / 4) return corrupt("lease count " + std::to_string(count) + " too big");
  snapshot.leases.reserve(count);
  size_t at = kSnapshotHeaderBytes;
  for (uint32_t i = 0; i < count; ++i) {
    if (crcAt - at < 4) return corrupt("truncated at lease " + std::to_string(i));
    const auto length = bytes::get<uint32_t>(image, at);
    at += 4;
    if (length > crcAt - at) return corrupt("lease " + std::to_string(i) + " runs past the end");
    auto lease = decodeLease(image.substr(at, length));
    if (!lease) {
      return corrupt("lease " + std::to_string(i) + " at byte offset " + std::to_string(at - 4) +
                     ": " + lease.error().message);
    }
    snapshot.leases.push_back(std::move(*lease));
    at += length;
  }
  if (crcAt - at < 4) return corrupt("truncated before the sticky memory");
  const auto entries = bytes::get<uint32_t>(image, at);
  at += 4;
  if (entries > (crcAt - at) / 4) {
    return corrupt("sticky entry count " + std::to_string(entries) + " too big");
  }
  snapshot.sticky.reserve(entries);
  for (uint32_t i = 0; i < entries; ++i) {
    if (crcAt - at < 4) return corrupt("truncated at sticky entry " + std::to_string(i));
    const auto length = bytes::get<uint32_t>(image, at);
    at += 4;
    if (length > crcAt - at) {
      return corrupt("sticky entry " + std::to_string(i) + " runs past the end");
    }
    auto entry = decodeStickyEntry(image.substr(at, length));
    if (!entry) {
      return corrupt("sticky entry " + std::to_string(i) + " at byte offset " +
                     std::to_string(at - 4) + ": " + entry.error().message);
    }
    snapshot.sticky.push_back(std::move(*entry));
    at += length;
  }
  if (at != crcAt) return corrupt("trailing bytes after " + std::to_string(count) + " leases");
  return snapshot;
}

Result<Snapshot> readSnapshot(FileOps& fs, const std::filesystem::path& dir) {
  const auto path = dir / kSnapshotName;
  HOSTPORT_TRY(UniqueFd fd, fs.open(path, O_RDONLY, 0));
  auto image = readAll(fs, fd.get());
  if (!image) return withContext(image.error(), path.string());
  auto snapshot = decodeSnapshot(*image);
  if (!snapshot) {
    return fail(ErrorCode::kIo, path.string() + ": " + snapshot.error().message +
                                    "; acknowledged leases may be lost, refusing to start "
                                    "(inspect or restore the file)");
  }
  return snapshot;
}

Result<void> writeFirstSnapshot(FileOps& fs, const std::filesystem::path& dir) {
  const auto tmpPath = dir / kSnapshotTmpName;
  const std::string context = "first snapshot of " + dir.string();
  HOSTPORT_TRY(const std::string image, encodeSnapshot(0, {}));
  if (auto ok = writeSnapshotTmp(fs, tmpPath, image); !ok) {
    (void)fs.unlink(tmpPath);
    return withContext(ok.error(), context);
  }
  // Step 3: journal.0's name is durable before the switch, whoever created it.
  if (auto ok = fs.syncDir(dir); !ok) {
    (void)fs.unlink(tmpPath);
    return withContext(ok.error(), context + ": fsync of the directory");
  }
  if (auto ok = fs.rename(tmpPath, dir / kSnapshotName); !ok) {
    return withContext(ok.error(), context + ": installing the snapshot");
  }
  if (auto ok = fs.syncDir(dir); !ok) {
    return withContext(ok.error(), context + ": fsync of the directory");
  }
  return {};
}

std::expected<JournalFile, CompactionError> compact(std::shared_ptr<FileOps> fs,
                                                    const std::filesystem::path& dir,
                                                    uint64_t newGeneration,
                                                    const std::vector<Lease>& leases,
                                                    const std::vector<StickyEntry>& sticky) {
  const auto tmpPath = dir / kSnapshotTmpName;
  const auto newJournalPath = journalPath(dir, newGeneration);
  // Before the rename nothing live has changed: clean up and keep the old generation.
  // `step` empty: the error names its step already.
  auto abandon = [&](Error error, std::string_view step) {
    (void)fs->unlink(tmpPath);
    (void)fs->unlink(newJournalPath);
    error.message = "compaction to generation " + std::to_string(newGeneration) + ": " +
                    (step.empty() ? "" : std::string(step) + ": ") + error.message;
    return std::unexpected(CompactionError{std::move(error), false});
  };

  auto image = encodeSnapshot(newGeneration, leases, sticky);
  if (!image) return abandon(image.error(), "encoding the snapshot");
  if (auto ok = writeSnapshotTmp(*fs, tmpPath, *image); !ok) {
    return abandon(ok.error(), "");
  }
  auto journal = JournalFile::create(fs, newJournalPath, newGeneration);
  if (!journal) return abandon(journal.error(), "creating the new journal");
  if (auto ok = fs->syncDir(dir); !ok) return abandon(ok.error(), "fsync of the directory");

  // From here on, a failure leaves it unknown whether the switch is durable.
  auto uncertain = [&](Error error, std::string_view step) {
    error.message = "compaction to generation " + std::to_string(newGeneration) + ": " +
                    std::string(step) + ": " + error.message;
    return std::unexpected(CompactionError{std::move(error), true});
  };
  if (auto ok = fs->rename(tmpPath, dir / kSnapshotName); !ok) {
    return uncertain(ok.error(), "installing the snapshot");
  }
  if (auto ok = fs->syncDir(dir); !ok) return uncertain(ok.error(), "fsync of the directory");

  // The old journal is now dead weight; startup removes it if this fails or we crash first.
  if (newGeneration > 0) (void)fs->unlink(journalPath(dir, newGeneration - 1));
  return std::move(*journal);
}

}  // namespace hostport::agent::store
