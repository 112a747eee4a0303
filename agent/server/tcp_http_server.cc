#include "agent/server/tcp_http_server.h"

#include "agent/log/event_log.h"
#include "agent/server/http_connections.h"
#include "agent/server/tcp_endpoint.h"

namespace hostport::agent::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using Protocol = asio::ip::tcp;

struct TcpHttpServer::Impl : detail::HttpAcceptLoop<Protocol> {
  using detail::HttpAcceptLoop<Protocol>::HttpAcceptLoop;
};

TcpHttpServer::TcpHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TcpHttpServer::~TcpHttpServer() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

uint16_t TcpHttpServer::port() const {
  beast::error_code ec;
  const auto endpoint = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

Result<std::unique_ptr<TcpHttpServer>> TcpHttpServer::listen(asio::io_context& io,
                                                             const IpAddress& address,
                                                             uint16_t port, const Router& router,
                                                             ServerLimits limits) {
  auto impl = std::make_unique<Impl>(io, router, limits);
  HOSTPORT_TRY_VOID(bindTcp(impl->acceptor, address, port));
  impl->accept();
  std::unique_ptr<TcpHttpServer> server(new TcpHttpServer(std::move(impl)));
  // The port bound, which is the one asked for unless that was 0 (the kernel's pick).
  log::event(log::Component::kServer, log::Level::kInfo, "server.listening",
             {{"address", describeEndpoint(address, server->port())},
              {"max_connections", limits.maxConnections}});
  return server;
}

}  // namespace hostport::agent::server
