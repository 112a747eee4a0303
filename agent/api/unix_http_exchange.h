#pragma once
// One HTTP/1.1 request and its answer over a Unix stream socket, blocking, within a deadline.
//
// Design note: every CNI call is a new plugin process that makes one or two of these, and a
// load of them shares the node's cores with the agent. An Asio io_context per call cost an
// eventfd, an epoll instance, a timerfd and their teardown (a fifth of the load client's CPU in
// `perf record`); here a call is socket, connect, send, poll+recv until the answer is complete,
// close. The deadline covers the whole exchange: SO_SNDTIMEO bounds connect and send, poll()
// bounds each read. Beast's parser still reads the answer (chunked, Content-Length or
// read-to-EOF bodies, header limits).

#include <chrono>
#include <string>
#include <string_view>

#include "agent/api/http_response.h"
#include "common/error.h"

namespace hostport::agent::api {

struct HttpExchange {
  std::string_view method;       // "GET", "POST", "DELETE"
  std::string_view target;       // a path of printable characters, checked by the caller
  std::string_view contentType;  // empty: no Content-Type header
  std::string_view body;
};

/// Sends `exchange` to the server at `socketPath` ("Connection: close") and reads its answer, also
/// one the server sent before it closed on a request it would not read to the end (a 413).
/// kUnavailable, starting "hostport-agent is not reachable at <path>: ", for transport failures
/// and the deadline; kInternal for a malformed answer or one whose body exceeds
/// `maxResponseBytes`.
Result<HttpResponse> exchangeOverUnixSocket(const std::string& socketPath,
                                            const HttpExchange& exchange,
                                            std::chrono::milliseconds timeout,
                                            std::size_t maxResponseBytes);

}  // namespace hostport::agent::api
