#include "tests/support/sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <fstream>

namespace hostport::test {

Result<UniqueFd> bindSocket(Protocol protocol, std::string_view address, uint16_t port,
                            BindOptions options) {
  const std::string text(address);
  const std::string where =
      (text.find(':') != std::string::npos ? "[" + text + "]" : text) + ":" + std::to_string(port);
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
      ::inet_pton(AF_INET, text.c_str(), &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    length = sizeof *sin;
  } else if (auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
             ::inet_pton(AF_INET6, text.c_str(), &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    length = sizeof *sin6;
  } else {
    return fail(ErrorCode::kInvalidArgument, "not an IP address: " + text);
  }
  const int type = protocol == Protocol::kUdp ? SOCK_DGRAM : SOCK_STREAM;
  UniqueFd fd(::socket(storage.ss_family, type | SOCK_CLOEXEC, ipProtocolNumber(protocol)));
  if (!fd.valid()) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "socket " + std::string(protocolName(protocol)), error);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "bind " + where, error);
  }
  if (protocol == Protocol::kTcp && options.listen && ::listen(fd.get(), options.backlog) != 0) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "listen " + where, error);
  }
  return fd;
}

uint16_t boundPort(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return 0;
  return storage.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port)
                                      : ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
}

std::string ownComm() {
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  return comm;
}

}  // namespace hostport::test
