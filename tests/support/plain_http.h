#pragma once
// One HTTP/1.1 exchange over plain TCP with a server in a network namespace, as Prometheus
// scrapes a metrics listener: "Connection: close", the answer read until the server closes.

#include <cstdint>
#include <string>

#include "common/error.h"
#include "tests/support/netns.h"

namespace hostport::test {

/// `method target` with `body` to 127.0.0.1:port in `netns`; the whole answer as it came
/// (status line, headers and body), read for at most 5 s.
Result<std::string> plainHttpExchange(const Netns& netns, uint16_t port, const std::string& method,
                                      const std::string& target, const std::string& body = "");

}  // namespace hostport::test
