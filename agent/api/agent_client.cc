#include "agent/api/agent_client.h"

#include <sys/un.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <exception>

#include "agent/api/http_errors.h"
#include "agent/api/routes.h"
#include "agent/api/validation.h"

// The sync Beast API has no deadlines, so each call runs the async operations on a private
// io_context for at most the timeout (run_for) and closes the socket if they are not done. No
// threads, no signals; Asio sends with MSG_NOSIGNAL, so a dead peer is an error, not SIGPIPE.

namespace hostport::agent::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;
using Socket = asio::local::stream_protocol::socket;

http::verb verbOf(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return http::verb::get;
    case HttpMethod::kPost:
      return http::verb::post;
    case HttpMethod::kDelete:
      return http::verb::delete_;
  }
  return http::verb::get;
}

std::string_view methodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kDelete:
      return "DELETE";
  }
  return "GET";
}

/// Lowercase reasons for the errors people meet; the system text otherwise.
std::string reason(const beast::error_code& error) {
  if (error == asio::error::connection_refused) return "connection refused";
  if (error == asio::error::not_found || error == boost::system::errc::no_such_file_or_directory) {
    return "no socket file";
  }
  if (error == asio::error::access_denied) return "permission denied";
  if (error == asio::error::eof || error == http::error::end_of_stream ||
      error == http::error::partial_message) {
    return "connection closed before a complete answer";
  }
  if (error == asio::error::connection_reset) return "connection reset";
  if (error == asio::error::broken_pipe) return "connection closed while sending";
  return error.message();
}

enum class Stage { kConnect, kWrite, kRead, kDone };

}  // namespace

AgentClient AgentClient::forSocket(std::string path, std::chrono::milliseconds timeout) {
  return AgentClient(std::move(path), timeout);
}

AgentClient& AgentClient::withMaxResponseBytes(std::size_t limit) {
  maxResponseBytes_ = limit;
  return *this;
}

Result<HttpResponse> AgentClient::exchange(HttpMethod method, std::string_view target,
                                           std::string_view body) const {
  if (path_.empty()) return fail(ErrorCode::kInvalidArgument, "agent socket path is empty");
  if (path_.size() >= sizeof(sockaddr_un::sun_path)) {
    return fail(ErrorCode::kInvalidArgument, "agent socket path is longer than " +
                                                 std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                                                 " bytes: " + path_);
  }
  // Targets are built by us, but a raw CR, LF or space would still split the request line.
  if (target.empty() || target.front() != '/' ||
      !std::ranges::all_of(target, [](char c) { return c > ' ' && c < '\x7f'; })) {
    return fail(ErrorCode::kInvalidArgument,
                "request target " + quoteText(target) + " must be a path of printable characters");
  }
  const std::string unreachable = "hostport-agent is not reachable at " + path_ + ": ";
  // Asio and Beast report failures through error codes here; what can still throw is
  // allocation and io_context setup, which must not escape into the plugin either.
  try {
    asio::io_context io(1);
    Socket socket(io);
    http::request<http::string_body> request{verbOf(method),
                                             beast::string_view(target.data(), target.size()), 11};
    request.set(http::field::host, "hostport-agent");
    request.set(http::field::user_agent, "hostport-client");
    request.set(http::field::accept, "application/json, text/plain");
    if (method == HttpMethod::kPost) request.set(http::field::content_type, "application/json");
    request.body() = std::string(body);
    request.keep_alive(false);
    request.prepare_payload();

    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(maxResponseBytes_);

    Stage stage = Stage::kConnect;
    beast::error_code failure;
    socket.async_connect(
        asio::local::stream_protocol::endpoint(path_), [&](const beast::error_code& error) {
          if (error) {
            failure = error;
            return;
          }
          stage = Stage::kWrite;
          http::async_write(socket, request, [&](const beast::error_code& error, std::size_t) {
            if (error) {
              failure = error;
              return;
            }
            stage = Stage::kRead;
            // Headers first: Beast 1.74 loses the body_limit error for a response's
            // Content-Length in eager mode, so that limit is checked here. Chunked and
            // read-to-EOF bodies are counted by the parser itself.
            http::async_read_header(
                socket, buffer, parser, [&](const beast::error_code& error, std::size_t) {
                  if (!error && parser.content_length().value_or(0) > maxResponseBytes_) {
                    failure = http::error::body_limit;
                    return;
                  }
                  if (error || parser.is_done()) {
                    failure = error;
                    if (!error) stage = Stage::kDone;
                    return;
                  }
                  http::async_read(socket, buffer, parser,
                                   [&](const beast::error_code& error, std::size_t) {
                                     failure = error;
                                     if (!error) stage = Stage::kDone;
                                   });
                });
          });
        });
    io.run_for(timeout_);
    if (stage != Stage::kDone && !failure) {
      // Closing cancels the pending operation; its handler must run before the locals it
      // captures go away.
      beast::error_code ignored;
      socket.close(ignored);
      io.restart();
      io.run();
      return fail(ErrorCode::kUnavailable,
                  unreachable + "no answer within " + std::to_string(timeout_.count()) + " ms (" +
                      std::string(methodName(method)) + " " + std::string(target) + ")");
    }
    if (failure) {
      const auto& httpErrors = make_error_code(http::error::end_of_stream).category();
      if (failure == http::error::body_limit) {
        return fail(ErrorCode::kInternal, "hostport-agent at " + path_ +
                                              " sent an answer larger than " +
                                              std::to_string(maxResponseBytes_) + " bytes");
      }
      const bool transport = failure.category() != httpErrors ||
                             failure == http::error::end_of_stream ||
                             failure == http::error::partial_message;
      if (transport) return fail(ErrorCode::kUnavailable, unreachable + reason(failure));
      return fail(ErrorCode::kInternal, "hostport-agent at " + path_ +
                                            " sent a malformed HTTP answer: " + failure.message());
    }
    http::response<http::string_body> response = parser.release();
    return HttpResponse{response.result_int(), std::string(response[http::field::content_type]),
                        std::move(response.body())};
  } catch (const std::exception& error) {
    return fail(ErrorCode::kInternal,
                "talking to hostport-agent at " + path_ + ": " + std::string(error.what()));
  }
}

Error AgentClient::invalidAnswer(std::string_view target, const Error& error) const {
  return Error{ErrorCode::kInternal,
               "hostport-agent at " + path_ + " sent an invalid answer to " + std::string(target) +
                   ": " + error.message,
               error.details};
}

Result<json> AgentClient::call(HttpMethod method, std::string_view target,
                               std::string_view body) const {
  auto response = exchange(method, target, body);
  if (!response) return std::unexpected(std::move(response.error()));
  if (response->status < 200 || response->status > 299) {
    return std::unexpected(errorFromBody(response->status, response->body));
  }
  auto document = parseBody(response->body, maxResponseBytes_);
  if (!document) return std::unexpected(invalidAnswer(target, document.error()));
  return std::move(*document);
}

Result<Lease> AgentClient::allocate(const AllocationRequest& request) const {
  const std::string target(kAttachmentsPath);
  auto body = call(HttpMethod::kPost, target, dumpBody(toJson(request)));
  if (!body) return std::unexpected(std::move(body.error()));
  auto lease = leaseFromJson(*body);
  if (!lease) return std::unexpected(invalidAnswer(target, lease.error()));
  return std::move(*lease);
}

Result<std::optional<Lease>> AgentClient::get(const AttachmentKey& key) const {
  const std::string target = attachmentTarget(key);
  auto body = call(HttpMethod::kGet, target);
  if (!body) {
    if (body.error().code == ErrorCode::kNotFound) return std::optional<Lease>();
    return std::unexpected(std::move(body.error()));
  }
  auto lease = leaseFromJson(*body);
  if (!lease) return std::unexpected(invalidAnswer(target, lease.error()));
  return std::optional<Lease>(std::move(*lease));
}

Result<std::optional<Lease>> AgentClient::release(const AttachmentKey& key) const {
  const std::string target = attachmentTarget(key);
  auto body = call(HttpMethod::kDelete, target);
  if (!body) return std::unexpected(std::move(body.error()));
  auto released = releasedFromJson(*body);
  if (!released) return std::unexpected(invalidAnswer(target, released.error()));
  return std::move(*released);
}

Result<std::vector<Lease>> AgentClient::releaseContainer(std::string_view containerId) const {
  const std::string target = containerTarget(containerId);
  auto body = call(HttpMethod::kDelete, target);
  if (!body) return std::unexpected(std::move(body.error()));
  auto leases = leaseListFromJson(*body, "released");
  if (!leases) return std::unexpected(invalidAnswer(target, leases.error()));
  return std::move(*leases);
}

Result<std::vector<Lease>> AgentClient::list(std::string_view namespaceName,
                                             std::string_view podName) const {
  const std::string target = listTarget(namespaceName, podName);
  auto body = call(HttpMethod::kGet, target);
  if (!body) return std::unexpected(std::move(body.error()));
  auto leases = leaseListFromJson(*body, "leases");
  if (!leases) return std::unexpected(invalidAnswer(target, leases.error()));
  return std::move(*leases);
}

Result<std::vector<Lease>> AgentClient::gc(const std::vector<AttachmentKey>& valid) const {
  const std::string target(kGcPath);
  auto body = call(HttpMethod::kPost, target, dumpBody(gcRequestBody(valid)));
  if (!body) return std::unexpected(std::move(body.error()));
  auto leases = leaseListFromJson(*body, "released");
  if (!leases) return std::unexpected(invalidAnswer(target, leases.error()));
  return std::move(*leases);
}

Result<json> AgentClient::pools() const {
  const std::string target(kPoolsPath);
  auto body = call(HttpMethod::kGet, target);
  if (!body) return std::unexpected(std::move(body.error()));
  if (auto rows = poolsFromJson(*body); !rows) {
    return std::unexpected(invalidAnswer(target, rows.error()));
  }
  return std::move(*body);
}

Result<std::vector<PoolUsageRow>> AgentClient::poolUsage() const {
  const std::string target(kPoolsPath);
  auto body = call(HttpMethod::kGet, target);
  if (!body) return std::unexpected(std::move(body.error()));
  auto rows = poolsFromJson(*body);
  if (!rows) return std::unexpected(invalidAnswer(target, rows.error()));
  return std::move(*rows);
}

Result<std::string> AgentClient::getText(std::string_view target) const {
  auto response = exchange(HttpMethod::kGet, target);
  if (!response) return std::unexpected(std::move(response.error()));
  if (response->status < 200 || response->status > 299) {
    return std::unexpected(errorFromBody(response->status, response->body));
  }
  return std::move(response->body);
}

}  // namespace hostport::agent::api
