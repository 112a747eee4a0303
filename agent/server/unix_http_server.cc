#include "agent/server/unix_http_server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/log/event_log.h"
#include "agent/server/http_connections.h"

namespace hostport::agent::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using Protocol = asio::local::stream_protocol;

namespace {

Result<UniqueFd> lockSocketPath(const std::string& path, bool lockDirectory) {
  const std::string lockPath =
      lockDirectory ? std::filesystem::path(path).parent_path().string() : path + ".lock";
  UniqueFd fd(lockDirectory ? ::open(lockPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                            : ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return fail(ErrorCode::kIo, "cannot open " + lockPath + ": " + std::strerror(errno));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return fail(ErrorCode::kUnavailable,
                "another hostport-agent is serving " + path + " (it holds " + lockPath + ")");
  }
  return fd;
}

}  // namespace

struct UnixHttpServer::Impl : detail::HttpAcceptLoop<Protocol> {
  using detail::HttpAcceptLoop<Protocol>::HttpAcceptLoop;
};

UnixHttpServer::UnixHttpServer(std::unique_ptr<Impl> impl, std::string path, UniqueFd lock)
    : impl_(std::move(impl)), path_(std::move(path)), lock_(std::move(lock)) {}

UnixHttpServer::~UnixHttpServer() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  ::unlink(path_.c_str());
}

Result<std::unique_ptr<UnixHttpServer>> UnixHttpServer::listen(asio::io_context& io,
                                                               const std::string& path,
                                                               unsigned mode, const Router& router,
                                                               ServerLimits limits,
                                                               UnixListenOptions options) {
  std::error_code dirError;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), dirError);
  if (dirError) {
    return fail(ErrorCode::kIo,
                "cannot create the directory of " + path + ": " + dirError.message());
  }
  HOSTPORT_TRY(UniqueFd lock, lockSocketPath(path, options.lockDirectory));
  ::unlink(path.c_str());  // stale: we hold the lock, so no live agent owns it

  auto impl = std::make_unique<Impl>(io, router, limits);
  impl->admit = std::move(options.admit);
  beast::error_code ec;
  impl->acceptor.open(Protocol(), ec);
  if (!ec) impl->acceptor.bind(Protocol::endpoint(path), ec);
  if (!ec && ::chmod(path.c_str(), mode) != 0) {
    return fail(ErrorCode::kIo, "cannot chmod " + path + ": " + std::strerror(errno));
  }
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(ErrorCode::kIo, "cannot listen on " + path + ": " + ec.message());
  impl->accept();
  log::event(log::Component::kServer, log::Level::kInfo, "server.listening",
             {{"socket", path}, {"max_connections", limits.maxConnections}});
  return std::unique_ptr<UnixHttpServer>(
      new UnixHttpServer(std::move(impl), path, std::move(lock)));
}

}  // namespace hostport::agent::server
