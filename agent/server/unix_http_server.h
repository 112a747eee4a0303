#pragma once
// HTTP/1.1 over a Unix socket (Boost.Beast). Each connection has a read deadline and body and
// header limits, so one slow or huge client cannot stall the others.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "agent/server/router.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::agent::server {

struct ServerLimits {
  std::size_t maxBodyBytes = 1 << 20;
  std::size_t maxHeaderBytes = 16 << 10;
  std::chrono::milliseconds readTimeout{10'000};  // per request, headers and body together
  std::size_t maxConnections = 1024;
};

class UnixHttpServer {
 public:
  /// Takes an exclusive flock on "<path>.lock" before it unlinks a stale socket (so it never
  /// unlinks a live agent's socket), binds, and sets `mode` on the socket file. kUnavailable when
  /// another process holds the lock.
  static Result<std::unique_ptr<UnixHttpServer>> listen(boost::asio::io_context& io,
                                                        const std::string& path, unsigned mode,
                                                        const Router& router, ServerLimits limits);
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
