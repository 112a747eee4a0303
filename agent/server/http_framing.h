#pragma once
// RFC 9112's rules on how a request's body is framed, where Beast's parser (1.74) is lax: it frames
// a body by the last transfer coding alone, so "Transfer-Encoding: xchunked" or
// "chunked, identity" reads as a request without a body, and the bytes after it as the next
// request. The sessions (http_connections.h) check every request here after Beast has read it,
// and close the connection after a refusal, since the end of the body is not known:
//
//   Transfer-Encoding                      answer  why (RFC 9112)
//   absent, "chunked" (any case, OWS)      served
//   with HTTP/1.0                          400     §6.1: faulty framing from a 1.0 sender
//   with Content-Length                    400     §6.3 ¶3: smuggling; a server MAY reject, we do
//   empty, or last coding not chunked      400     §6.3 rule 4: the body's length is unknown
//   ("xchunked", "chunked, identity", "gzip", "chunked;x=1")
//   chunked more than once                 400     §6.1: a sender MUST NOT chunk twice
//   other codings before a final chunked   501     §6.1: a coding the server does not know
//   ("gzip, chunked")                               (we decode none but chunked)
//
// Several Transfer-Encoding fields are one list, in order (RFC 9110 §5.3). Beast itself refuses
// some of these before we see them (a second field after "chunked", Content-Length with chunked);
// the sessions answer its parse errors with 400 too.

#include <boost/beast/http/message.hpp>
#include <optional>

#include "agent/api/http_response.h"

namespace hostport::agent::server {

/// The answer to a request whose framing cannot be trusted (400 or 501, code "bad_framing" or
/// "not_implemented", the message naming the field and the rule); nullopt when it is sound.
std::optional<api::HttpResponse> framingRefusal(const boost::beast::http::request_header<>& header);

}  // namespace hostport::agent::server
