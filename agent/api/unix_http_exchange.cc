#include "agent/api/unix_http_exchange.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <system_error>

#include "common/unique_fd.h"

namespace hostport::agent::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

/// Milliseconds left before `deadline` for poll(), at least 0.
int millisecondsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

/// Bounds the next connect() or send() by what is left of the deadline.
bool boundSends(int fd, Clock::time_point deadline) {
  const auto left =
      std::max<Clock::duration>(deadline - Clock::now(), std::chrono::microseconds(1));
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(left).count();
  const timeval limit{static_cast<time_t>(micros / 1'000'000),
                      static_cast<suseconds_t>(micros % 1'000'000)};
  return ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit)) == 0;
}

/// Lowercase reasons for the errors people meet; the system text otherwise.
std::string reasonFor(int error) {
  switch (error) {
    case ECONNREFUSED:
      return "connection refused";
    case ENOENT:
      return "no socket file";
    case EACCES:
    case EPERM:
      return "permission denied";
    case ECONNRESET:
      return "connection reset";
    case EPIPE:
      return "connection closed while sending";
    default:
      return std::generic_category().message(error);
  }
}

std::string requestText(const HttpExchange& exchange) {
  std::string text;
  text.reserve(192 + exchange.target.size() + exchange.body.size());
  text.append(exchange.method).append(" ").append(exchange.target).append(" HTTP/1.1\r\n");
  text += "Host: hostport-agent\r\nUser-Agent: hostport-client\r\n";
  text += "Accept: application/json, text/plain\r\nConnection: close\r\n";
  if (!exchange.contentType.empty()) {
    text.append("Content-Type: ").append(exchange.contentType).append("\r\n");
  }
  if (!exchange.body.empty() || exchange.method != "GET") {
    text += "Content-Length: " + std::to_string(exchange.body.size()) + "\r\n";
  }
  text += "\r\n";
  text.append(exchange.body);
  return text;
}

class Exchange {
 public:
  Exchange(const std::string& path, const HttpExchange& exchange, std::chrono::milliseconds timeout,
           std::size_t maxResponseBytes)
      : path_(path),
        exchange_(exchange),
        timeout_(timeout),
        maxResponseBytes_(maxResponseBytes),
        deadline_(Clock::now() + timeout) {}

  Result<HttpResponse> run() {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return transport(errno);
    HOSTPORT_TRY_VOID(connect(fd.get()));
    if (auto sent = send(fd.get(), requestText(exchange_)); !sent) {
      // A server may answer before it has read the whole request and close (413 for a body over
      // its limit): the answer then waits in the receive queue behind the failed send.
      const std::error_code cause = sent.error().cause;
      if (cause == std::errc::broken_pipe || cause == std::errc::connection_reset) {
        if (auto answer = receive(fd.get())) return answer;
      }
      return std::unexpected(std::move(sent).error());
    }
    return receive(fd.get());
  }

 private:
  std::unexpected<Error> transport(int error) const {
    return std::unexpected(Error{ErrorCode::kUnavailable,
                                 unreachable() + reasonFor(error),
                                 {},
                                 std::error_code(error, std::generic_category())});
  }
  std::unexpected<Error> timedOut() const {
    return fail(ErrorCode::kUnavailable,
                unreachable() + "no answer within " + std::to_string(timeout_.count()) + " ms (" +
                    std::string(exchange_.method) + " " + std::string(exchange_.target) + ")");
  }
  std::string unreachable() const { return "hostport-agent is not reachable at " + path_ + ": "; }

  Result<void> connect(int fd) const {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);  // length checked by caller
    if (!boundSends(fd, deadline_)) return transport(errno);
    while (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      if (errno == EINTR) continue;
      // A full listen backlog waits up to SO_SNDTIMEO, then says EAGAIN.
      if (errno == EAGAIN || errno == EINPROGRESS) return timedOut();
      return transport(errno);
    }
    return {};
  }

  Result<void> send(int fd, std::string_view text) const {
    while (!text.empty()) {
      if (!boundSends(fd, deadline_)) return transport(errno);
      const ssize_t sent = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return timedOut();
        return transport(errno);
      }
      text.remove_prefix(static_cast<std::size_t>(sent));
    }
    return {};
  }

  Result<HttpResponse> receive(int fd) const {
    http::response_parser<http::string_body> parser;
    parser.body_limit(maxResponseBytes_);
    parser.eager(true);
    std::string pending;
    std::array<char, 16 * 1024> chunk{};
    beast::error_code failure;
    while (!parser.is_done() && !failure) {
      pollfd readable{fd, POLLIN, 0};
      const int ready = ::poll(&readable, 1, millisecondsLeft(deadline_));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return transport(errno);
      if (ready == 0) return timedOut();
      const ssize_t got = ::recv(fd, chunk.data(), chunk.size(), 0);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return transport(errno);
      if (got == 0) {
        // A hang-up completes a read-to-EOF body; before any byte, or mid-message, it is a
        // cut-short answer.
        if (parser.got_some()) parser.put_eof(failure);
        if (!failure && !parser.is_done()) failure = http::error::partial_message;
        break;
      }
      pending.append(chunk.data(), static_cast<std::size_t>(got));
      failure = feed(parser, pending);
    }
    if (failure) return failed(failure);
    auto response = parser.release();
    return HttpResponse{response.result_int(), std::string(response[http::field::content_type]),
                        std::move(response.body())};
  }

  /// Gives `pending` to the parser, keeping what it has not consumed yet.
  beast::error_code feed(http::response_parser<http::string_body>& parser,
                         std::string& pending) const {
    beast::error_code error;
    while (!pending.empty() && !parser.is_done()) {
      const std::size_t used = parser.put(boost::asio::buffer(pending), error);
      pending.erase(0, used);
      if (error == http::error::need_more) return {};
      if (error) return error;
      // Checked here: Beast 1.74 loses the body_limit error for a Content-Length in eager
      // mode. Chunked and read-to-EOF bodies are counted by the parser itself.
      if (parser.is_header_done() && parser.content_length().value_or(0) > maxResponseBytes_) {
        return http::error::body_limit;
      }
      if (used == 0) return {};
    }
    return {};
  }

  std::unexpected<Error> failed(const beast::error_code& failure) const {
    if (failure == http::error::body_limit) {
      return fail(ErrorCode::kInternal, "hostport-agent at " + path_ +
                                            " sent an answer larger than " +
                                            std::to_string(maxResponseBytes_) + " bytes");
    }
    if (failure == http::error::end_of_stream || failure == http::error::partial_message) {
      return fail(ErrorCode::kUnavailable,
                  unreachable() + "connection closed before a complete answer");
    }
    return fail(ErrorCode::kInternal, "hostport-agent at " + path_ +
                                          " sent a malformed HTTP answer: " + failure.message());
  }

  const std::string& path_;
  const HttpExchange& exchange_;
  std::chrono::milliseconds timeout_;
  std::size_t maxResponseBytes_;
  Clock::time_point deadline_;
};

}  // namespace

Result<HttpResponse> exchangeOverUnixSocket(const std::string& socketPath,
                                            const HttpExchange& exchange,
                                            std::chrono::milliseconds timeout,
                                            std::size_t maxResponseBytes) {
  // Beast reports parse failures through error codes; what can still throw is allocation,
  // which must not escape into the plugin either.
  try {
    return Exchange(socketPath, exchange, timeout, maxResponseBytes).run();
  } catch (const std::exception& error) {
    return fail(ErrorCode::kInternal,
                "talking to hostport-agent at " + socketPath + ": " + std::string(error.what()));
  }
}

}  // namespace hostport::agent::api
