#include "tls/openssl_handles.h"

#include <openssl/err.h>

#include <climits>

namespace hostport::tls {

Error openSslError(ErrorCode code, std::string_view what) {
  std::string message(what);
  char buffer[256];
  for (unsigned long error = ERR_get_error(); error != 0; error = ERR_get_error()) {
    ERR_error_string_n(error, buffer, sizeof(buffer));
    message += message.size() == what.size() ? ": " : "; ";
    message += buffer;
  }
  return Error{code, std::move(message), {}, {}};
}

BioPtr pemBio(std::string_view pem) {
  if (pem.size() > INT_MAX) return nullptr;
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Result<std::string> readBio(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size < 0 || data == nullptr) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot read a memory BIO"));
  }
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace hostport::tls
