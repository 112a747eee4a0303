#include "tests/support/plain_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.h"

namespace hostport::test {

Result<std::string> plainHttpExchange(const Netns& netns, uint16_t port, const std::string& method,
                                      const std::string& target, const std::string& body) {
  // The socket is made in the netns (a socket keeps the netns it was made in); the rest of the
  // exchange may run on this thread.
  HOSTPORT_TRY(UniqueFd fd, netns.run([] {
    return UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  }));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "socket", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return failSystem(ErrorCode::kUnavailable, "connect 127.0.0.1:" + std::to_string(port), errno);
  }
  timeval timeout{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string request = method + " " + target +
                              " HTTP/1.1\r\nHost: node\r\nConnection: close\r\n" +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (::write(fd.get(), request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    return failSystem(ErrorCode::kIo, "write", errno);
  }
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;) answer.append(buffer, n);
  return answer;
}

}  // namespace hostport::test
