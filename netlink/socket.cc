#include "netlink/socket.h"

#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "netlink/attributes.h"

namespace hostport::netlink {
namespace {

// The kernel sizes a dump's messages by the buffer the reader offers, capped near 32 KiB; twice
// that leaves room, and a truncated datagram (MSG_TRUNC) is still reported as ENOSPC, never
// ignored.
constexpr size_t kReceiveBufferSize = 64 * 1024;
constexpr size_t kMaxExtackLength = 256;

/// What the reply so far said; filled by the C callbacks below, read after the loop.
struct ReplyState {
  const NetlinkSocket::MessageCallback* onMessage = nullptr;
  std::optional<Error> callbackError;
  int kernelErrno = 0;          // from NLMSG_ERROR or a negative NLMSG_DONE status
  std::string extack;           // the kernel's NLMSGERR_ATTR_MSG, when it sent one
  std::string protocolProblem;  // a control message we cannot make sense of
};

/// NLMSGERR_ATTR_MSG from extended-ACK TLVs, printable characters only.
std::string extackMessage(Bytes tlvs) {
  std::string message;
  forEachAttribute(tlvs, [&](uint16_t type, Bytes payload) {
    if (type != NLMSGERR_ATTR_MSG) return true;
    message.clear();
    for (const std::byte b : payload.first(std::min(payload.size(), kMaxExtackLength))) {
      const auto c = std::to_integer<unsigned char>(b);
      if (c == 0) break;
      message.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
    }
    return true;
  });
  return message;
}

/// Hands one data message to the caller's callback. After a failure the rest of the reply is
/// still read (and dropped), so the socket stays usable.
void onData(Bytes message, ReplyState& state) {
  if (state.callbackError || state.onMessage == nullptr || !*state.onMessage) return;
  try {
    auto result = (*state.onMessage)(message);
    if (!result) state.callbackError = std::move(result.error());
  } catch (const std::exception& e) {
    state.callbackError =
        Error{ErrorCode::kInternal, std::string("reply handler threw: ") + e.what(), {}};
  } catch (...) {
    state.callbackError = Error{ErrorCode::kInternal, "reply handler threw", {}};
  }
}

/// What one NLMSG_ERROR says: errno 0 is an ACK.
struct ErrorReply {
  int errnum = 0;
  std::string extack;
};

std::optional<ErrorReply> readErrorReply(Bytes message) {
  const auto header = readStruct<nlmsghdr>(message);
  const Bytes body = message.subspan(NLMSG_HDRLEN);
  const auto error = readStruct<nlmsgerr>(body);
  if (!header || !error) return std::nullopt;
  ErrorReply reply;
  reply.errnum = error->error < 0 ? -error->error : error->error;
  if (reply.errnum != 0 && (header->nlmsg_flags & NLM_F_ACK_TLVS)) {
    // The original request is echoed after nlmsgerr unless the ACK was capped.
    size_t offset = sizeof(nlmsgerr);
    if (!(header->nlmsg_flags & NLM_F_CAPPED) && error->msg.nlmsg_len >= NLMSG_HDRLEN) {
      offset += error->msg.nlmsg_len - NLMSG_HDRLEN;
    }
    offset = NLMSG_ALIGN(offset);
    if (offset <= body.size()) reply.extack = extackMessage(body.subspan(offset));
  }
  return reply;
}

void onError(Bytes message, ReplyState& state) {
  const auto reply = readErrorReply(message);
  if (!reply) {
    state.protocolProblem = "truncated NLMSG_ERROR";
    return;
  }
  state.kernelErrno = reply->errnum;  // 0: the ACK, the request is complete
  state.extack = reply->extack;
}

void onDone(Bytes message, uint16_t flags, ReplyState& state) {
  // A dump that failed part-way reports its errno in NLMSG_DONE's payload.
  const Bytes body = message.subspan(NLMSG_HDRLEN);
  if (const auto status = readStruct<int>(body); status && *status < 0) {
    state.kernelErrno = -*status;
    if (flags & NLM_F_ACK_TLVS)
      state.extack = extackMessage(body.subspan(NLMSG_ALIGN(sizeof(int))));
  }
}

enum class ReplyProgress { kMore, kComplete };

/// Walks the messages of one datagram of the reply to request `seq` on port `portId`: data to the
/// callback, the final NLMSG_ERROR or NLMSG_DONE into the state. A message addressed to another
/// request or socket, or a dump the kernel interrupted, is an error with that errno (EPROTO,
/// ESRCH, EINTR).
Result<ReplyProgress> readReply(Bytes datagram, uint32_t seq, uint32_t portId, ReplyState& state) {
  while (!datagram.empty()) {
    const auto message = messageBytes(datagram);
    if (!message) return failSystem(ErrorCode::kKernel, "truncated netlink message", EBADMSG);
    const auto header = *readStruct<nlmsghdr>(*message);
    if (header.nlmsg_pid != 0 && header.nlmsg_pid != portId) {
      return failSystem(ErrorCode::kKernel, "reply for another netlink socket", ESRCH);
    }
    if (header.nlmsg_seq != seq) {
      return failSystem(ErrorCode::kKernel, "reply to another netlink request", EPROTO);
    }
    if (header.nlmsg_flags & NLM_F_DUMP_INTR) {
      return failSystem(ErrorCode::kKernel, "dump interrupted", EINTR);
    }
    switch (header.nlmsg_type) {
      case NLMSG_NOOP:
        break;
      case NLMSG_ERROR:
        onError(*message, state);
        return ReplyProgress::kComplete;
      case NLMSG_DONE:
        onDone(*message, header.nlmsg_flags, state);
        return ReplyProgress::kComplete;
      case NLMSG_OVERRUN:
        state.protocolProblem = "NLMSG_OVERRUN: reply data was lost";
        return ReplyProgress::kComplete;
      default:
        if (header.nlmsg_type >= NLMSG_MIN_TYPE) onData(*message, state);
        break;
    }
    datagram = datagram.subspan(std::min(datagram.size(), size_t{NLMSG_ALIGN(header.nlmsg_len)}));
  }
  return ReplyProgress::kMore;
}

/// What the kernel refused a request with: "<context>: <strerror> (<extack>)", errno as the cause.
Error kernelError(const std::string& context, int errnum, const std::string& extack) {
  Error error = systemError(ErrorCode::kKernel, context, errnum);
  if (!extack.empty()) error.message += " (" + extack + ")";
  return error;
}

/// One datagram read into `buffer`: its size (-1 with `error` set when recvmsg failed), whether
/// it was cut to the buffer, and the port id that sent it (0: the kernel).
struct Datagram {
  ssize_t size = -1;
  int error = 0;
  bool truncated = false;
  uint32_t sender = 0;
};

Datagram receiveDatagram(int fd, std::span<std::byte> buffer, int flags) {
  sockaddr_nl from{};
  iovec io{buffer.data(), buffer.size()};
  msghdr header{};
  header.msg_name = &from;
  header.msg_namelen = sizeof(from);
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  Datagram datagram;
  datagram.size = ::recvmsg(fd, &header, flags);
  if (datagram.size < 0) {
    datagram.error = errno;
    return datagram;
  }
  datagram.truncated = (header.msg_flags & MSG_TRUNC) != 0;
  datagram.sender = from.nl_pid;
  return datagram;
}

}  // namespace

Result<NetlinkSocket> NetlinkSocket::open(int bus, std::chrono::milliseconds timeout) {
  UniqueFd socket(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, bus));
  if (!socket.valid()) {
    return failSystem(ErrorCode::kKernel,
                      "cannot open netlink socket for bus " + std::to_string(bus), errno);
  }
  // Port id 0: the kernel picks a free one, which getsockname() then tells.
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  socklen_t length = sizeof(local);
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&local), sizeof(local)) < 0 ||
      ::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&local), &length) < 0) {
    return failSystem(ErrorCode::kKernel,
                      "cannot bind netlink socket for bus " + std::to_string(bus), errno);
  }
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(micros / 1'000'000);
  tv.tv_usec = static_cast<suseconds_t>(micros % 1'000'000);
  if (setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
    return failSystem(ErrorCode::kKernel, "cannot set netlink receive timeout", errno);
  }
  // Best effort: extended ACKs add the kernel's own reason to errors, capped ACKs skip echoing our
  // request back. A kernel that lacks either refuses the option, which changes nothing else.
  int on = 1;
  setsockopt(socket.get(), SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof(on));
  setsockopt(socket.get(), SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  return NetlinkSocket(std::move(socket), local.nl_pid);
}

Result<void> NetlinkSocket::joinGroup(unsigned group) {
  if (setsockopt(fd(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0) {
    return failSystem(ErrorCode::kKernel,
                      "cannot join netlink multicast group " + std::to_string(group), errno);
  }
  return {};
}

Result<void> NetlinkSocket::setReceiveBuffer(int bytes) {
  if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) == 0) return {};
  // Unprivileged: the kernel caps SO_RCVBUF at net.core.rmem_max, which is still the best we get.
  if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) == 0) return {};
  return failSystem(ErrorCode::kKernel, "cannot set netlink receive buffer", errno);
}

Result<std::optional<Bytes>> NetlinkSocket::receive(std::span<std::byte> buffer,
                                                    std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd ready{fd(), POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (polled < 0 && errno != EINTR) {
      return failSystem(ErrorCode::kKernel, "cannot wait for netlink messages", errno);
    }
    if (polled <= 0) {
      if (Clock::now() >= deadline) return std::nullopt;
      continue;  // EINTR
    }
    const Datagram datagram = receiveDatagram(fd(), buffer, MSG_DONTWAIT);
    if (datagram.size < 0) {
      const int error = datagram.error;
      if (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) continue;
      return failSystem(ErrorCode::kKernel, "cannot receive netlink message", error);
    }
    if (datagram.truncated) {
      return failSystem(ErrorCode::kKernel, "netlink message larger than the receive buffer",
                        ENOSPC);
    }
    if (datagram.sender != 0) continue;  // not the kernel's
    return Bytes(buffer).first(static_cast<size_t>(datagram.size));
  }
}

Result<void> NetlinkSocket::request(std::span<std::byte> message, std::string_view what,
                                    const MessageCallback& onMessage) {
  HOSTPORT_TRY_VOID(requestAccepting(message, what, {}, onMessage));
  return {};
}

Result<void> NetlinkSocket::usable(const std::string& context) const {
  if (!poisoned_) return {};
  return fail(ErrorCode::kKernel, context + ": netlink socket unusable after an earlier failure");
}

void NetlinkSocket::stamp(nlmsghdr& header) {
  header.nlmsg_flags |= NLM_F_REQUEST;
  header.nlmsg_seq = nextSeq_++;
  if (nextSeq_ == 0) nextSeq_ = 1;  // 0 is no sequence number: replies could not be matched
  header.nlmsg_pid = 0;             // addressed to the kernel
}

Result<void> NetlinkSocket::send(std::span<const std::byte> bytes, const std::string& what) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  const ssize_t sent = ::sendto(fd(), bytes.data(), bytes.size(), 0,
                                reinterpret_cast<const sockaddr*>(&kernel), sizeof(kernel));
  if (sent >= 0 && static_cast<size_t>(sent) == bytes.size()) return {};
  return failSystem(ErrorCode::kKernel, what, sent < 0 ? errno : EMSGSIZE);
}

Result<std::span<const std::byte>> NetlinkSocket::receiveOnce(const std::string& context) {
  if (!receiveBuffer_)
    receiveBuffer_ = std::make_unique_for_overwrite<std::byte[]>(kReceiveBufferSize);
  const std::span<std::byte> buffer(receiveBuffer_.get(), kReceiveBufferSize);
  for (;;) {
    const Datagram datagram = receiveDatagram(fd(), buffer, 0);
    if (datagram.size >= 0) {
      if (datagram.truncated) {
        poisoned_ = true;
        return failSystem(ErrorCode::kKernel, context + ": netlink reply larger than the buffer",
                          ENOSPC);
      }
      if (datagram.sender != 0) continue;  // not the kernel's: a local process's
      return Bytes(buffer).first(static_cast<size_t>(datagram.size));
    }
    const int error = datagram.error;
    if (error == EINTR) continue;
    poisoned_ = true;
    if (error == EAGAIN || error == EWOULDBLOCK) {
      Error late{ErrorCode::kKernel,
                 context + ": no netlink reply from the kernel in time",
                 {},
                 std::error_code(error, std::generic_category())};
      return std::unexpected(std::move(late));
    }
    return failSystem(ErrorCode::kKernel, context + ": cannot receive netlink reply", error);
  }
}

Result<int> NetlinkSocket::requestAccepting(std::span<std::byte> message, std::string_view what,
                                            std::initializer_list<int> accepted,
                                            const MessageCallback& onMessage) {
  const std::string context(what);
  HOSTPORT_TRY_VOID(usable(context));
  auto header = readStruct<nlmsghdr>(std::as_bytes(message));
  if (!header || header->nlmsg_len != message.size()) {
    return fail(ErrorCode::kInternal, context + ": request is not one complete netlink message");
  }
  const bool dump = (header->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  if (!dump) header->nlmsg_flags |= NLM_F_ACK;
  stamp(*header);
  std::memcpy(message.data(), &*header, sizeof(nlmsghdr));
  HOSTPORT_TRY_VOID(send(message, context + ": cannot send netlink request"));

  ReplyState state;
  state.onMessage = &onMessage;
  for (;;) {
    HOSTPORT_TRY(const Bytes received, receiveOnce(context));
    auto progress = readReply(received, header->nlmsg_seq, portId_, state);
    if (!progress) {
      // ESRCH: wrong port id, EPROTO: wrong sequence number, EINTR: dump interrupted.
      poisoned_ = true;
      const int error = progress.error().cause.value();
      Error broken = systemError(ErrorCode::kKernel, context + ": unexpected netlink reply", error);
      if (error == EINTR) broken.message += " (dump interrupted by a concurrent change; retry)";
      return std::unexpected(std::move(broken));
    }
    if (*progress == ReplyProgress::kComplete) break;
  }

  if (!state.protocolProblem.empty()) {
    poisoned_ = true;
    return fail(ErrorCode::kKernel, context + ": " + state.protocolProblem);
  }
  const bool acceptedErrno =
      state.kernelErrno != 0 && std::ranges::find(accepted, state.kernelErrno) != accepted.end();
  if (state.kernelErrno != 0 && !acceptedErrno) {
    return std::unexpected(kernelError(context, state.kernelErrno, state.extack));
  }
  if (state.callbackError) return withContext(std::move(*state.callbackError), context);
  return state.kernelErrno;
}

Result<void> NetlinkSocket::requestBatch(std::span<std::byte> messages, std::string_view what) {
  const std::string context(what);
  HOSTPORT_TRY_VOID(usable(context));
  // Number every message; remember which ones the kernel will answer.
  std::vector<uint32_t> awaited;
  uint32_t firstSeq = nextSeq_;
  for (size_t offset = 0; offset < messages.size();) {
    const auto bytes = messageBytes(std::as_bytes(messages.subspan(offset)));
    if (!bytes) return fail(ErrorCode::kInternal, context + ": malformed netlink batch");
    auto header = *readStruct<nlmsghdr>(*bytes);
    stamp(header);
    std::memcpy(messages.data() + offset, &header, sizeof(nlmsghdr));
    if (header.nlmsg_flags & NLM_F_ACK) awaited.push_back(header.nlmsg_seq);
    offset += NLMSG_ALIGN(header.nlmsg_len);
  }
  const uint32_t lastSeq = nextSeq_ - 1;

  // A batch is one transaction only when it is one send, and a send larger than the socket's
  // buffer fails: make room (root may exceed the sysctl limit, and the plugin runs as root).
  const int fd = this->fd();
  int sendBuffer = 0;
  socklen_t length = sizeof(sendBuffer);
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, &length) == 0 &&
      static_cast<size_t>(sendBuffer) < messages.size() + 4096) {
    const int wanted = static_cast<int>(messages.size() + 4096);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &wanted, sizeof(wanted)) != 0) {
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &wanted, sizeof(wanted));
    }
  }
  HOSTPORT_TRY_VOID(send(messages, context + ": cannot send netlink batch of " +
                                       std::to_string(messages.size()) + " bytes"));

  std::optional<ErrorReply> firstError;
  while (!awaited.empty()) {
    HOSTPORT_TRY(Bytes rest, receiveOnce(context));
    while (!rest.empty()) {
      const auto message = messageBytes(rest);
      const auto header = message ? readStruct<nlmsghdr>(*message) : std::nullopt;
      const auto reply =
          header && header->nlmsg_type == NLMSG_ERROR ? readErrorReply(*message) : std::nullopt;
      const bool ours = header && header->nlmsg_seq >= firstSeq && header->nlmsg_seq <= lastSeq;
      if (!reply || !ours) {
        poisoned_ = true;
        return fail(ErrorCode::kKernel, context + ": unexpected netlink reply to a batch");
      }
      if (reply->errnum != 0 && !firstError) firstError = reply;
      const auto it = std::ranges::find(awaited, header->nlmsg_seq);
      if (it != awaited.end()) {
        awaited.erase(it);
      } else if (reply->errnum != 0) {
        awaited.clear();  // the batch as a whole was refused: nothing else will come
      }
      rest =
          rest.subspan(std::min(rest.size(), static_cast<size_t>(NLMSG_ALIGN(header->nlmsg_len))));
    }
  }
  if (firstError) {
    return std::unexpected(kernelError(context, firstError->errnum, firstError->extack));
  }
  return {};
}

}  // namespace hostport::netlink
