#include "agent/csi/grpc_status.h"

namespace hostport::agent::csi {

grpc::Status toStatus(const Error& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kDecode:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case ErrorCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case ErrorCode::kConflict:
      code = grpc::StatusCode::ALREADY_EXISTS;
      break;
    case ErrorCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    default:
      break;
  }
  return {code, error.message};
}

std::string_view statusName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    default:
      return "OTHER";
  }
}

}  // namespace hostport::agent::csi
