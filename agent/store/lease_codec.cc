#include "agent/store/lease_codec.h"

#include <optional>

#include "agent/store/bytes.h"
#include "lease/lease_flags.h"

namespace hostport::agent::store {
namespace {

constexpr uint8_t kFlagStatic = 0x01;
constexpr uint8_t kFlagHostIp = 0x02;
constexpr uint8_t kKnownFlags = kFlagStatic | kFlagHostIp;
constexpr uint8_t kMaxProtocol = static_cast<uint8_t>(PortProtocol::kTcpUdp);

// The flags byte that ends a lease: lease/lease_flags.h, without the encoding's own bit.
using namespace lease_flags;

/// A port range base..base+count-1 must stay inside 0..65535.
bool rangeFits(uint16_t base, uint16_t count) {
  return count >= 1 && static_cast<uint32_t>(base) + count - 1 <= 0xffff;
}

Result<void> putString(std::string& out, std::string_view field, std::string_view value,
                       size_t bound) {
  if (value.size() > bound) {
    return fail(ErrorCode::kInvalidArgument,
                "lease field " + std::string(field) + " is " + std::to_string(value.size()) +
                    " bytes, more than the " + std::to_string(bound) + " the store accepts");
  }
  bytes::put<uint16_t>(out, static_cast<uint16_t>(value.size()));
  out.append(value);
  return {};
}

void putAddress(std::string& out, const IpAddress& address) {
  out.push_back(static_cast<char>(address.family() == Family::kIPv4 ? 4 : 6));
  const auto bytes = address.bytes();
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void putPrefix(std::string& out, const IpPrefix& prefix) {
  out.push_back(static_cast<char>(prefix.length));
  const auto bytes = prefix.address.bytes();
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Result<void> putForwarding(std::string& out, const Lease& lease) {
  const auto& forwarding = lease.forwarding;
  const uint8_t flags = lease_flags::of(lease);
  out.push_back(static_cast<char>(flags));
  if (forwarding) {
    HOSTPORT_TRY_VOID(putString(out, "forwarding.network", forwarding->network, kMaxStringBytes));
    if (forwarding->podV4) putPrefix(out, *forwarding->podV4);
    if (forwarding->podV6) putPrefix(out, *forwarding->podV6);
    HOSTPORT_TRY_VOID(
        putString(out, "forwarding.conditionsV4", forwarding->conditionsV4, kMaxStringBytes));
    HOSTPORT_TRY_VOID(
        putString(out, "forwarding.conditionsV6", forwarding->conditionsV6, kMaxStringBytes));
  }
  if (lease.netnsId.known()) {
    bytes::put<uint64_t>(out, lease.netnsId.device);
    bytes::put<uint64_t>(out, lease.netnsId.inode);
  }
  return {};
}

Result<void> putLease(std::string& out, const Lease& lease) {
  const std::pair<std::string_view, const std::string*> strings[] = {
      {"key.containerId", &lease.key.containerId},
      {"key.ifname", &lease.key.ifname},
      {"pod.namespaceName", &lease.pod.namespaceName},
      {"pod.name", &lease.pod.name},
      {"pod.uid", &lease.pod.uid},
      {"netns", &lease.netns},
      {"pool", &lease.pool}};
  for (const auto& [field, value] : strings) {
    if (auto ok = putString(out, field, *value, kMaxStringBytes); !ok) return ok;
  }
  if (lease.ports.size() > kMaxPortsPerRequest) {
    return fail(ErrorCode::kInvalidArgument,
                "lease " + lease.key.str() + " has " + std::to_string(lease.ports.size()) +
                    " port rows, more than " + std::to_string(kMaxPortsPerRequest));
  }
  bytes::put<uint16_t>(out, static_cast<uint16_t>(lease.ports.size()));
  for (const PortGrant& grant : lease.ports) {
    if (auto ok = putString(out, "ports.name", grant.name, kMaxGrantNameBytes); !ok) return ok;
    const auto protocol = static_cast<uint8_t>(grant.protocol);
    if (protocol > kMaxProtocol || !rangeFits(grant.hostPort, grant.count) ||
        !rangeFits(grant.containerPort, grant.count)) {
      return fail(ErrorCode::kInvalidArgument,
                  "lease " + lease.key.str() + " has an invalid port row (protocol " +
                      std::to_string(protocol) + ", host port " + std::to_string(grant.hostPort) +
                      ", container port " + std::to_string(grant.containerPort) + ", count " +
                      std::to_string(grant.count) + ")");
    }
    out.push_back(static_cast<char>(protocol));
    bytes::put<uint16_t>(out, grant.hostPort);
    bytes::put<uint16_t>(out, grant.containerPort);
    bytes::put<uint16_t>(out, grant.count);
    const uint8_t flags =
        (grant.isStatic ? kFlagStatic : 0) | (grant.hostIp.has_value() ? kFlagHostIp : 0);
    out.push_back(static_cast<char>(flags));
    if (grant.hostIp) putAddress(out, *grant.hostIp);
  }
  return putForwarding(out, lease);
}

/// Bounds-checked sequential reads. The first failure is remembered with its byte offset; every
/// later read fails too, so callers check once at the end of a group of reads.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool ok() const { return !error_; }
  bool atEnd() const { return pos_ == data_.size(); }
  size_t offset() const { return pos_; }

  template <typename T>
  T integer() {
    if (!need(sizeof(T), "integer")) return 0;
    const T value = bytes::get<T>(data_, pos_);
    pos_ += sizeof(T);
    return value;
  }

  std::string string(size_t bound) {
    const size_t at = pos_;
    const auto length = integer<uint16_t>();
    if (!ok()) return {};
    if (length > bound) {
      setError(
          "string length " + std::to_string(length) + " exceeds bound " + std::to_string(bound),
          at);
      return {};
    }
    if (!need(length, "string")) return {};
    std::string value(data_.substr(pos_, length));
    pos_ += length;
    return value;
  }

  std::string_view raw(size_t length) {
    if (!need(length, "address")) return {};
    const auto value = data_.substr(pos_, length);
    pos_ += length;
    return value;
  }

  void setError(std::string message, size_t at) {
    if (!error_) error_ = message + " at byte " + std::to_string(at);
  }

  std::unexpected<Error> failure(std::string_view what) const {
    return fail(ErrorCode::kDecode, std::string(what) + ": " + error_.value_or("unknown error"));
  }

 private:
  bool need(size_t length, std::string_view what) {
    if (error_) return false;
    if (data_.size() - pos_ < length) {
      setError("truncated " + std::string(what) + " (needs " + std::to_string(length) + " bytes, " +
                   std::to_string(data_.size() - pos_) + " left)",
               pos_);
      return false;
    }
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
  std::optional<std::string> error_;
};

std::optional<IpAddress> readAddress(Reader& in) {
  const size_t at = in.offset();
  const auto family = in.integer<uint8_t>();
  if (!in.ok()) return std::nullopt;
  if (family != 4 && family != 6) {
    in.setError("unknown address family " + std::to_string(family), at);
    return std::nullopt;
  }
  const Family addressFamily = family == 4 ? Family::kIPv4 : Family::kIPv6;
  const auto raw = in.raw(addressSize(addressFamily));
  if (!in.ok()) return std::nullopt;
  return IpAddress::fromBytes(addressFamily,
                              {reinterpret_cast<const uint8_t*>(raw.data()), raw.size()});
}

std::optional<IpPrefix> readPrefix(Reader& in, Family family) {
  const size_t at = in.offset();
  const auto length = in.integer<uint8_t>();
  const auto raw = in.raw(addressSize(family));
  if (!in.ok()) return std::nullopt;
  if (length > addressSize(family) * 8) {
    in.setError("prefix length " + std::to_string(length) + " too long", at);
    return std::nullopt;
  }
  return IpPrefix{
      *IpAddress::fromBytes(family, {reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}),
      length};
}

void readForwarding(Reader& in, Lease& lease) {
  const size_t at = in.offset();
  const auto flags = in.integer<uint8_t>();
  if (!in.ok()) return;
  if ((flags & ~kShared) != 0 ||
      ((flags & kForwarding) == 0 && (flags & ~(kNetnsId | kNotSticky)) != 0)) {
    in.setError("invalid lease flags " + std::to_string(flags), at);
    return;
  }
  lease.sticky = (flags & kNotSticky) == 0;
  if ((flags & kForwarding) != 0) {
    Forwarding forwarding;
    forwarding.network = in.string(kMaxStringBytes);
    forwarding.snat = (flags & kSnat) != 0;
    forwarding.masqAll = (flags & kMasqAll) != 0;
    if ((flags & kPodV4) != 0) forwarding.podV4 = readPrefix(in, Family::kIPv4);
    if ((flags & kPodV6) != 0) forwarding.podV6 = readPrefix(in, Family::kIPv6);
    forwarding.conditionsV4 = in.string(kMaxStringBytes);
    forwarding.conditionsV6 = in.string(kMaxStringBytes);
    if (!in.ok()) return;
    lease.forwarding = std::move(forwarding);
  }
  if ((flags & kNetnsId) != 0) {
    lease.netnsId.device = in.integer<uint64_t>();
    lease.netnsId.inode = in.integer<uint64_t>();
    if (in.ok() && !lease.netnsId.known()) in.setError("netns inode 0", at);
  }
}

void readLease(Reader& in, Lease& lease) {
  std::string* const strings[] = {&lease.key.containerId,
                                  &lease.key.ifname,
                                  &lease.pod.namespaceName,
                                  &lease.pod.name,
                                  &lease.pod.uid,
                                  &lease.netns,
                                  &lease.pool};
  for (std::string* value : strings) *value = in.string(kMaxStringBytes);
  const size_t countAt = in.offset();
  const auto count = in.integer<uint16_t>();
  if (!in.ok()) return;
  if (count > kMaxPortsPerRequest) {
    in.setError("port row count " + std::to_string(count) + " exceeds bound", countAt);
    return;
  }
  lease.ports.reserve(count);
  for (uint16_t i = 0; i < count && in.ok(); ++i) {
    PortGrant grant;
    grant.name = in.string(kMaxGrantNameBytes);
    const size_t rowAt = in.offset();
    const auto protocol = in.integer<uint8_t>();
    grant.hostPort = in.integer<uint16_t>();
    grant.containerPort = in.integer<uint16_t>();
    grant.count = in.integer<uint16_t>();
    const auto flags = in.integer<uint8_t>();
    if (!in.ok()) return;
    if (protocol > kMaxProtocol || (flags & ~kKnownFlags) != 0 ||
        !rangeFits(grant.hostPort, grant.count) || !rangeFits(grant.containerPort, grant.count)) {
      in.setError("invalid port row", rowAt);
      return;
    }
    grant.protocol = static_cast<PortProtocol>(protocol);
    grant.isStatic = (flags & kFlagStatic) != 0;
    if ((flags & kFlagHostIp) != 0) {
      grant.hostIp = readAddress(in);
      if (!in.ok()) return;
    }
    lease.ports.push_back(std::move(grant));
  }
  if (in.ok()) readForwarding(in, lease);
}

}  // namespace

Result<void> encodeLease(const Lease& lease, std::string& out) {
  const size_t mark = out.size();
  auto ok = putLease(out, lease);
  if (!ok) out.resize(mark);
  return ok;
}

Result<Lease> decodeLease(std::string_view data) {
  Reader in(data);
  Lease lease;
  readLease(in, lease);
  if (in.ok() && !in.atEnd()) in.setError("trailing bytes", in.offset());
  if (!in.ok()) return in.failure("lease");
  return lease;
}

Result<void> encodeStickyEntry(const StickyEntry& entry, std::string& out) {
  const size_t mark = out.size();
  const auto refuse = [&](const std::string& why) {
    out.resize(mark);
    return fail(ErrorCode::kInvalidArgument,
                "sticky entry of " + entry.namespaceName + "/" + entry.name + ": " + why);
  };
  if (entry.forget) return refuse("a forgotten pod is not kept");
  if (entry.ports.empty() || entry.ports.size() > kMaxPortsPerRequest) {
    return refuse(std::to_string(entry.ports.size()) + " rows");
  }
  for (const auto& [field, value] : {std::pair{"namespace", &entry.namespaceName},
                                     {"name", &entry.name},
                                     {"pool", &entry.pool}}) {
    if (auto ok = putString(out, field, *value, kMaxStringBytes); !ok)
      return refuse(ok.error().message);
  }
  bytes::put<uint16_t>(out, static_cast<uint16_t>(entry.ports.size()));
  for (const auto& grant : entry.ports) {
    if (auto ok = putString(out, "ports.name", grant.name, kMaxGrantNameBytes); !ok) {
      return refuse(ok.error().message);
    }
    const auto protocol = static_cast<uint8_t>(grant.protocol);
    if (protocol > kMaxProtocol || grant.hostPort == 0 || !rangeFits(grant.hostPort, grant.count)) {
      return refuse("invalid row at host port " + std::to_string(grant.hostPort));
    }
    out.push_back(static_cast<char>(protocol));
    bytes::put<uint16_t>(out, grant.hostPort);
    bytes::put<uint16_t>(out, grant.count);
  }
  return {};
}

Result<StickyEntry> decodeStickyEntry(std::string_view data) {
  Reader in(data);
  StickyEntry entry;
  entry.namespaceName = in.string(kMaxStringBytes);
  entry.name = in.string(kMaxStringBytes);
  entry.pool = in.string(kMaxStringBytes);
  const size_t countAt = in.offset();
  const auto count = in.integer<uint16_t>();
  if (in.ok() && (count == 0 || count > kMaxPortsPerRequest)) {
    in.setError("row count " + std::to_string(count) + " out of bounds", countAt);
  }
  for (uint16_t i = 0; i < count && in.ok(); ++i) {
    PortGrant grant;
    grant.name = in.string(kMaxGrantNameBytes);
    const size_t rowAt = in.offset();
    const auto protocol = in.integer<uint8_t>();
    grant.hostPort = in.integer<uint16_t>();
    grant.count = in.integer<uint16_t>();
    if (!in.ok()) break;
    if (protocol > kMaxProtocol || grant.hostPort == 0 || !rangeFits(grant.hostPort, grant.count)) {
      in.setError("invalid row", rowAt);
      break;
    }
    grant.protocol = static_cast<PortProtocol>(protocol);
    entry.ports.push_back(std::move(grant));
  }
  if (in.ok() && !in.atEnd()) in.setError("trailing bytes", in.offset());
  if (!in.ok()) return in.failure("sticky entry");
  return entry;
}

Result<void> encodeRecord(const JournalRecord& record, std::string& out) {
  const size_t mark = out.size();
  out.push_back(static_cast<char>(kCodecVersion));
  out.push_back(static_cast<char>(record.kind));
  Result<void> ok;
  switch (record.kind) {
    case JournalRecord::Kind::kGrant:
      ok = putLease(out, record.lease);
      break;
    case JournalRecord::Kind::kRelease:
      ok = putString(out, "key.containerId", record.lease.key.containerId, kMaxStringBytes);
      if (ok) ok = putString(out, "key.ifname", record.lease.key.ifname, kMaxStringBytes);
      break;
    default:
      ok = fail(ErrorCode::kInvalidArgument,
                "unknown journal record kind " + std::to_string(static_cast<int>(record.kind)));
  }
  if (!ok) out.resize(mark);
  return ok;
}

Result<JournalRecord> decodeRecord(std::string_view data) {
  Reader in(data);
  const auto version = in.integer<uint8_t>();
  const auto kind = in.integer<uint8_t>();
  if (!in.ok()) return in.failure("journal record");
  if (version != kCodecVersion) {
    return fail(ErrorCode::kDecode, "journal record: unsupported codec version " +
                                        std::to_string(version) + " (this agent reads " +
                                        std::to_string(kCodecVersion) + ")");
  }
  JournalRecord record;
  if (kind == static_cast<uint8_t>(JournalRecord::Kind::kGrant)) {
    record.kind = JournalRecord::Kind::kGrant;
    readLease(in, record.lease);
  } else if (kind == static_cast<uint8_t>(JournalRecord::Kind::kRelease)) {
    record.kind = JournalRecord::Kind::kRelease;
    record.lease.key.containerId = in.string(kMaxStringBytes);
    record.lease.key.ifname = in.string(kMaxStringBytes);
  } else {
    return fail(ErrorCode::kDecode, "journal record: unknown kind " + std::to_string(kind));
  }
  if (in.ok() && !in.atEnd()) in.setError("trailing bytes", in.offset());
  if (!in.ok()) return in.failure("journal record");
  return record;
}

}  // namespace hostport::agent::store
