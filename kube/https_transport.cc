#include "kube/https_transport.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/version.hpp>
#include <optional>

namespace hostport::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t kMaxResponseBody = 8 << 20;  // a Pod or Node object is kilobytes
constexpr std::size_t kStreamReadBytes = 64 << 10;

Error unavailable(const std::string& step, const boost::system::error_code& error) {
  Error failure{ErrorCode::kUnavailable, "API server " + step + ": " + error.message(), {}, {}};
  if (error.category() == boost::system::system_category() ||
      error.category() == boost::system::generic_category()) {
    failure.cause = std::error_code(error.value(), std::generic_category());
  }
  return failure;
}

template <typename Fields>
std::map<std::string, std::string> lowerCaseHeaders(const Fields& fields) {
  std::map<std::string, std::string> headers;
  for (const auto& field : fields) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers[name] = std::string(field.value());
  }
  return headers;
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code error;
  asio::ip::make_address(host, error);
  return !error;
}

}  // namespace

struct HttpsTransport::State {
  ClusterConfig config;
  asio::io_context io;
  std::atomic<bool> cancelled{false};
  asio::ssl::context tls{asio::ssl::context::tls_client};
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream;
  beast::flat_buffer buffer;
  int connections = 0;

  /// Runs the io_context until the queued operations finish or `deadline` passes; the stream's
  /// own expiry turns the deadline into an error of the operation.
  void run() {
    io.restart();
    io.run();
  }

  Result<void> connect(std::chrono::steady_clock::time_point deadline) {
    stream.reset();
    buffer.clear();
    stream.emplace(io, tls);
    auto& ssl = *stream;
    ssl.set_verify_mode(asio::ssl::verify_peer);
    const std::string& name = config.tlsServerName.empty() ? config.host : config.tlsServerName;
    ssl.set_verify_callback(asio::ssl::host_name_verification(name));
    if (!isIpAddress(name)) {
      // SNI, for servers behind a name-routed proxy.
      SSL_set_tlsext_host_name(ssl.native_handle(), name.c_str());
    }
    boost::system::error_code failure;
    tcp::resolver resolver(io);
    // The stream's expiry covers connect and handshake; the resolve (a DNS name in a kubeconfig)
    // gets the same deadline from this timer.
    asio::steady_timer resolveDeadline(io);
    resolveDeadline.expires_at(deadline);
    resolveDeadline.async_wait([&](const boost::system::error_code& expired) {
      if (!expired) resolver.cancel();
    });
    const auto finish = [&](const boost::system::error_code& error) {
      failure = error;
      resolveDeadline.cancel();
    };
    resolver.async_resolve(
        config.host, std::to_string(config.port),
        [&](const boost::system::error_code& error, tcp::resolver::results_type found) {
          if (error) return finish(error);
          beast::get_lowest_layer(ssl).expires_at(deadline);
          beast::get_lowest_layer(ssl).async_connect(
              found, [&](const boost::system::error_code& connected, const tcp::endpoint&) {
                if (connected) return finish(connected);
                ssl.async_handshake(
                    asio::ssl::stream_base::client,
                    [&](const boost::system::error_code& shaken) { finish(shaken); });
              });
        });
    run();
    if (failure) {
      stream.reset();
      return std::unexpected(unavailable("connect to " + config.server(), failure));
    }
    ++connections;
    return {};
  }

  http::request<http::string_body> message(const ApiRequest& request,
                                           const std::string& token) const {
    http::request<http::string_body> out{http::string_to_verb(request.method), request.target, 11};
    out.set(http::field::host, config.host);
    out.set(http::field::user_agent, "hostport-agent");
    out.set(http::field::accept, "application/json");
    if (!token.empty()) out.set(http::field::authorization, "Bearer " + token);
    if (!request.contentType.empty()) out.set(http::field::content_type, request.contentType);
    out.body() = request.body;
    out.prepare_payload();
    return out;
  }
};

HttpsTransport::HttpsTransport(std::unique_ptr<State> state) : state_(std::move(state)) {}
HttpsTransport::~HttpsTransport() = default;

Result<std::unique_ptr<HttpsTransport>> HttpsTransport::create(const ClusterConfig& config) {
  auto state = std::make_unique<State>();
  state->config = config;
  boost::system::error_code error;
  state->tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1);
  if (config.caPem.empty()) {
    state->tls.set_default_verify_paths(error);
  } else {
    state->tls.add_certificate_authority(asio::buffer(config.caPem), error);
  }
  if (error) {
    return fail(ErrorCode::kInvalidArgument, "the cluster CA does not load: " + error.message());
  }
  const auto& credentials = config.credentials;
  if (!credentials.clientCertificatePem.empty()) {
    state->tls.use_certificate_chain(asio::buffer(credentials.clientCertificatePem), error);
    if (!error) {
      state->tls.use_private_key(asio::buffer(credentials.clientKeyPem), asio::ssl::context::pem,
                                 error);
    }
    if (error) {
      return fail(ErrorCode::kInvalidArgument,
                  "the client certificate or key does not load: " + error.message());
    }
  }
  return std::unique_ptr<HttpsTransport>(new HttpsTransport(std::move(state)));
}

int HttpsTransport::connections() const { return state_->connections; }

Result<ApiResponse> HttpsTransport::exchange(const ApiRequest& request, const std::string& token,
                                             std::chrono::milliseconds timeout) {
  auto& s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!s.stream) HOSTPORT_TRY_VOID(s.connect(deadline));
  const auto message = s.message(request, token);

  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBody);
  boost::system::error_code failure;
  std::string step = "write";
  beast::get_lowest_layer(*s.stream).expires_at(deadline);
  http::async_write(*s.stream, message, [&](const boost::system::error_code& wrote, std::size_t) {
    if (wrote) {
      failure = wrote;
      return;
    }
    step = "read";
    http::async_read(*s.stream, s.buffer, parser,
                     [&](const boost::system::error_code& read, std::size_t) { failure = read; });
  });
  s.run();
  if (failure) {
    s.stream.reset();  // a connection in an unknown state is never reused
    return std::unexpected(
        unavailable(step + " " + request.method + " " + request.target, failure));
  }
  auto response = parser.release();
  ApiResponse out;
  out.status = static_cast<int>(response.result_int());
  out.body = std::move(response.body());
  out.headers = lowerCaseHeaders(response);
  if (!response.keep_alive()) s.stream.reset();
  return out;
}

Result<ApiResponse> HttpsTransport::stream(const ApiRequest& request, const std::string& token,
                                           std::chrono::milliseconds connectTimeout,
                                           std::chrono::milliseconds idleTimeout,
                                           const std::function<bool(std::string_view)>& onData) {
  auto& s = *state_;
  const std::string what = request.method + " " + request.target;
  const auto cancelled = [&] {
    s.stream.reset();
    return fail(ErrorCode::kUnavailable, "API server " + what + ": cancelled");
  };
  if (s.cancelled) return cancelled();
  const auto deadline = std::chrono::steady_clock::now() + connectTimeout;
  if (!s.stream) HOSTPORT_TRY_VOID(s.connect(deadline));
  const auto message = s.message(request, token);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // a watch has no end but the server's
  boost::system::error_code failure;
  std::string step = "write";
  auto& socket = beast::get_lowest_layer(*s.stream);
  socket.expires_at(deadline);
  http::async_write(*s.stream, message, [&](const boost::system::error_code& wrote, std::size_t) {
    if (wrote) {
      failure = wrote;
      return;
    }
    step = "read";
    socket.expires_after(idleTimeout);
    http::async_read_header(
        *s.stream, s.buffer, parser,
        [&](const boost::system::error_code& read, std::size_t) { failure = read; });
  });
  s.run();
  // A cancel() posted while nothing ran is caught here, before a read that could last minutes.
  if (s.cancelled) return cancelled();
  if (failure) {
    s.stream.reset();
    return std::unexpected(unavailable(step + " " + what, failure));
  }
  ApiResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  out.headers = lowerCaseHeaders(parser.get());
  const bool streamed = out.status >= 200 && out.status <= 299;
  std::string chunk(kStreamReadBytes, '\0');
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    socket.expires_after(idleTimeout);
    http::async_read_some(
        *s.stream, s.buffer, parser, [&](const boost::system::error_code& read, std::size_t) {
          failure = read == http::error::need_buffer ? boost::system::error_code() : read;
        });
    s.run();
    if (s.cancelled) return cancelled();
    if (failure) {
      s.stream.reset();
      return std::unexpected(unavailable("read " + what, failure));
    }
    const std::string_view got(chunk.data(), chunk.size() - parser.get().body().size);
    if (!streamed) {
      out.body.append(
          got.substr(0, kMaxResponseBody - std::min(out.body.size(), kMaxResponseBody)));
    } else if (!got.empty() && !onData(got)) {
      s.stream.reset();  // the rest of the body is not wanted: the connection cannot be reused
      return out;
    }
  }
  socket.expires_never();
  if (!parser.get().keep_alive()) s.stream.reset();
  return out;
}

void HttpsTransport::cancel() {
  auto& s = *state_;
  s.cancelled = true;
  // Runs on the thread in stream(), inside its run(): the read in progress ends at once.
  asio::post(s.io, [&s] {
    if (s.stream) beast::get_lowest_layer(*s.stream).cancel();
  });
}

}  // namespace hostport::kube
