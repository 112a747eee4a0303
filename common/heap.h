#pragma once
// Handing freed heap back to the kernel. glibc keeps what a burst of work freed for reuse, so a
// process that once held many transient objects (recovery's decoded leases, a reconciler pass's
// copy of every lease and element) would keep that peak as its RSS.

namespace hostport {

/// Returns the free pages of every malloc arena to the kernel (malloc_trim); a no-op off glibc.
void returnFreedHeap();

/// Call once at start, before any thread. malloc_trim leaves alone the free top of a thread's
/// arena (the reconciler's), and glibc raises its trim threshold to the largest chunk freed (up
/// to 64 MB), so a pass's transient copies stayed: 28 MB of RSS at 20,000 leases whose forwards
/// the agent writes, 47 MB at 55,000. A fixed 1 MiB threshold (which also fixes the mmap
/// threshold) hands them back: 17 MB at 20,000.
void configureHeap();

}  // namespace hostport
