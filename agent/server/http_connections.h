#pragma once
// What the HTTP listeners share, whatever their socket: the per-connection session (a TLS
// handshake where there is one, read deadline, header and body limits, framing checks
// (http_framing.h), routing, keep-alive, and a watch on the client while a handler holds its
// request) and the accept loop with its connection cap. The Unix control socket
// (unix_http_server.h), the TCP metrics listener (tcp_http_server.h) and the admission server's
// TLS listener (tls_http_server.h) are the same server over three streams; only their sockets
// differ. Internal to agent/server: included by those .cc files only.

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "agent/api/routes.h"
#include "agent/log/event_log.h"
#include "agent/log/line_throttle.h"
#include "agent/server/http_framing.h"
#include "agent/server/router.h"
#include "agent/server/server_limits.h"

namespace hostport::agent::server::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

/// A connection's stream: the socket itself (a Unix socket, TCP), or TLS over TCP.
template <typename Protocol>
using PlainStream =
    beast::basic_stream<Protocol, asio::any_io_executor, beast::unlimited_rate_policy>;
using TlsStream = beast::ssl_stream<PlainStream<asio::ip::tcp>>;

template <typename Stream>
inline constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

/// One connection: reads a request within the limits, routes it, writes the answer, and reads
/// the next while the client keeps the connection alive.
template <typename Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
  using Protocol = typename beast::lowest_layer_type<Stream>::protocol_type;

 public:
  /// `context` keeps what the stream uses alive for as long as the session (a TLS context that
  /// the listener may replace meanwhile); null for a plain stream.
  HttpSession(Stream stream, std::shared_ptr<void> context, const Router& router,
              const ServerLimits& limits, std::shared_ptr<std::atomic<std::size_t>> open,
              std::shared_ptr<const ConnectionPeer> peer)
      : context_(std::move(context)),
        stream_(std::move(stream)),
        router_(router),
        limits_(limits),
        open_(std::move(open)),
        peer_(std::move(peer)) {
    ++*open_;
  }
  // The count is shared: a session still held by the io_context's queue when its listener is
  // gone (at shutdown) is destroyed with the io_context, after the listener.
  ~HttpSession() { --*open_; }

  void start() {
    if constexpr (kIsTls<Stream>) {
      // The handshake counts against the first request's deadline: a client that connects and
      // says nothing holds its slot no longer than one that sends half a request.
      lowest().expires_after(limits_.readTimeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (!ec) self->read();
                              });
    } else {
      read();
    }
  }

 private:
  auto& lowest() { return beast::get_lowest_layer(stream_); }

  void read() {
    method_.clear();
    path_.clear();
    parser_.emplace();
    parser_->body_limit(limits_.maxBodyBytes);
    parser_->header_limit(static_cast<std::uint32_t>(limits_.maxHeaderBytes));
    lowest().expires_after(limits_.readTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      keepAlive_ = false;
      if (ec == http::error::body_limit) {
        // The header is read: the answer can say which request it refuses.
        const auto& header = parser_->get();
        method_ = std::string(header.method_string());
        path_ = std::string(pathOf({header.target().data(), header.target().size()}));
        write(errorResponse(413, "too_large",
                            method_ + " " + path_ +
                                ": the request body exceeds the agent's limit of " +
                                std::to_string(limits_.maxBodyBytes) + " bytes"));
      } else {
        write(errorResponse(413, "too_large",
                            "the request header exceeds the agent's limit of " +
                                std::to_string(limits_.maxHeaderBytes) + " bytes"));
      }
      return;
    }
    if (ec && isMalformed(ec)) {
      keepAlive_ = false;
      write(errorResponse(400, "bad_request", "malformed HTTP request: " + ec.message()));
      return;
    }
    if (ec) return;  // closed or timed out: drop the connection
    // The handler may wait for the journal; that is not the client's fault.
    lowest().expires_never();
    started_ = std::chrono::steady_clock::now();
    auto& message = parser_->get();
    keepAlive_ = message.keep_alive();
    const std::string_view target(message.target().data(), message.target().size());
    method_ = std::string(message.method_string());
    path_ = std::string(pathOf(target));
    if (auto refusal = framingRefusal(message.base())) {
      keepAlive_ = false;  // where the body ends is not known
      write(std::move(*refusal));
      return;
    }
    auto request = makeRequest(method_, target, std::move(message.body()));
    if (!request) {
      write(errorResponse(400, "invalid_argument", request.error().message));
      return;
    }
    request->peer = peer_;
    clientGone_ = std::make_shared<ClientGone>();
    request->clientGone = clientGone_;
    answered_ = false;
    held_ = true;
    auto self = this->shared_from_this();
    router_.dispatch(*request, [self](api::HttpResponse response) {
      self->answered_ = true;
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->write(std::move(response));
      });
    });
    if (!answered_) watchClient();
  }

  /// A parse error of the request itself, answered with 400; the others (the client closed, or
  /// stopped halfway) have nobody to answer.
  static bool isMalformed(const beast::error_code& ec) {
    return ec.category() == beast::error_code(http::error::bad_method).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
  }

  /// While a handler holds the request, waits for the client to send more (kept for the next
  /// read), to close or to fail: a client that has gone frees its connection at once, however
  /// long the handler meant to hold the request (the pod socket's ?wait=). Not over TLS: bytes
  /// read past the TLS layer would be lost to it, and its handlers (the admission server's)
  /// answer before they return.
  void watchClient() {
    if constexpr (kIsTls<Stream>) return;
    lowest().socket().async_wait(
        Protocol::socket::wait_read,
        [self = this->shared_from_this()](beast::error_code ec) { self->onClientReadable(ec); });
  }

  void onClientReadable(beast::error_code ec) {
    if (!held_ || ec == asio::error::operation_aborted) return;
    // Bytes pipelined behind the held request, up to one request's worth, wait in buffer_ for
    // the next read; more than that ahead of an answer, like the end of the stream or an error,
    // ends the connection.
    if (!ec && buffer_.size() < limits_.maxHeaderBytes + limits_.maxBodyBytes) {
      const auto space = buffer_.prepare(kWatchChunk);
      const ssize_t got =
          ::recv(lowest().socket().native_handle(), space.data(), space.size(), MSG_DONTWAIT);
      if (got > 0) buffer_.commit(static_cast<std::size_t>(got));
      if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) {
        watchClient();
        return;
      }
    }
    gone_ = true;
    beast::error_code ignored;
    lowest().socket().close(ignored);
    clientGone_->fire();
  }

  void write(api::HttpResponse response) {
    if (held_) {
      held_ = false;
      beast::error_code ignored;
      lowest().socket().cancel(ignored);  // the watch
    }
    logRequest(response.status);
    if (gone_) return;  // nobody to answer; the session ends with this handler
    auto message = std::make_shared<http::response<http::string_body>>();
    message->result(response.status);
    message->version(11);
    message->set(http::field::server, "hostport-agent");
    message->set(http::field::content_type, response.contentType);
    message->keep_alive(keepAlive_);
    message->body() = std::move(response.body);
    message->prepare_payload();
    lowest().expires_after(limits_.readTimeout);
    http::async_write(
        stream_, *message,
        [self = this->shared_from_this(), message](beast::error_code ec, std::size_t) {
          if (ec) return;
          if (self->keepAlive_) {
            self->read();
          } else {
            self->close();
          }
        });
  }

  /// Ends the connection after its last answer: TLS says so (close_notify) first.
  void close() {
    if constexpr (kIsTls<Stream>) {
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        self->lowest().socket().shutdown(Protocol::socket::shutdown_send, ignored);
      });
    } else {
      beast::error_code ignored;
      lowest().socket().shutdown(Protocol::socket::shutdown_send, ignored);
    }
  }

  /// server.request, at debug: what was asked and how it was answered.
  void logRequest(unsigned status) const {
    if (!log::enabled(log::Component::kServer, log::Level::kDebug)) return;
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started_);
    log::event(log::Component::kServer, log::Level::kDebug, "server.request",
               {log::untrusted("method", method_),
                log::untrusted("path", path_),
                {"status", status},
                {"us", elapsed.count()}});
  }

  std::shared_ptr<void> context_;  // declared first: the stream uses it until its end
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const Router& router_;
  const ServerLimits limits_;
  std::shared_ptr<std::atomic<std::size_t>> open_;
  std::shared_ptr<const ConnectionPeer> peer_;
  bool keepAlive_ = true;
  // While a handler holds a request: whether it has answered (from any thread), whether the
  // session still waits for the answer, and whether the client has gone meanwhile (the session's
  // executor alone).
  std::atomic<bool> answered_ = false;
  bool held_ = false;
  bool gone_ = false;
  std::shared_ptr<ClientGone> clientGone_;
  static constexpr std::size_t kWatchChunk = 4096;
  // The request being answered, for the log.
  std::string method_;
  std::string path_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

/// The accept loop of one listening socket: a session per connection, up to maxConnections open;
/// the ones over the cap are closed at once and counted in server.connection_shed.
template <typename Protocol, typename Stream = PlainStream<Protocol>>
struct HttpAcceptLoop {
  HttpAcceptLoop(asio::io_context& io, const Router& router, ServerLimits limits)
      : io(io), acceptor(io), router(router), limits(limits) {}

  void accept() {
    acceptor.async_accept(
        asio::make_strand(io), [this](beast::error_code ec, typename Protocol::socket socket) {
          if (ec == asio::error::operation_aborted) return;
          if (ec) {
            // EMFILE, ENFILE, ENOBUFS: accepting again at once fails again at once, a busy loop
            // that starves everything else. Wait a moment; sessions closing free descriptors.
            if (const auto failed = acceptFailedLog.admit(log::LineThrottle::Clock::now())) {
              log::event(log::Component::kServer, log::Level::kWarn, "server.accept_failed",
                         {{"cause", ec.message()}, {"failures", *failed}});
            }
            retry.expires_after(kAcceptRetryDelay);
            retry.async_wait([this](beast::error_code waited) {
              if (!waited) accept();
            });
            return;
          }
          if (open->load() >= limits.maxConnections) {
            // A flood sheds thousands a second: one line a second, counting them.
            if (const auto shed = shedLog.admit(log::LineThrottle::Clock::now())) {
              log::event(log::Component::kServer, log::Level::kWarn, "server.connection_shed",
                         {{"open", open->load()}, {"shed", *shed}});
            }
            beast::error_code ignored;
            socket.close(ignored);  // shed load rather than queue without bound
          } else {
            serve(std::move(socket));
          }
          accept();
        });
  }

  void serve(typename Protocol::socket socket) {
    std::shared_ptr<const ConnectionPeer> peer;
    if (admit) {
      peer = admit(socket.native_handle());
      if (!peer) {
        beast::error_code ignored;
        socket.close(ignored);  // over its caller's cap: admit() logged it
        return;
      }
    }
    if constexpr (kIsTls<Stream>) {
      // Each connection keeps the context it started with; a new one serves the next.
      std::shared_ptr<asio::ssl::context> context = tlsContext();
      Stream stream(std::move(socket), *context);
      std::make_shared<HttpSession<Stream>>(std::move(stream), std::move(context), router, limits,
                                            open, std::move(peer))
          ->start();
    } else {
      std::make_shared<HttpSession<Stream>>(Stream(std::move(socket)), nullptr, router, limits,
                                            open, std::move(peer))
          ->start();
    }
  }

  asio::io_context& io;
  typename Protocol::acceptor acceptor;
  const Router& router;
  ServerLimits limits;
  std::shared_ptr<std::atomic<std::size_t>> open = std::make_shared<std::atomic<std::size_t>>(0);
  log::LineThrottle shedLog;  // only the accept handler uses it, one at a time
  log::LineThrottle acceptFailedLog;
  static constexpr std::chrono::milliseconds kAcceptRetryDelay{100};
  asio::steady_timer retry{io};
  AdmitPeer admit;  // set before accept() starts
  /// The TLS context a new connection uses, from any thread (TlsStream only).
  std::function<std::shared_ptr<asio::ssl::context>()> tlsContext;
};

}  // namespace hostport::agent::server::detail
