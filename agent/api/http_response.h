#pragma once
// One HTTP answer of the control socket, as the agent's server writes it and the client reads it
// off the wire: the wire format belongs to the API, which both sides share.

#include <string>

namespace hostport::agent::api {

/// One answer: its status, Content-Type and body.
struct HttpResponse {
  unsigned status = 0;
  std::string contentType;
  std::string body;
};

}  // namespace hostport::agent::api
