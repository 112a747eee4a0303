#include "tests/fakes/fake_agent_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdexcept>

#include "common/ascii.h"

namespace hostport::agent::api {

namespace {

test::TempDir makeTempDir() {
  auto dir = test::TempDir::create();
  if (!dir) throw std::runtime_error(dir.error().message);
  return std::move(*dir);
}

}  // namespace

FakeAgentServer::FakeAgentServer(Handler handler)
    : handler_(std::move(handler)), dir_(makeTempDir()), path_((dir_ / "agent.sock").string()) {
  listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path_.copy(address.sun_path, sizeof(address.sun_path) - 1);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) ||
      listen(listener_, 8) || pipe2(stop_, O_CLOEXEC)) {
    throw std::runtime_error("cannot set up the fake agent socket");
  }
  thread_ = std::thread([this] { serve(); });
}

FakeAgentServer::~FakeAgentServer() {
  const char byte = 0;
  (void)!write(stop_[1], &byte, 1);
  thread_.join();
  for (const int fd : held_) close(fd);
  close(listener_);
  close(stop_[0]);
  close(stop_[1]);
}

std::vector<RecordedRequest> FakeAgentServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::string FakeAgentServer::reply(unsigned status, const std::string& body,
                                   const std::string& contentType) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + contentType +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

bool FakeAgentServer::waitReadable(int fd) {
  pollfd fds[] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
  while (poll(fds, 2, -1) < 0) {
  }
  return (fds[1].revents & POLLIN) == 0;
}

void FakeAgentServer::serve() {
  while (waitReadable(listener_)) {
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    RecordedRequest request;
    if (!readRequest(connection, request)) {
      close(connection);
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    const std::optional<std::string> answer = handler_(request);
    if (!answer) {
      held_.push_back(connection);
      continue;
    }
    for (std::size_t sent = 0; sent < answer->size();) {
      const ssize_t n =
          send(connection, answer->data() + sent, answer->size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    close(connection);
  }
}

bool FakeAgentServer::readRequest(int connection, RecordedRequest& request) {
  std::string data;
  std::size_t headerEnd = std::string::npos;
  std::size_t contentLength = 0;
  char buffer[4096];
  while (headerEnd == std::string::npos || data.size() < headerEnd + 4 + contentLength) {
    if (!waitReadable(connection)) return false;
    const ssize_t n = read(connection, buffer, sizeof(buffer));
    if (n <= 0) return false;
    data.append(buffer, static_cast<std::size_t>(n));
    if (headerEnd == std::string::npos &&
        (headerEnd = data.find("\r\n\r\n")) != std::string::npos) {
      const std::string lower = ascii::lowercase(std::string_view(data).substr(0, headerEnd));
      if (const auto at = lower.find("content-length:"); at != std::string::npos) {
        contentLength = std::stoul(lower.substr(at + 15));
      }
    }
  }
  const std::size_t space = data.find(' ');
  request.method = data.substr(0, space);
  request.target = data.substr(space + 1, data.find(' ', space + 1) - space - 1);
  request.headers = data.substr(0, headerEnd);
  request.body = data.substr(headerEnd + 4, contentLength);
  return true;
}

}  // namespace hostport::agent::api
