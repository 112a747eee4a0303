#pragma once
// HTTP/1.1 over TCP, for what may leave the node: the agent serves GET /metrics on it for
// Prometheus, with a router that holds that one route, so no control endpoint is ever reachable
// over the network (agent/daemon/daemon.cc wires it). Same sessions, limits and deadlines as the
// Unix control socket (http_connections.h).

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "agent/server/router.h"
#include "agent/server/server_limits.h"
#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::agent::server {

class TcpHttpServer {
 public:
  /// Binds address:port (SO_REUSEADDR, so a restarted agent gets its port back at once), listens,
  /// serves `router` on `io`, and logs server.listening with the address. kIo naming the address
  /// when it cannot bind (in use, not an address of this host).
  static Result<std::unique_ptr<TcpHttpServer>> listen(boost::asio::io_context& io,
                                                       const IpAddress& address, uint16_t port,
                                                       const Router& router, ServerLimits limits);
  ~TcpHttpServer();
  TcpHttpServer(const TcpHttpServer&) = delete;
  TcpHttpServer& operator=(const TcpHttpServer&) = delete;

  /// The port bound: the one asked for, or the kernel's pick when that was 0.
  uint16_t port() const;

 private:
  struct Impl;
  explicit TcpHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostport::agent::server
