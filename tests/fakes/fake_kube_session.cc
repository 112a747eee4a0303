// The fake Kubernetes API server's connections (fake_kube_apiserver.h): one TLS session each,
// requests one after the other, and watches streamed as the real server streams them.

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>

#include "common/ascii.h"
#include "tests/fakes/fake_kube_server_state.h"

namespace hostport::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using nlohmann::json;

namespace {

constexpr std::chrono::seconds kHandshakeTimeout{10};
constexpr std::chrono::seconds kWriteTimeout{10};
constexpr std::uint64_t kMaxBodyBytes = 4 << 20;
// The real server's default for a watch that names none (its --min-request-timeout is 1800 s;
// a client names its own, as client-go does).
constexpr unsigned kDefaultWatchSeconds = 1800;

std::string toStd(beast::string_view text) { return std::string(text.data(), text.size()); }

/// The token of "Bearer <token>" (the scheme in any case), or "".
std::string bearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      ascii::lowercase(authorization.substr(0, kScheme.size())) != kScheme) {
    return {};
  }
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  while (!authorization.empty() && authorization.back() == ' ') authorization.remove_suffix(1);
  return std::string(authorization);
}

/// The CN of the client's certificate when it sent one and it verified against the CA, else "".
std::string verifiedClientName(SSL* ssl) {
  X509* certificate = SSL_get0_peer_certificate(ssl);  // owned by the connection
  if (certificate == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return {};
  char name[256] = {};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, name,
                                          sizeof(name));
  return n > 0 ? std::string(name, static_cast<std::size_t>(n)) : std::string();
}

std::string line(const json& event) { return event.dump() + "\n"; }

/// The kind of one object of `resource`, for a bookmark.
std::string kindOf(std::string_view resource) {
  if (resource == "pods") return "Pod";
  if (resource == "nodes") return "Node";
  return "Object";
}

/// What a watch asked for and where it is.
struct WatchState {
  KubeCollectionPath collection;
  Selector selector;
  std::uint64_t revision = 0;  // every change up to it has been queued
  bool bookmarks = false;
  std::uint64_t bookmarkGeneration = 0;
  std::uint64_t expireGeneration = 0;
  std::uint64_t dropGeneration = 0;
  std::deque<std::string> outbox;  // lines not written yet
  bool writing = false;
  bool ending = false;  // after the outbox, the last chunk
};

/// One TLS connection: handshake, then requests one after the other while the client keeps it
/// alive. No deadline on an idle connection: the server's destructor ends it.
class Session : public FakeKubeWatch, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, FakeKubeApiServer::Impl& server)
      : stream_(std::move(socket), server.tls), timer_(stream_.get_executor()), server_(server) {}

  void start() {
    beast::get_lowest_layer(stream_).expires_after(kHandshakeTimeout);
    stream_.async_handshake(ssl::stream_base::server,
                            [self = shared_from_this()](beast::error_code ec) {
                              if (ec) return;
                              self->clientName_ = verifiedClientName(self->stream_.native_handle());
                              beast::get_lowest_layer(self->stream_).expires_never();
                              self->read();
                            });
  }

  void pump() override;
  void drop() override {
    if (!watch_) return;
    server_.finish(plan_.id, 0);
    endWatch();
    close();
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec) return;  // closed by the client, or not HTTP: the connection ends
    const auto& message = parser_->get();
    keepAlive_ = message.keep_alive();
    request_ = {};
    request_.method = toStd(message.method_string());
    request_.target = toStd(message.target());
    request_.path = request_.target.substr(0, request_.target.find('?'));
    request_.contentType = toStd(message[http::field::content_type]);
    request_.bearerToken = bearerToken(toStd(message[http::field::authorization]));
    request_.clientCertificate = clientName_;
    request_.body = message.body();
    plan_ = server_.receive(request_);
    if (plan_.fault && plan_.fault->held) {
      server_.hold([self = shared_from_this()] { self->act(); });
      return;
    }
    if (plan_.fault && plan_.fault->delay.count() > 0) {
      timer_.expires_after(plan_.fault->delay);
      timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->act();
      });
      return;
    }
    act();
  }

  void act() {
    using Drop = FakeKubeFault::Drop;
    const Drop drop = plan_.fault ? plan_.fault->drop : Drop::kNone;
    if (drop == Drop::kBeforeServing) {
      server_.finish(plan_.id, 0);
      close();
      return;
    }
    if (plan_.authenticated && !(plan_.fault && plan_.fault->status != 0) &&
        request_.method == "GET") {
      if (auto collection = parseKubeCollectionPath(request_.path)) {
        if (auto query = parseKubeListQuery(request_.target); query && query->watch) {
          startWatch(std::move(*collection), *query);
          return;
        }
      }
    }
    FakeKubeReply reply =
        server_.serve(plan_, request_.method, request_.target, request_.contentType, request_.body);
    if (drop == Drop::kAfterServing) {
      server_.finish(plan_.id, 0);
      close();
      return;
    }
    write(std::move(reply));
  }

  void write(FakeKubeReply reply) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(reply.status), 11);
    response->set(http::field::content_type, "application/json");
    response->set(http::field::cache_control, "no-cache, private");
    if (reply.retryAfterSeconds) {
      response->set(http::field::retry_after, std::to_string(*reply.retryAfterSeconds));
    }
    response->keep_alive(keepAlive_);
    response->body() = std::move(reply.body);
    response->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
                        self->server_.finish(self->plan_.id, ec ? 0 : response->result_int());
                        if (ec) return;
                        self->next();
                      });
  }

  /// After an answer: the next request, or the end of a connection the client will not reuse.
  void next() {
    beast::get_lowest_layer(stream_).expires_never();
    if (keepAlive_) {
      read();
      return;
    }
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->close(); });
  }

  // --- A watch ---

  /// Answers 200 with a chunked body and streams the collection's events from the version asked:
  /// the objects there now as ADDED for "" or "0", else the changes after it, or one ERROR 410
  /// when that version is older than the history.
  void startWatch(KubeCollectionPath collection, const KubeListQuery& query) {
    auto selector = Selector::parse(query, collection.resource);
    if (!selector) {
      write({400, kubeStatus(400, selector.error().message).dump(), std::nullopt});
      return;
    }
    watch_.emplace();
    WatchState& watch = *watch_;
    watch.collection = std::move(collection);
    watch.selector = std::move(*selector);
    watch.bookmarks = query.allowWatchBookmarks;
    {
      std::lock_guard lock(server_.mutex);
      FakeKubeObjects& objects = server_.objects;
      watch.bookmarkGeneration = server_.bookmarkGeneration;
      watch.expireGeneration = server_.expireGeneration;
      watch.dropGeneration = server_.dropGeneration;
      std::vector<json> initial;
      std::uint64_t from = 0;
      const bool now = query.resourceVersion.empty() || query.resourceVersion == "0";
      const auto [end, parsed] =
          std::from_chars(query.resourceVersion.data(),
                          query.resourceVersion.data() + query.resourceVersion.size(), from);
      if (now) {
        initial = objects.currentAsAdded(watch.collection, watch.selector);
      } else if (parsed != std::errc() ||
                 end != query.resourceVersion.data() + query.resourceVersion.size()) {
        watch_.reset();
        write({400, kubeStatus(400, "invalid resourceVersion: " + query.resourceVersion).dump(),
               std::nullopt});
        return;
      } else if (auto events = objects.eventsSince(from, watch.collection, watch.selector)) {
        initial = std::move(*events);
      } else {
        initial.push_back(expired("too old resource version: " + query.resourceVersion + " (" +
                                  std::to_string(objects.revision()) + ")"));
        watch.ending = true;
      }
      watch.revision = objects.revision();
      for (const json& event : initial) watch.outbox.push_back(line(event));
    }
    ++server_.openWatches;
    server_.addWatch(std::static_pointer_cast<FakeKubeWatch>(shared_from_this()));
    header_.emplace(http::status::ok, 11);
    header_->set(http::field::content_type, "application/json");
    header_->set(http::field::cache_control, "no-cache, private");
    header_->keep_alive(keepAlive_);
    header_->chunked(true);
    serializer_.emplace(*header_);
    watch.writing = true;
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    http::async_write_header(stream_, *serializer_,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               if (!self->watch_) return;
                               self->watch_->writing = false;
                               if (ec) return self->drop();
                               beast::get_lowest_layer(self->stream_).expires_never();
                               self->flush();
                             });
    timer_.expires_after(std::chrono::seconds(query.timeoutSeconds.value_or(kDefaultWatchSeconds)));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->watch_) return;
      self->watch_->ending = true;  // the watch's time is up: the stream ends, the client resumes
      self->flush();
    });
  }

  static json expired(std::string_view message) {
    return {{"type", "ERROR"}, {"object", kubeStatus(410, message)}};
  }

  /// Writes the outbox one chunk at a time, then the last chunk once the watch is ending.
  void flush() {
    if (!watch_ || watch_->writing) return;
    WatchState& watch = *watch_;
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    if (!watch.outbox.empty()) {
      watch.writing = true;
      asio::async_write(stream_, http::make_chunk(asio::buffer(watch.outbox.front())),
                        [self = shared_from_this()](beast::error_code ec, std::size_t) {
                          if (!self->watch_) return;
                          self->watch_->writing = false;
                          if (ec) return self->drop();
                          self->watch_->outbox.pop_front();
                          self->flush();
                        });
      return;
    }
    if (!watch.ending) {
      beast::get_lowest_layer(stream_).expires_never();
      return;
    }
    watch.writing = true;
    asio::async_write(stream_, http::make_chunk_last(),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (!self->watch_) return;
                        self->server_.finish(self->plan_.id, ec ? 0 : 200);
                        self->endWatch();
                        if (ec) return self->close();
                        self->next();
                      });
  }

  void endWatch() {
    if (!watch_) return;
    watch_.reset();
    // The header and its serializer stay: a write of the header may still be in flight (a watch
    // dropped right after it started), and the next watch replaces them.
    timer_.cancel();
    --server_.openWatches;
  }

  /// Closes the TCP connection at once, without a TLS close_notify: a dropped connection.
  void close() {
    beast::error_code ignored;
    auto& socket = beast::get_lowest_layer(stream_).socket();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  asio::steady_timer timer_;
  FakeKubeApiServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string clientName_;
  bool keepAlive_ = true;
  FakeKubeRequest request_;  // the one being answered
  FakeKubeApiServer::Impl::Plan plan_;
  std::optional<WatchState> watch_;  // while a watch streams
  std::optional<http::response<http::empty_body>> header_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
};

void Session::pump() {
  if (!watch_ || watch_->ending) return;
  WatchState& watch = *watch_;
  bool dropped = false;
  {
    std::lock_guard lock(server_.mutex);
    if (server_.dropGeneration != watch.dropGeneration) {
      dropped = true;
    } else {
      FakeKubeObjects& objects = server_.objects;
      if (auto events = objects.eventsSince(watch.revision, watch.collection, watch.selector)) {
        for (const json& event : *events) watch.outbox.push_back(line(event));
      } else {
        watch.outbox.push_back(
            line(expired("too old resource version: " + std::to_string(watch.revision) + " (" +
                         std::to_string(objects.revision()) + ")")));
        watch.ending = true;
      }
      watch.revision = objects.revision();
      if (server_.expireGeneration != watch.expireGeneration) {
        watch.outbox.push_back(
            line(expired("too old resource version: " + std::to_string(watch.revision) + " (" +
                         std::to_string(objects.revision() + 1) + ")")));
        watch.ending = true;
      } else if (server_.bookmarkGeneration != watch.bookmarkGeneration && watch.bookmarks) {
        watch.outbox.push_back(line(
            {{"type", "BOOKMARK"},
             {"object",
              {{"kind", kindOf(watch.collection.resource)},
               {"apiVersion", watch.collection.groupVersion.substr(
                                  watch.collection.groupVersion.starts_with("/apis/") ? 6 : 5)},
               {"metadata", {{"resourceVersion", std::to_string(watch.revision)}}}}}}));
      }
      watch.bookmarkGeneration = server_.bookmarkGeneration;
      watch.expireGeneration = server_.expireGeneration;
    }
  }
  if (dropped) return drop();
  flush();
}

}  // namespace

void FakeKubeApiServer::Impl::accept() {
  acceptor.async_accept(io, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      ++connections;
      std::make_shared<Session>(std::move(socket), *this)->start();
    }
    accept();
  });
}

}  // namespace hostport::kube
