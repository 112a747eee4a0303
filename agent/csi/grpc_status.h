#pragma once
// An Error as the gRPC status the CSI spec asks for: bad input INVALID_ARGUMENT, a volume that
// conflicts with a published one ALREADY_EXISTS, a missing one NOT_FOUND, the agent not ready
// UNAVAILABLE, the rest INTERNAL; the message is the error's, which names the field and value.

#include <grpcpp/support/status.h>

#include "common/error.h"

namespace hostport::agent::csi {

grpc::Status toStatus(const Error& error);

/// "OK", "INVALID_ARGUMENT", ...: a status code as logs and metrics name it.
std::string_view statusName(grpc::StatusCode code);

}  // namespace hostport::agent::csi
