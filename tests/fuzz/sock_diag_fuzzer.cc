// One sock_diag reply message as the agent's port probe reads it (hostnet/sock_diag_message.h):
// the first byte picks the protocol the dump asked for, the rest is the message. Invariants: a
// parsed socket is of a family the message may carry and of the protocol asked for; the parser
// never reads outside the message (ASan).

#include <span>

#include "hostnet/sock_diag_message.h"
#include "tests/fuzz/fuzz_check.h"

namespace {
using hostport::Protocol;
constexpr Protocol kProtocols[] = {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Protocol protocol = kProtocols[data[0] % std::size(kProtocols)];
  const std::span<const std::byte> message(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  const auto socket = hostport::hostnet::parseSockDiagMessage(message, protocol);
  if (!socket) return 0;
  FUZZ_CHECK(socket->protocol == protocol);
  FUZZ_CHECK(socket->family() == hostport::Family::kIPv4 ||
             socket->family() == hostport::Family::kIPv6);
  FUZZ_CHECK(!socket->describe().empty());
  return 0;
}
