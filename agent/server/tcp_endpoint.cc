#include "agent/server/tcp_endpoint.h"

#include <algorithm>

namespace hostport::agent::server {
namespace {

namespace asio = boost::asio;

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

Result<void> bindTcp(asio::ip::tcp::acceptor& acceptor, const IpAddress& address, uint16_t port) {
  const asio::ip::tcp::endpoint endpoint(toAsio(address), port);
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return fail(ErrorCode::kIo,
                "cannot listen on " + describeEndpoint(address, port) + ": " + ec.message());
  }
  return {};
}

}  // namespace hostport::agent::server
