#include "agent/store/journal_file.h"

#include <fcntl.h>

#include <optional>

#include "agent/store/bytes.h"
#include "agent/store/crc32c.h"
#include "agent/store/lease_codec.h"

namespace hostport::agent::store {
namespace {

constexpr std::string_view kJournalMagic = "HPJL";

/// Why the frame at `at` is not a good record, or nullopt when it is one.
std::optional<std::string> frameProblem(std::string_view file, uint64_t at) {
  const uint64_t left = file.size() - at;
  if (left < kFrameHeaderBytes) return "short frame header (" + std::to_string(left) + " bytes)";
  const auto length = bytes::get<uint32_t>(file, at);
  if (length == 0 || length > kMaxRecordBytes) {
    return "invalid record length " + std::to_string(length);
  }
  if (length > left - kFrameHeaderBytes) {
    return "record of " + std::to_string(length) + " bytes runs past the end of the file";
  }
  const auto stored = bytes::get<uint32_t>(file, at + 4);
  if (crc32c(file.substr(at + kFrameHeaderBytes, length)) != stored) return "CRC mismatch";
  return std::nullopt;
}

/// The first offset after `from` where a good frame starts, if any. Only runs when a bad frame
/// was found, and normally stops at the next record boundary (a mid-file corruption) or scans a
/// short tail (a torn final append).
std::optional<uint64_t> findGoodFrame(std::string_view file, uint64_t from) {
  for (uint64_t at = from; at + kFrameHeaderBytes <= file.size(); ++at) {
    if (!frameProblem(file, at)) return at;
  }
  return std::nullopt;
}

Error ioError(std::string_view name, std::string message) {
  return Error{ErrorCode::kIo, "journal " + std::string(name) + ": " + std::move(message), {}};
}

}  // namespace

std::string journalHeader(uint64_t generation) {
  std::string header(kJournalMagic);
  bytes::put<uint32_t>(header, kJournalFormatVersion);
  bytes::put<uint64_t>(header, generation);
  return header;
}

void appendFrame(std::string& out, std::string_view payload) {
  bytes::put<uint32_t>(out, static_cast<uint32_t>(payload.size()));
  bytes::put<uint32_t>(out, crc32c(payload));
  out.append(payload);
}

void sealFrame(std::string& frame) {
  const std::string_view payload = std::string_view(frame).substr(kFrameHeaderBytes);
  std::string header;
  bytes::put<uint32_t>(header, static_cast<uint32_t>(payload.size()));
  bytes::put<uint32_t>(header, crc32c(payload));
  frame.replace(0, kFrameHeaderBytes, header);
}

Result<JournalScan> scanFrames(std::string_view file, uint64_t start, std::string_view name,
                               const RecordSink& sink) {
  JournalScan scan;
  uint64_t at = start;
  while (at < file.size()) {
    if (auto problem = frameProblem(file, at)) {
      if (auto next = findGoodFrame(file, at + 1)) {
        return std::unexpected(ioError(
            name, "corrupt record at byte offset " + std::to_string(at) + " (" + *problem +
                      ") followed by a valid record at byte offset " + std::to_string(*next) +
                      "; acknowledged leases may be damaged, refusing to start (inspect or "
                      "restore the file)"));
      }
      scan.tornTail = true;
      scan.tornBytes = file.size() - at;
      break;
    }
    const auto length = bytes::get<uint32_t>(file, at);
    if (auto ok = sink(file.substr(at + kFrameHeaderBytes, length), at); !ok) {
      return std::unexpected(ioError(name, "record at byte offset " + std::to_string(at) +
                                               " is unreadable: " + ok.error().message));
    }
    ++scan.records;
    at += kFrameHeaderBytes + length;
  }
  scan.validEnd = at;
  return scan;
}

Result<JournalFile> JournalFile::create(std::shared_ptr<FileOps> fs, std::filesystem::path path,
                                        uint64_t generation) {
  HOSTPORT_TRY(UniqueFd fd, fs->open(path, O_RDWR | O_CREAT | O_TRUNC, 0600));
  const std::string header = journalHeader(generation);
  if (auto ok = writeAll(*fs, fd.get(), header, 0); !ok) {
    return withContext(ok.error(), "journal " + path.string());
  }
  if (auto ok = fs->fsync(fd.get()); !ok) {
    return withContext(ok.error(), "journal " + path.string());
  }
  return JournalFile(std::move(fs), std::move(fd), std::move(path), generation, header.size());
}

Result<JournalFile::Opened> JournalFile::open(std::shared_ptr<FileOps> fs,
                                              std::filesystem::path path, uint64_t generation,
                                              TornCreation torn, const RecordSink& sink) {
  const std::string name = path.string();
  HOSTPORT_TRY(UniqueFd fd, fs->open(path, O_RDWR, 0));
  auto image = readAll(*fs, fd.get());
  if (!image) return withContext(image.error(), "journal " + name);

  if (image->size() < kJournalHeaderBytes && torn == TornCreation::kImpossible) {
    return std::unexpected(ioError(
        name, "is " + std::to_string(image->size()) + " bytes long, shorter than its " +
                  std::to_string(kJournalHeaderBytes) +
                  "-byte header, which was on disk before the journal became live: it was "
                  "emptied or cut since, and acknowledged leases may be lost; refusing to start "
                  "(inspect or restore the file)"));
  }
  if (image->size() < kJournalHeaderBytes) {
    // Not yet live (see TornCreation): no record was ever acknowledged here, so start it over.
    const uint64_t tornBytes = image->size();
    const std::string header = journalHeader(generation);
    if (auto ok = fs->ftruncate(fd.get(), 0); !ok) return withContext(ok.error(), name);
    if (auto ok = writeAll(*fs, fd.get(), header, 0); !ok) return withContext(ok.error(), name);
    if (auto ok = fs->fsync(fd.get()); !ok) return withContext(ok.error(), name);
    JournalScan scan{.validEnd = header.size(), .tornTail = tornBytes > 0, .tornBytes = tornBytes};
    return Opened{
        JournalFile(std::move(fs), std::move(fd), std::move(path), generation, header.size()),
        scan};
  }

  const std::string_view file = *image;
  if (file.substr(0, 4) != kJournalMagic) {
    return std::unexpected(ioError(name, "bad magic: not a hostport journal"));
  }
  if (const auto version = bytes::get<uint32_t>(file, 4); version != kJournalFormatVersion) {
    return std::unexpected(
        ioError(name, "unsupported journal format version " + std::to_string(version)));
  }
  if (const auto stored = bytes::get<uint64_t>(file, 8); stored != generation) {
    return std::unexpected(ioError(name, "header says generation " + std::to_string(stored) +
                                             ", the file name says " + std::to_string(generation)));
  }

  HOSTPORT_TRY(const JournalScan scan, scanFrames(file, kJournalHeaderBytes, name, sink));
  if (scan.tornTail) {
    if (auto ok = fs->ftruncate(fd.get(), scan.validEnd); !ok) {
      return withContext(ok.error(), "journal " + name + ": dropping torn tail");
    }
    if (auto ok = fs->fsync(fd.get()); !ok) {
      return withContext(ok.error(), "journal " + name + ": dropping torn tail");
    }
  }
  const uint64_t end = scan.validEnd;
  return Opened{JournalFile(std::move(fs), std::move(fd), std::move(path), generation, end), scan};
}

Result<void> JournalFile::append(std::string_view frames) {
  if (auto ok = writeAll(*fs_, fd_.get(), frames, size_); !ok) {
    return withContext(ok.error(),
                       "journal " + path_.string() + " at byte offset " + std::to_string(size_));
  }
  size_ += frames.size();
  return {};
}

Result<void> JournalFile::sync() {
  if (auto ok = fs_->fdatasync(fd_.get()); !ok) {
    return withContext(ok.error(), "journal " + path_.string());
  }
  return {};
}

}  // namespace hostport::agent::store
