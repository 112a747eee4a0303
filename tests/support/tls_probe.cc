#include "tests/support/tls_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <memory>

#include "common/unique_fd.h"
#include "tls/openssl_handles.h"

namespace hostport::test {
namespace {

using SslContextPtr = std::unique_ptr<SSL_CTX, tls::OpenSslFree<&SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, tls::OpenSslFree<&SSL_free>>;

Result<UniqueFd> connectLoopback(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!fd.valid() ||
      ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return fail(ErrorCode::kUnavailable, "cannot connect to 127.0.0.1:" + std::to_string(port));
  }
  timeval timeout{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

/// A handshake over a fresh connection with a client limited to `min`..`max` (0: no bound);
/// the connection when it completed, nullptr when the server refused it.
struct Handshake {
  UniqueFd fd;
  SslContextPtr context;
  SslPtr ssl;
  bool completed = false;
};

Result<Handshake> handshake(uint16_t port, int min, int max) {
  Handshake out;
  HOSTPORT_TRY(out.fd, connectLoopback(port));
  out.context.reset(SSL_CTX_new(TLS_client_method()));
  if (!out.context) return fail(ErrorCode::kInternal, "SSL_CTX_new failed");
  SSL_CTX_set_security_level(out.context.get(), 0);  // let the client offer old versions at all
  SSL_CTX_set_min_proto_version(out.context.get(), min);
  SSL_CTX_set_max_proto_version(out.context.get(), max);
  out.ssl.reset(SSL_new(out.context.get()));
  if (!out.ssl || SSL_set_fd(out.ssl.get(), out.fd.get()) != 1) {
    return fail(ErrorCode::kInternal, "SSL_new failed");
  }
  out.completed = SSL_connect(out.ssl.get()) == 1;
  ERR_clear_error();
  return out;
}

}  // namespace

Result<std::string> servedCertificate(uint16_t port) {
  HOSTPORT_TRY(const Handshake done, handshake(port, 0, 0));
  if (!done.completed) return fail(ErrorCode::kUnavailable, "the TLS handshake failed");
  X509* certificate = SSL_get0_peer_certificate(done.ssl.get());  // owned by the connection
  tls::BioPtr bio(BIO_new(BIO_s_mem()));
  if (certificate == nullptr || !bio || PEM_write_bio_X509(bio.get(), certificate) != 1) {
    return fail(ErrorCode::kInternal, "no certificate to write");
  }
  return tls::readBio(bio.get());
}

Result<bool> acceptsTlsVersion(uint16_t port, int version) {
  HOSTPORT_TRY(const Handshake done, handshake(port, version, version));
  return done.completed;
}

}  // namespace hostport::test
