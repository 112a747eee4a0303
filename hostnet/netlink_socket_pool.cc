#include "hostnet/netlink_socket_pool.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace hostport::hostnet {

NetlinkSocketPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), socket_(std::move(other.socket_)), discarded_(other.discarded_) {
  other.socket_.reset();
}

NetlinkSocketPool::Lease::~Lease() {
  if (socket_ && !discarded_) pool_->giveBack(std::move(*socket_));
}

Result<NetlinkSocketPool::NetnsId> NetlinkSocketPool::callingThreadNetns() {
  struct stat info {};
  if (::stat("/proc/thread-self/ns/net", &info) != 0) {
    return fail(
        ErrorCode::kKernel,
        std::string("cannot identify this thread's network namespace: ") + std::strerror(errno));
  }
  return NetnsId{info.st_dev, info.st_ino};
}

Result<NetlinkSocketPool> NetlinkSocketPool::create(int bus, std::size_t maxIdle) {
  auto netns = callingThreadNetns();
  if (!netns) return std::unexpected(netns.error());
  return NetlinkSocketPool(bus, maxIdle, *netns);
}

NetlinkSocketPool::NetlinkSocketPool(NetlinkSocketPool&& other) noexcept
    : bus_(other.bus_), maxIdle_(other.maxIdle_), netns_(other.netns_) {
  std::lock_guard lock(other.mutex_);
  idle_ = std::move(other.idle_);
}

Result<NetlinkSocketPool::Lease> NetlinkSocketPool::acquire() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      Lease lease(*this, std::move(idle_.back()));
      idle_.pop_back();
      return lease;
    }
  }
  auto netns = callingThreadNetns();
  if (!netns) return std::unexpected(netns.error());
  if (*netns != netns_) {
    return fail(ErrorCode::kInternal,
                "a netlink socket pool used from a thread in another network namespace");
  }
  auto socket = NetlinkSocket::open(bus_);
  if (!socket) return std::unexpected(socket.error());
  return Lease(*this, std::move(*socket));
}

std::size_t NetlinkSocketPool::idleCount() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

void NetlinkSocketPool::giveBack(NetlinkSocket socket) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < maxIdle_) idle_.push_back(std::move(socket));
}

}  // namespace hostport::hostnet
