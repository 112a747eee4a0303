#pragma once
// In-process TCP and UDP servers that live in a netns, and clients that reach them from another.
//
// A server answers every connection or datagram with "<id>\n<peer address>\n", so a test learns
// both which pod answered and which source address the pod saw (masquerade or not). The
// listening socket is bound before start() returns, so no sleep is ever needed before a client
// connects. Sockets are made on a thread inside the netns and then used from ordinary threads
// (a socket keeps the netns it was created in).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/unique_fd.h"
#include "tests/support/netns.h"

namespace hostport::test {

/// What a server answered: its id and the client address it saw (v4-mapped v6 shown as v4).
struct Reply {
  std::string id;
  std::string peer;
  friend bool operator==(const Reply&, const Reply&) = default;
};

enum class Transport { kTcp, kUdp };

/// Serves one port (dual-stack, "[::]:port") in a netns on a background thread until destroyed.
class Server {
 public:
  /// `address` is an IPv6 one: "::" every address, "::ffff:127.0.0.1" the IPv4 loopback alone (a
  /// node service nobody off the node should reach).
  static Result<std::unique_ptr<Server>> start(const Netns& netns, Transport transport,
                                               uint16_t port, std::string id,
                                               const std::string& address = "::");
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  const std::string& id() const { return id_; }
  /// Connections accepted or datagrams answered so far.
  int served() const { return served_.load(); }

 private:
  Server(Transport transport, UniqueFd socket, UniqueFd stop, std::string id);
  void serve();

  Transport transport_;
  UniqueFd socket_;
  UniqueFd stop_;  // eventfd that ends serve()
  std::string id_;
  std::atomic<int> served_{0};
  std::thread thread_;
};

struct ClientOptions {
  std::string source;  // local address to bind; empty: chosen by routing
  uint16_t sourcePort = 0;
  std::chrono::milliseconds timeout{2000};
};

/// Connects from `from` to ip:port and reads the server's reply until EOF. The error message
/// says what failed ("connect 192.0.2.1:8080: Connection refused", "... timed out").
Result<Reply> tcpRequest(const Netns& from, const std::string& ip, uint16_t port,
                         const ClientOptions& options = {});

/// Sends a datagram from `from` to ip:port and waits for the reply (resending a few times within
/// the timeout). An ICMP error fails fast with "Connection refused".
Result<Reply> udpRequest(const Netns& from, const std::string& ip, uint16_t port,
                         const ClientOptions& options = {});

/// A UDP socket that keeps its local port across requests, for conntrack tests: the same
/// 5-tuple before and after a change on the node.
class UdpClient {
 public:
  static Result<UdpClient> create(const Netns& from, const std::string& ip, uint16_t port,
                                  const std::string& source = {});
  Result<Reply> request(std::chrono::milliseconds timeout = std::chrono::milliseconds{2000});
  uint16_t localPort() const { return localPort_; }

 private:
  UdpClient(UniqueFd socket, std::string target, uint16_t localPort)
      : socket_(std::move(socket)), target_(std::move(target)), localPort_(localPort) {}
  UniqueFd socket_;
  std::string target_;
  uint16_t localPort_ = 0;
};

}  // namespace hostport::test
