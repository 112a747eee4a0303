#include "agent/config/listen_address.h"

#include <algorithm>

#include "common/ascii.h"
#include "common/quote.h"

namespace hostport::agent::config {
namespace {

std::unexpected<Error> invalid(std::string_view text, std::string_view rule) {
  return fail(ErrorCode::kInvalidArgument, quoteText(text) + " " + std::string(rule));
}

}  // namespace

Result<ListenAddress> parseListenAddress(std::string_view text) {
  constexpr std::string_view kForm =
      "is not host:port with an IP address as host, such as 127.0.0.1:9810 or [::1]:9810";
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return invalid(text, kForm);
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  const bool bracketed = host.front() == '[';
  if (bracketed) {
    if (host.size() < 3 || host.back() != ']') return invalid(text, kForm);
    host = host.substr(1, host.size() - 2);
  } else if (host.contains(':')) {
    return invalid(text, "is not host:port: an IPv6 host goes in brackets, such as [::1]:9810");
  }
  auto address = IpAddress::parse(host);
  if (!address) return invalid(text, kForm);
  if (bracketed != (address->family() == Family::kIPv6)) {
    return invalid(text, "is not host:port: only an IPv6 host goes in brackets");
  }
  if (port.empty() || port.size() > 5 || !std::ranges::all_of(port, ascii::isDigit)) {
    return invalid(text, "has no port number after the last ':'");
  }
  const unsigned number = static_cast<unsigned>(std::stoul(std::string(port)));
  if (number == 0 || number > 65535) return invalid(text, "has a port outside 1-65535");
  return ListenAddress{*address, static_cast<uint16_t>(number)};
}

}  // namespace hostport::agent::config
