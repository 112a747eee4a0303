#include "agent/server/tcp_http_server.h"

#include <boost/asio/ip/tcp.hpp>

#include "agent/log/event_log.h"
#include "agent/server/http_connections.h"

namespace hostport::agent::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using Protocol = asio::ip::tcp;

namespace {

asio::ip::address toAsio(const IpAddress& address) {
  const auto bytes = address.bytes();
  if (address.family() == Family::kIPv4) {
    asio::ip::address_v4::bytes_type v4{};
    std::copy(bytes.begin(), bytes.end(), v4.begin());
    return asio::ip::address_v4(v4);
  }
  asio::ip::address_v6::bytes_type v6{};
  std::copy(bytes.begin(), bytes.end(), v6.begin());
  return asio::ip::address_v6(v6);
}

}  // namespace

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
  const std::string where = describeEndpoint(address, port);
  const Protocol::endpoint endpoint(toAsio(address), port);
  auto impl = std::make_unique<Impl>(io, router, limits);
  beast::error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(ErrorCode::kIo, "cannot listen on " + where + ": " + ec.message());
  impl->accept();
  std::unique_ptr<TcpHttpServer> server(new TcpHttpServer(std::move(impl)));
  // The port bound, which is the one asked for unless that was 0 (the kernel's pick).
  log::event(log::Component::kServer, log::Level::kInfo, "server.listening",
             {{"address", describeEndpoint(address, server->port())},
              {"max_connections", limits.maxConnections}});
  return server;
}

}  // namespace hostport::agent::server
