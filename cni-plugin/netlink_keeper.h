#pragma once
// Closing a NETLINK_NETFILTER socket makes the kernel flush the netns's pending nf_tables destroy
// work while it holds the commit mutex (nft_rcv_nl_event): any transaction that deleted something
// in the last RCU grace period (~10-30 ms) makes the closer wait that long, and every commit on
// the node waits with it. A standalone plugin closes its socket at every exit. detached_teardown.h
// moved the close to a child 100 ms later, out of the runtime's wait; but in a burst of DELs (a
// node drain) those children close while the next DELs commit, and each close stalls them: DEL
// p99 32-44 ms in a burst of 100 where a paced DEL takes 1.3 ms.
//
// The keeper holds the sockets instead. The first plugin process that finds none becomes it (its
// detached child, holding the lock file `netlink-keeper.lock` in the plugin's state dir, listening
// on `netlink-keeper.sock` there, mode 0600 in a root-owned directory). Every later plugin hands
// its open netfilter sockets over (SCM_RIGHTS) and exits at once: a socket in flight or held is
// not released, so nothing is flushed. Once no socket has come for `quiet` (well past a grace
// period after the last one's transaction), the keeper closes them all: the first close finds the
// destroy work long done, and the rest find nothing. Then it waits `idle` for more and exits.
// Under a stream that never pauses it closes what it holds after `maxHold`, as before.

#include <chrono>
#include <filesystem>
#include <span>
#include <vector>

#include "common/unique_fd.h"

namespace hostport::cni {

struct KeeperTiming {
  std::chrono::milliseconds quiet{200};
  std::chrono::milliseconds idle{2000};
  std::chrono::milliseconds maxHold{5000};
  std::size_t maxHeld = 4096;  // and below the file limit
};

/// The netfilter netlink sockets this process holds open.
std::vector<int> netfilterSockets();

/// Hands `sockets` to the keeper of `stateDir`, checked to run as root; true once it has them in
/// flight (the caller may exit without closing them). False when there is no keeper to take them.
bool handToKeeper(const std::filesystem::path& stateDir, std::span<const int> sockets);

/// Becomes the keeper of `stateDir` and serves until it has closed what it was handed and been
/// idle; returns false at once when another process is the keeper (or the lock cannot be had).
/// The caller's own sockets stay open until it exits after this returns.
bool keepNetlinkSockets(const std::filesystem::path& stateDir, const KeeperTiming& timing = {});

/// The keeper's socket and lock in `stateDir`.
std::filesystem::path keeperSocketPath(const std::filesystem::path& stateDir);
std::filesystem::path keeperLockPath(const std::filesystem::path& stateDir);

}  // namespace hostport::cni
