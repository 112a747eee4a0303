#pragma once
// libnftables, loaded on first use rather than at exec.
//
// Design note: the plugin is exec'd for every ADD and DEL, and its hot path (map elements over
// raw nf_tables netlink, element_table.h) never calls libnftables; only laying out the table and
// conditional rules do. Linked normally, libnftables and what it pulls in (libnftnl, libxtables,
// libjansson, libgmp) are mapped and relocated at every exec: about 60 page faults, 1.5 ms of a
// 5 ms ADD on a VM where a fault costs ~25 us (docs/benchmarks.md). dlopen() defers that to the
// calls that need it. The functions are typed from libnftables' own header, so a signature
// change is a compile error, not a crash.

#include <nftables/libnftables.h>

#include "common/error.h"

namespace hostport::nft::kernel {

/// The libnftables functions we call, resolved from one dlopen() of the library.
struct LibNftables {
  decltype(&::nft_ctx_new) ctxNew;
  decltype(&::nft_ctx_free) ctxFree;
  decltype(&::nft_ctx_buffer_output) bufferOutput;
  decltype(&::nft_ctx_buffer_error) bufferError;
  decltype(&::nft_ctx_get_output_buffer) outputBuffer;
  decltype(&::nft_ctx_get_error_buffer) errorBuffer;
  decltype(&::nft_ctx_output_get_flags) outputFlags;
  decltype(&::nft_ctx_output_set_flags) setOutputFlags;
  decltype(&::nft_ctx_set_dry_run) setDryRun;
  decltype(&::nft_run_cmd_from_buffer) runCommands;

  /// The library as this build expects it on the host (Debian's libnftables1).
  static constexpr const char* kSoname = "libnftables.so.1";

  /// Loads `soname` and resolves every function. kKernel, naming the library and what the
  /// loader said, when either fails. The library stays loaded for the process's life.
  static Result<LibNftables> open(const char* soname);
};

/// The process's libnftables (kSoname), loaded by the first call; later calls return the same
/// functions, or the same error. Thread-safe.
Result<const LibNftables*> libNftables();

}  // namespace hostport::nft::kernel
