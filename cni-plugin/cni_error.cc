#include "cni-plugin/cni_error.h"

#include <nlohmann/json.hpp>

namespace hostport::cni {

int cniCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIncompatibleVersion:
      return kCniIncompatibleVersion;
    case ErrorCode::kInvalidEnvironment:
      return kCniInvalidEnvironment;
    case ErrorCode::kIo:
      return kCniIoFailure;
    case ErrorCode::kDecode:
      return kCniDecodeFailure;
    case ErrorCode::kInvalidArgument:
      return kCniInvalidConfig;
    case ErrorCode::kUnavailable:
      return kCniTryAgainLater;
    case ErrorCode::kKernel:
      return kCniKernelFailure;
    case ErrorCode::kConflict:
      return kCniPortConflict;
    case ErrorCode::kExhausted:
      return kCniPoolExhausted;
    case ErrorCode::kNotAllowed:
      return kCniInvalidConfig;
    case ErrorCode::kQuotaExceeded:
      return kCniQuotaExceeded;
    case ErrorCode::kNotFound:
      return kCniCheckFailed;
    case ErrorCode::kInternal:
      return kCniInternal;
  }
  return kCniInternal;
}

std::string errorDocument(std::string_view cniVersion, const Error& error, int codeOverride) {
  nlohmann::json document = {{"cniVersion", cniVersion},
                             {"code", codeOverride != 0 ? codeOverride : cniCode(error.code)},
                             {"msg", error.message}};
  if (!error.details.empty()) document["details"] = error.details;
  // Replace invalid UTF-8 rather than throw: messages can echo hostile input.
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace hostport::cni
