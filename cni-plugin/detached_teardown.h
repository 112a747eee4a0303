#pragma once
// Standalone DEL deletes nf_tables elements over a netlink socket. The kernel frees deleted
// objects only after an RCU grace period, and the process that closes such a socket waits for
// that work (nft_rcv_nl_event -> nf_tables_trans_destroy_flush_work): 10-14 ms on a small VM, most
// of a DEL, and the runtime waits for the plugin's exit. The deletion is committed and in force
// before that wait; only the freeing of memory is left. So the answer need not wait for it: the
// process the runtime waits for exits, and a child nobody waits for closes the handles.
//
// The child lets a grace period pass before it closes them. The kernel waits for the pending
// destroy work while it holds the nf_tables commit mutex, so a close right away would stall the
// next commit on the node, the next ADD's, for those milliseconds instead (seen in the
// benchmark's ADD after DEL: 15 ms). Once the work has run, which it does on its own after one
// grace period, the close finds nothing pending and waits for nothing.
//
// In a burst those children close while the next DELs commit, so first the handles go to the
// node's netlink keeper (netlink_keeper.h), which closes them all once the burst is over; the
// child is the fallback, and the first child becomes the keeper.

#include <ostream>
#include <string>

namespace hostport::cni {

/// Flushes `out` and `err` (the answer is written once, by this process). When the keeper of
/// `stateDir` takes this process's netfilter sockets, exits at once with `exitCode`. Otherwise
/// forks: the parent exits at once, skipping every destructor (its references to the handles go
/// when the kernel closes its files, and the child's keep them open, so none is the last). The
/// child leaves the runtime's pipes (stdin, stdout and stderr become /dev/null), becomes the
/// keeper if there is none (and serves until it is idle), or else sleeps past an RCU grace period,
/// and returns, to tear down as usual and exit with nobody waiting. When fork fails this returns
/// in the one process, which then tears down and waits as before.
void exitLeavingTeardownToChild(int exitCode, std::ostream& out, std::ostream& err,
                                const std::string& stateDir);

}  // namespace hostport::cni
