#include "kube/base64.h"

#include <openssl/evp.h>

namespace hostport::kube {

std::string encodeBase64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

Result<std::string> decodeBase64(std::string_view text, std::string_view what) {
  std::string compact;
  compact.reserve(text.size());
  for (const char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') compact.push_back(c);
  }
  const auto invalid = [&] {
    return fail(ErrorCode::kInvalidArgument, std::string(what) + " is not base64");
  };
  if (compact.size() % 4 != 0) return invalid();
  std::string out(compact.size() / 4 * 3, '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(compact.data()),
                                      static_cast<int>(compact.size()));
  if (written < 0) return invalid();
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t size = static_cast<std::size_t>(written);
  for (std::size_t i = compact.size(); i > 0 && compact[i - 1] == '='; --i) --size;
  out.resize(size);
  return out;
}

}  // namespace hostport::kube
