#pragma once
// Sockets that root tests bind to hold a port (a "host process" in the way of an allocation, or
// the sockets a sock_diag dump must find), and the name the kernel gives this process as their
// owner. Called on whatever thread is in the netns the socket belongs in (Netns::run,
// inPrivateNetns).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/protocol.h"
#include "common/unique_fd.h"

namespace hostport::test {

struct BindOptions {
  bool listen = true;  // TCP only: listen() after bind()
  int backlog = 16;
};

/// A close-on-exec socket of `protocol` bound to `address`:`port` (an IPv4 or IPv6 literal; port
/// 0 lets the kernel choose). Errors name the failed call: "bind 127.0.0.1:80: <strerror>".
Result<UniqueFd> bindSocket(Protocol protocol, std::string_view address, uint16_t port,
                            BindOptions options = {});

/// The local port `fd` is bound to; 0 when getsockname() fails.
uint16_t boundPort(int fd);

/// This process's command name (/proc/self/comm): what findSocketOwner() reports for its sockets.
std::string ownComm();

}  // namespace hostport::test
