#pragma once
// net.ipv4.ip_local_reserved_ports: keeping ephemeral ports (connect() without bind(), bind() to
// port 0) out of the pools, so the kernel never hands a pool port to a host client.
//
// Design note:
// - The sysctl belongs to the node, not to us: other software (kubelet's NodePort range, an
//   operator's own list) may have put ranges there. We only ever add: read, union, write back,
//   and write nothing when the union is what is already there. Our ranges are never removed
//   (a stale reservation only narrows the ephemeral range; removing someone else's is worse).
// - Read-modify-write is not atomic against another writer. One agent per node is the writer we
//   expect; the union makes a lost update heal at the next call.
// - The sysctl is per network namespace, and /proc/sys/net resolves to the netns of the thread
//   that opens it (so does any mount of it: proc_sys_net.h). The path is injectable, so the
//   agent can be given another root (procSysNet) and the text handling is tested on plain files.
// - The kernel reads and writes the list as "a,b-c,..." (comma-separated ports and inclusive
//   ranges, a newline after). The parser is strict: anything else is an error, never a guess.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "hostnet/proc_sys_net.h"

namespace hostport::hostnet {

/// An inclusive port range, first <= second. A single port is {p, p}.
using PortRange = std::pair<uint16_t, uint16_t>;

/// Parses the sysctl's text: "" (nothing reserved), "8080", "8080,30000-32767\n". Spaces and tabs
/// around items and a trailing newline are accepted; empty items, reversed ranges, numbers above
/// 65535, signs and any other character are Error{kDecode}. The result is as written (not
/// normalised).
Result<std::vector<PortRange>> parseReservedPorts(std::string_view text);

/// Sorted, with overlapping and adjacent ranges merged ({1-5, 6-9} -> {1-9}). Reversed ranges
/// (first > second) are invalid input and are dropped.
std::vector<PortRange> normalizePortRanges(std::vector<PortRange> ranges);

/// The normalised union of what is reserved and what we add.
std::vector<PortRange> mergePortRanges(const std::vector<PortRange>& existing,
                                       const std::vector<PortRange>& added);

/// The kernel's own format, without a newline: "8080,30000-32767"; "" for no ranges.
std::string formatReservedPorts(const std::vector<PortRange>& ranges);

/// Adds `ranges` to the reserved ports at `procPath` (localReservedPortsPath(); the calling
/// thread's netns for the default root): reads, merges, and writes only if the set changed; then
/// reads back to check the kernel took it. Error{kInvalidArgument} for a reversed range,
/// Error{kKernel} when the sysctl cannot be read or written, Error{kDecode} when its current text
/// is not a port list.
Result<void> reserveLocalPorts(const std::vector<PortRange>& ranges,
                               const std::string& procPath = localReservedPortsPath());

}  // namespace hostport::hostnet
