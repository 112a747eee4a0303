#pragma once
// Listening on a TCP address, for the TCP listeners (tcp_http_server.h, tls_http_server.h).

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::agent::server {

/// Opens `acceptor` on address:port with SO_REUSEADDR (a restarted server gets its port back at
/// once), binds and listens. kIo naming the address when it cannot (in use, not this host's).
Result<void> bindTcp(boost::asio::ip::tcp::acceptor& acceptor, const IpAddress& address,
                     uint16_t port);

}  // namespace hostport::agent::server
