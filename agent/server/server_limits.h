#pragma once

#include <chrono>
#include <cstddef>

namespace hostport::agent::server {

/// What one client may cost an HTTP listener of the agent (the control socket, the metrics port).
struct ServerLimits {
  std::size_t maxBodyBytes = 1 << 20;
  std::size_t maxHeaderBytes = 16 << 10;
  std::chrono::milliseconds readTimeout{10'000};  // per request, headers and body together
  std::size_t maxConnections = 1024;
};

}  // namespace hostport::agent::server
