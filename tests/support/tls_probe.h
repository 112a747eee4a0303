#pragma once
// A look at a TLS server from outside, as a client that does not trust it: which certificate it
// serves, and whether it accepts a handshake of a given protocol version. Blocking, OpenSSL.

#include <cstdint>
#include <string>

#include "common/error.h"

namespace hostport::test {

/// The certificate 127.0.0.1:`port` serves, as PEM; nothing is verified.
Result<std::string> servedCertificate(uint16_t port);

/// Whether 127.0.0.1:`port` completes a handshake with a client that speaks exactly TLS
/// `version` (TLS1_1_VERSION, TLS1_2_VERSION, ...); an error when it could not connect at all.
Result<bool> acceptsTlsVersion(uint16_t port, int version);

}  // namespace hostport::test
