#pragma once
// Handing freed heap back to the kernel. glibc keeps what a burst of work freed for reuse, so a
// process that once held many transient objects (recovery's decoded leases, a reconciler pass's
// copy of every lease and element) would keep that peak as its RSS.

namespace hostport::agent::service {

/// Returns the free pages of every malloc arena to the kernel (malloc_trim); a no-op off glibc.
void returnFreedHeap();

}  // namespace hostport::agent::service
