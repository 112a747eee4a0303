#pragma once
// One netlink socket and a request/response loop, over the socket API alone (no libmnl: the CNI
// plugin is linked statically, and Debian ships no libmnl.a).
//
// Design note:
// - A socket is bound to the network namespace of the thread that opened it. Callers that must act
//   in "the current netns" open a socket per operation instead of caching one.
// - request() waits for the kernel's final word: NLMSG_DONE for a dump, the ACK for anything else
//   (it sets NLM_F_ACK itself on non-dump requests, otherwise a request without a reply, such as a
//   delete, would leave it waiting forever). Sequence number and port id of every reply are
//   checked.
// - When the caller's callback fails mid-dump, the rest of the dump is still read and dropped, so
//   the socket stays usable. Only a receive failure (timeout) or a reply that does not belong to
//   us poisons the socket; later requests on it fail at once.
// - An exception thrown by the caller's callback becomes an error of the request.
// - Every error that has an errno behind it (the kernel's answer in NLMSG_ERROR or a negative
//   NLMSG_DONE status, a failed send or receive) carries it as Error::cause, so callers decide
//   on the errno and never on the message, which may also hold the kernel's extack text.

#include <linux/netlink.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::netlink {

/// An open, bound netlink socket of one bus (NETLINK_ROUTE, NETLINK_NETFILTER, ...).
class NetlinkSocket {
 public:
  /// Called once per data message of the reply (never for NLMSG_ERROR / NLMSG_DONE), with exactly
  /// that message's bytes (nlmsg_len already checked). An error stops the callbacks; the request
  /// then fails with it.
  using MessageCallback = std::function<Result<void>(std::span<const std::byte> message)>;

  static constexpr std::chrono::milliseconds kDefaultTimeout{5000};

  /// Opens and binds a socket on `bus` in the calling thread's netns. `timeout` bounds each wait
  /// for a reply, so a silent kernel cannot hang a CNI plugin.
  static Result<NetlinkSocket> open(int bus, std::chrono::milliseconds timeout = kDefaultTimeout);

  /// Sends `message` (one complete netlink message; its sequence number and port id are set here)
  /// and runs `onMessage` on every reply until the request is complete. A kernel error becomes
  /// Error{kKernel, "<what>: <strerror> (<extack>)"} with the errno as its cause. `what` says what
  /// was asked, for that message.
  Result<void> request(std::span<std::byte> message, std::string_view what,
                       const MessageCallback& onMessage = nullptr);

  /// Like request(), but a kernel errno listed in `accepted` is returned as a value instead of an
  /// error. Returns 0 when the kernel acknowledged success. Used where "already gone" is fine.
  Result<int> requestAccepting(std::span<std::byte> message, std::string_view what,
                               std::initializer_list<int> accepted,
                               const MessageCallback& onMessage = nullptr);

  /// Sends several complete messages in one write, such as an nfnetlink batch (BEGIN, changes,
  /// END), and waits for one reply to each message that carries NLM_F_ACK, or for an error
  /// addressed to a message that does not (the kernel refusing the batch as a whole). The first
  /// kernel error is returned, as in request(); a batch is all or nothing in the kernel, so
  /// acknowledgements that precede an error mean nothing.
  Result<void> requestBatch(std::span<std::byte> messages, std::string_view what);

  /// Joins multicast `group` of the bus (NETLINK_ADD_MEMBERSHIP): from now on the kernel's
  /// notifications to that group arrive on this socket, to be read with receive().
  Result<void> joinGroup(unsigned group);

  /// Asks for a receive buffer of `bytes`, past the net.core.rmem_max limit when privileged
  /// (SO_RCVBUFFORCE), so a burst of notifications fits before the kernel drops any.
  Result<void> setReceiveBuffer(int bytes);

  /// Waits up to `timeout` for the next datagram from the kernel and reads it into `buffer`;
  /// nullopt when none came in time. For listeners, unlike request(): no failure poisons the
  /// socket. ENOBUFS (the receive buffer overflowed, notifications were lost) is an error with
  /// that cause, after which the socket goes on receiving. A datagram larger than `buffer` is an
  /// error (ENOSPC); datagrams not sent by the kernel (a local process may unicast to any port id)
  /// are dropped.
  Result<std::optional<std::span<const std::byte>>> receive(std::span<std::byte> buffer,
                                                            std::chrono::milliseconds timeout);

  uint32_t portId() const { return portId_; }
  /// True once a request went wrong in a way that leaves the socket out of step with the kernel
  /// (see the design note); every later request fails at once.
  bool poisoned() const { return poisoned_; }
  /// For poll()ing alongside other descriptors; the socket keeps ownership.
  int fd() const { return socket_.get(); }

 private:
  NetlinkSocket(UniqueFd socket, uint32_t portId) : socket_(std::move(socket)), portId_(portId) {}

  /// Fails at once on a poisoned socket.
  Result<void> usable(const std::string& context) const;
  /// Marks `header` as our next request to the kernel: NLM_F_REQUEST, a fresh sequence number.
  void stamp(nlmsghdr& header);
  /// Sends `bytes` in one write; `what` heads the error.
  Result<void> send(std::span<const std::byte> bytes, const std::string& what);
  /// The next datagram of a reply, read into the socket's own buffer (EINTR retried); valid
  /// until the next read. A failure, the timeout included, poisons the socket.
  Result<std::span<const std::byte>> receiveOnce(const std::string& context);

  UniqueFd socket_;
  uint32_t portId_ = 0;
  uint32_t nextSeq_ = 1;
  bool poisoned_ = false;
  /// Where replies are read, made at the first one and kept: a request is a few microseconds,
  /// and zeroing a fresh 64 KiB for each cost about as much (a repair looks up a route per pod).
  std::unique_ptr<std::byte[]> receiveBuffer_;
};

}  // namespace hostport::netlink
