#include "tests/support/traffic.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace hostport::test {
namespace {

using Clock = std::chrono::steady_clock;

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

std::string endpointText(const std::string& ip, uint16_t port) {
  return (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

Result<SocketAddress> makeAddress(const std::string& ip, uint16_t port) {
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    address.length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    address.length = sizeof(sockaddr_in6);
  } else {
    return fail(ErrorCode::kInvalidArgument, "not an IP address: " + ip);
  }
  return address;
}

std::string peerText(const sockaddr_storage& storage) {
  char text[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
                sizeof text);
    return text;
  }
  const in6_addr& address = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&address)) {
    ::inet_ntop(AF_INET, &address.s6_addr[12], text, sizeof text);
  } else {
    ::inet_ntop(AF_INET6, &address, text, sizeof text);
  }
  return text;
}

uint16_t localPortOf(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return 0;
  return storage.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port)
                                      : ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
}

// socket() runs on the netns's own thread, so its errno is read there, not on the caller's.
Result<UniqueFd> socketIn(const Netns& netns, int family, int type) {
  HOSTPORT_TRY(Result<UniqueFd> made, netns.run([&]() -> Result<UniqueFd> {
    UniqueFd fd(::socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) {
      const int error = errno;
      return failSystem(ErrorCode::kIo, "socket in " + netns.name(), error);
    }
    return fd;
  }));
  return made;
}

// Creates a client socket in `from` for `target`, bound to the requested source.
Result<UniqueFd> clientSocket(const Netns& from, const SocketAddress& target, int type,
                              const ClientOptions& options) {
  HOSTPORT_TRY(UniqueFd fd, socketIn(from, target.family(), type));
  if (!options.source.empty() || options.sourcePort != 0) {
    std::string source = options.source;
    if (source.empty()) source = target.family() == AF_INET ? "0.0.0.0" : "::";
    HOSTPORT_TRY(const SocketAddress local, makeAddress(source, options.sourcePort));
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), local.get(), local.length) != 0) {
      const int error = errno;
      return failSystem(ErrorCode::kIo, "bind " + endpointText(source, options.sourcePort), error);
    }
  }
  return fd;
}

Result<Reply> parseReply(const std::string& text, const std::string& where) {
  const auto first = text.find('\n');
  if (first == std::string::npos || text.empty() || text.back() != '\n') {
    return fail(ErrorCode::kDecode, "unexpected reply from " + where + ": '" + text + "'");
  }
  return Reply{text.substr(0, first), text.substr(first + 1, text.size() - first - 2)};
}

// Waits for `events` on fd until `deadline`; false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, events, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

// One datagram round trip on a connected socket.
Result<Reply> udpExchange(int fd, const std::string& where, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  constexpr int kAttempts = 4;
  char buffer[512];
  // Late answers to an earlier request (and its ICMP errors) are stale: drop them first.
  while (::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) >= 0 || errno == ECONNREFUSED) {
  }
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (::send(fd, "ping", 4, 0) < 0) {
      const int error = errno;
      return failSystem(ErrorCode::kIo, "send " + where, error);
    }
    const auto sliceEnd = std::min(deadline, Clock::now() + timeout / kAttempts);
    if (!waitFor(fd, POLLIN, sliceEnd)) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EINTR) continue;
      return failSystem(ErrorCode::kIo, "recv " + where, error);
    }
    return parseReply(std::string(buffer, static_cast<size_t>(n)), where);
  }
  return fail(ErrorCode::kUnavailable,
              "udp " + where + ": no reply within " + std::to_string(timeout.count()) + " ms");
}

}  // namespace

Server::Server(Transport transport, UniqueFd socket, UniqueFd stop, std::string id)
    : transport_(transport),
      socket_(std::move(socket)),
      stop_(std::move(stop)),
      id_(std::move(id)) {
  thread_ = std::thread([this] { serve(); });
}

Result<std::unique_ptr<Server>> Server::start(const Netns& netns, Transport transport,
                                              uint16_t port, std::string id,
                                              const std::string& address) {
  const int type = transport == Transport::kTcp ? SOCK_STREAM : SOCK_DGRAM;
  HOSTPORT_TRY(UniqueFd fd, socketIn(netns, AF_INET6, type));
  const int zero = 0;
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto bound = makeAddress(address, port);
  if (!bound) return std::unexpected(bound.error());
  const std::string where = "[" + address + "]:" + std::to_string(port) + " in " + netns.name();
  if (::bind(fd.get(), bound->get(), bound->length) != 0) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "bind " + where, error);
  }
  if (transport == Transport::kTcp && ::listen(fd.get(), 64) != 0) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "listen " + where, error);
  }
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return failSystem(ErrorCode::kIo, "eventfd", errno);
  return std::unique_ptr<Server>(new Server(transport, std::move(fd), std::move(stop), id));
}

Server::~Server() {
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void Server::serve() {
  while (true) {
    pollfd fds[2] = {{socket_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (!(fds[0].revents & POLLIN)) continue;
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    if (transport_ == Transport::kTcp) {
      UniqueFd connection(
          ::accept4(socket_.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_CLOEXEC));
      if (!connection.valid()) continue;
      const std::string reply = id_ + "\n" + peerText(peer) + "\n";
      (void)!::send(connection.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
      ++served_;
    } else {
      char buffer[512];
      const ssize_t n = ::recvfrom(socket_.get(), buffer, sizeof buffer, MSG_DONTWAIT,
                                   reinterpret_cast<sockaddr*>(&peer), &length);
      if (n < 0) continue;
      const std::string reply = id_ + "\n" + peerText(peer) + "\n";
      (void)!::sendto(socket_.get(), reply.data(), reply.size(), 0,
                      reinterpret_cast<sockaddr*>(&peer), length);
      ++served_;
    }
  }
}

Result<Reply> tcpRequest(const Netns& from, const std::string& ip, uint16_t port,
                         const ClientOptions& options) {
  const std::string where = "tcp " + endpointText(ip, port) + " from " + from.name();
  HOSTPORT_TRY(const SocketAddress target, makeAddress(ip, port));
  HOSTPORT_TRY(UniqueFd fd, clientSocket(from, target, SOCK_STREAM, options));
  const auto deadline = Clock::now() + options.timeout;
  if (::connect(fd.get(), target.get(), target.length) != 0 && errno != EINPROGRESS) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "connect " + where, error);
  }
  if (!waitFor(fd.get(), POLLOUT, deadline)) {
    return fail(ErrorCode::kUnavailable, "connect " + where + ": timed out");
  }
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) return failSystem(ErrorCode::kIo, "connect " + where, error);

  std::string text;
  char buffer[512];
  while (true) {
    if (!waitFor(fd.get(), POLLIN, deadline)) {
      return fail(ErrorCode::kUnavailable, "read " + where + ": timed out after '" + text + "'");
    }
    const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n == 0) break;
    if (n < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EINTR) continue;
      return failSystem(ErrorCode::kIo, "read " + where, error);
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  return parseReply(text, where);
}

Result<Reply> udpRequest(const Netns& from, const std::string& ip, uint16_t port,
                         const ClientOptions& options) {
  const std::string where = endpointText(ip, port) + " from " + from.name();
  HOSTPORT_TRY(const SocketAddress target, makeAddress(ip, port));
  HOSTPORT_TRY(UniqueFd fd, clientSocket(from, target, SOCK_DGRAM, options));
  if (::connect(fd.get(), target.get(), target.length) != 0) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "connect udp " + where, error);
  }
  return udpExchange(fd.get(), where, options.timeout);
}

Result<UdpClient> UdpClient::create(const Netns& from, const std::string& ip, uint16_t port,
                                    const std::string& source) {
  const std::string where = endpointText(ip, port) + " from " + from.name();
  HOSTPORT_TRY(const SocketAddress target, makeAddress(ip, port));
  HOSTPORT_TRY(UniqueFd fd,
               clientSocket(from, target, SOCK_DGRAM, ClientOptions{.source = source}));
  if (::connect(fd.get(), target.get(), target.length) != 0) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "connect udp " + where, error);
  }
  const uint16_t localPort = localPortOf(fd.get());
  return UdpClient(std::move(fd), where, localPort);
}

Result<Reply> UdpClient::request(std::chrono::milliseconds timeout) {
  return udpExchange(socket_.get(), target_, timeout);
}

}  // namespace hostport::test
