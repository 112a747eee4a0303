#include "agent/server/unix_http_server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/log/event_log.h"
#include "agent/server/http_connections.h"
#include "agent/server/socket_directory.h"

namespace hostport::agent::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using Protocol = asio::local::stream_protocol;

namespace {

/// An exclusive flock on `directory` itself, or on "<name>.lock" in it, before a stale socket is
/// unlinked (so it never unlinks a live agent's socket).
Result<UniqueFd> lockSocketPath(const std::string& path, UniqueFd directory, bool lockDirectory) {
  const std::filesystem::path socket(path);
  const std::string lockName = socket.filename().string() + ".lock";
  UniqueFd fd = lockDirectory ? std::move(directory)
                              : UniqueFd(::openat(directory.get(), lockName.c_str(),
                                                  O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  const std::string lockPath = lockDirectory ? socket.parent_path().string() : path + ".lock";
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "cannot open " + lockPath, errno);
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
  HOSTPORT_TRY(UniqueFd directory, prepareSocketDirectory(std::filesystem::path(path).parent_path(),
                                                          options.directoryMode));
  // The socket is bound through the directory checked and held open: the kernel resolves the
  // directory prepareSocketDirectory() checked, not whatever the path names by then, and a path
  // longer than sun_path's 108 bytes binds too (a CSI volume's, under the kubelet's pods).
  UniqueFd held(::fcntl(directory.get(), F_DUPFD_CLOEXEC, 0));
  if (!held.valid())
    return failSystem(ErrorCode::kIo, "cannot hold " + path + "'s directory", errno);
  HOSTPORT_TRY(UniqueFd lock, lockSocketPath(path, std::move(directory), options.lockDirectory));
  ::unlink(path.c_str());  // stale: we hold the lock, so no live agent owns it
  const std::string name = std::filesystem::path(path).filename().string();
  const std::string bindPath = "/proc/self/fd/" + std::to_string(held.get()) + "/" + name;

  auto impl = std::make_unique<Impl>(io, router, limits);
  impl->admit = std::move(options.admit);
  beast::error_code ec;
  impl->acceptor.open(Protocol(), ec);
  if (!ec && bindPath.size() >= sizeof(sockaddr_un::sun_path)) {
    ec = make_error_code(boost::system::errc::filename_too_long);
  }
  if (!ec) impl->acceptor.bind(Protocol::endpoint(bindPath), ec);
  if (!ec && ::fchmodat(held.get(), name.c_str(), mode, 0) != 0) {
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
