#pragma once
// Kubernetes' metav1.Time as text: RFC 3339 in UTC, to the second ("2026-11-29T12:00:00Z"), what
// an Event's timestamps and a certificate's dates are written as; and metav1.MicroTime, to the
// microsecond ("2026-11-29T12:00:00.000000Z"), a Lease's acquire and renew times.

#include <chrono>
#include <string>

namespace hostport::kube {

std::string apiTime(std::chrono::system_clock::time_point time);
std::string apiMicroTime(std::chrono::system_clock::time_point time);

}  // namespace hostport::kube
