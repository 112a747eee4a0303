#pragma once
// HTTP/1.1 over a Unix socket (Boost.Beast). Each connection has a read deadline and body and
// header limits, so one slow or huge client cannot stall the others.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "agent/server/router.h"
#include "agent/server/server_limits.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::agent::server {

/// How a socket is served beyond the defaults of the control socket.
struct UnixListenOptions {
  /// Lock the socket's directory itself instead of a "<path>.lock" file beside the socket: for a
  /// socket that must be alone in its directory (the pod socket, whose directory pods mount).
  bool lockDirectory = false;
  /// Identify each caller at accept (the pod socket); empty: callers are not identified.
  AdmitPeer admit;
  /// The socket's directory, when the server makes it (socket_directory.h says what an existing
  /// one must be).
  mode_t directoryMode = 0755;
};

class UnixHttpServer {
 public:
  /// Makes the socket's directory or checks an existing one (socket_directory.h: kNotAllowed for
  /// one another user may write), takes an exclusive flock on "<path>.lock" (or the directory,
  /// options.lockDirectory) before it unlinks a stale socket (so it never unlinks a live agent's
  /// socket), binds, and sets `mode` on the socket file before it listens. kUnavailable when
  /// another process holds the lock.
  static Result<std::unique_ptr<UnixHttpServer>> listen(boost::asio::io_context& io,
                                                        const std::string& path, unsigned mode,
                                                        const Router& router, ServerLimits limits,
                                                        UnixListenOptions options = {});
  ~UnixHttpServer();
  UnixHttpServer(const UnixHttpServer&) = delete;
  UnixHttpServer& operator=(const UnixHttpServer&) = delete;

  const std::string& path() const { return path_; }

 private:
  struct Impl;
  UnixHttpServer(std::unique_ptr<Impl> impl, std::string path, UniqueFd lock);
  std::unique_ptr<Impl> impl_;
  std::string path_;
  UniqueFd lock_;
};

}  // namespace hostport::agent::server
