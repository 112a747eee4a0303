#pragma once
// HTTP/1.1 over TLS (1.2 and later), for the admission server's webhook endpoints, which the API
// server calls across the cluster. Same sessions, limits and deadlines as the agent's listeners
// (http_connections.h), with a handshake first. The certificate can be replaced while the server
// runs: each new connection takes the one current at its accept, and a connection keeps the one
// it started with, so a rotation drops no connection and fails no request.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "agent/server/router.h"
#include "agent/server/server_limits.h"
#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::agent::server {

/// A server certificate and its key, both PEM, as a TLS context the server can take.
class TlsIdentity {
 public:
  /// kInvalidArgument with OpenSSL's reason when the PEMs do not load or do not belong together.
  static Result<TlsIdentity> fromPem(const std::string& certificateChainPem,
                                     const std::string& privateKeyPem);

 private:
  friend class TlsHttpServer;
  explicit TlsIdentity(std::shared_ptr<void> context) : context_(std::move(context)) {}
  std::shared_ptr<void> context_;  // an asio::ssl::context, kept out of this header
};

class TlsHttpServer {
 public:
  /// Binds address:port (SO_REUSEADDR), listens and serves `router` on `io` with `identity`;
  /// logs server.listening. kIo naming the address when it cannot bind.
  static Result<std::unique_ptr<TlsHttpServer>> listen(boost::asio::io_context& io,
                                                       const IpAddress& address, uint16_t port,
                                                       const Router& router, ServerLimits limits,
                                                       TlsIdentity identity);
  ~TlsHttpServer();
  TlsHttpServer(const TlsHttpServer&) = delete;
  TlsHttpServer& operator=(const TlsHttpServer&) = delete;

  /// Serves `identity` to the connections accepted from now on; any thread.
  void setIdentity(TlsIdentity identity);

  /// The port bound: the one asked for, or the kernel's pick when that was 0.
  uint16_t port() const;

 private:
  struct Impl;
  explicit TlsHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostport::agent::server
