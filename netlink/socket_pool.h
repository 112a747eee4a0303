#pragma once
// Netlink sockets of one bus kept open for reuse, so a hot path (a sock_diag snapshot for every
// allocation) does not pay socket(), bind() and close() each time; closing a netlink socket is
// the dear part (it is freed through RCU).
//
// Design note:
// - A netlink socket talks to the netns it was opened in. A pool serves the netns of the thread
//   that created it: it opens new sockets on the calling thread and refuses (kInternal) when that
//   thread is in another netns. The check costs one stat(), paid only when a socket is opened.
// - A socket comes back to the pool only from a lease that was not discarded: after any error
//   the socket may still hold part of a reply, so the caller discards it and it is closed.
// - Thread-safe: one socket per lease, never shared; at most `maxIdle` are kept.

#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

#include "common/error.h"
#include "netlink/socket.h"

namespace hostport::netlink {

class NetlinkSocketPool {
 public:
  /// One socket on loan; it goes back to the pool when the lease ends, unless discarded.
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();

    NetlinkSocket& operator*() { return *socket_; }
    NetlinkSocket* operator->() { return &*socket_; }
    /// Closes the socket when the lease ends instead of returning it.
    void discard() { discarded_ = true; }

   private:
    friend class NetlinkSocketPool;
    Lease(NetlinkSocketPool& pool, NetlinkSocket socket)
        : pool_(&pool), socket_(std::move(socket)) {}
    NetlinkSocketPool* pool_;
    std::optional<NetlinkSocket> socket_;
    bool discarded_ = false;
  };

  /// A pool of `bus` sockets (NETLINK_SOCK_DIAG, ...) in the calling thread's netns. kKernel
  /// when that netns cannot be identified.
  static Result<NetlinkSocketPool> create(int bus, std::size_t maxIdle = 4);

  NetlinkSocketPool(NetlinkSocketPool&& other) noexcept;
  NetlinkSocketPool& operator=(NetlinkSocketPool&&) = delete;

  /// An idle socket, or a new one opened on the calling thread.
  Result<Lease> acquire();

  /// Sockets waiting in the pool (for tests).
  std::size_t idleCount() const;

 private:
  struct NetnsId {
    dev_t device = 0;
    ino_t inode = 0;
    friend bool operator==(const NetnsId&, const NetnsId&) = default;
  };
  static Result<NetnsId> callingThreadNetns();

  NetlinkSocketPool(int bus, std::size_t maxIdle, NetnsId netns)
      : bus_(bus), maxIdle_(maxIdle), netns_(netns) {}
  void giveBack(NetlinkSocket socket);

  int bus_;
  std::size_t maxIdle_;
  NetnsId netns_;
  mutable std::mutex mutex_;
  std::vector<NetlinkSocket> idle_;
};

}  // namespace hostport::netlink
