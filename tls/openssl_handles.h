#pragma once
// OpenSSL's handles as unique_ptrs with their own free functions, and OpenSSL's error queue as an
// Error. Included by .cc files only: no header of ours exposes an OpenSSL type.

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::tls {

/// Frees an OpenSSL handle with its own free function: the deleter of every handle below.
template <auto Free>
struct OpenSslFree {
  template <typename T>
  void operator()(T* handle) const {
    Free(handle);
  }
};

using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<&EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree<&X509_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree<&BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslFree<&BN_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslFree<&X509_EXTENSION_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, OpenSslFree<&GENERAL_NAMES_free>>;

/// "<what>: <OpenSSL's reasons>", emptying this thread's OpenSSL error queue.
Error openSslError(ErrorCode code, std::string_view what);

/// The PEM text as a read-only memory BIO.
BioPtr pemBio(std::string_view pem);

/// Everything written to a memory BIO.
Result<std::string> readBio(BIO* bio);

}  // namespace hostport::tls
