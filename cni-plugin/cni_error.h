#pragma once
// The one table from internal error codes to CNI error codes, and the spec's error document.

#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::cni {

/// The spec's codes we use (1-99 are reserved for it), and ours from 100. A pool's namespace
/// rule refusing a pod is the spec's 7, "invalid network config", as a bad annotation is (the pod
/// asks for what the node's config does not allow it); a full quota is ours, 104.
enum CniCode : int {
  kCniIncompatibleVersion = 1,
  kCniInvalidEnvironment = 4,
  kCniIoFailure = 5,
  kCniDecodeFailure = 6,
  kCniInvalidConfig = 7,
  kCniTryAgainLater = 11,
  kCniPluginNotAvailable = 50,  // STATUS: cannot take ADDs now
  kCniKernelFailure = 100,      // nftables or netlink refused
  kCniPortConflict = 101,       // a host port is held by another attachment or process
  kCniPoolExhausted = 102,      // no free port in the pool
  kCniCheckFailed = 103,        // CHECK found an element missing or wrong
  kCniQuotaExceeded = 104,      // a pool's quota (maxPortsPerNamespace, maxPortsPerPod) is full
  kCniInternal = 110,
};

int cniCode(ErrorCode code);

/// {"cniVersion", "code", "msg", "details"} as the spec wants it on stdout. A non-zero
/// `codeOverride` replaces the mapped code (STATUS reports 50 whatever went wrong).
std::string errorDocument(std::string_view cniVersion, const Error& error, int codeOverride = 0);

}  // namespace hostport::cni
