#include "netlink/socket_pool.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace hostport::netlink {

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
    return failSystem(ErrorCode::kKernel, "cannot identify this thread's network namespace", errno);
  }
  return NetnsId{info.st_dev, info.st_ino};
}

Result<NetlinkSocketPool> NetlinkSocketPool::create(int bus, std::size_t maxIdle) {
  HOSTPORT_TRY(const NetnsId netns, callingThreadNetns());
  return NetlinkSocketPool(bus, maxIdle, netns);
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
  HOSTPORT_TRY(const NetnsId netns, callingThreadNetns());
  if (netns != netns_) {
    return fail(ErrorCode::kInternal,
                "a netlink socket pool used from a thread in another network namespace");
  }
  HOSTPORT_TRY(NetlinkSocket socket, NetlinkSocket::open(bus_));
  return Lease(*this, std::move(socket));
}

std::size_t NetlinkSocketPool::idleCount() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

void NetlinkSocketPool::giveBack(NetlinkSocket socket) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < maxIdle_) idle_.push_back(std::move(socket));
}

}  // namespace hostport::netlink
