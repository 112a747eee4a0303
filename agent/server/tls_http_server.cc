#include "agent/server/tls_http_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <mutex>

#include "agent/log/event_log.h"
#include "agent/server/http_connections.h"
#include "agent/server/tcp_endpoint.h"

namespace hostport::agent::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using Protocol = asio::ip::tcp;

Result<TlsIdentity> TlsIdentity::fromPem(const std::string& certificateChainPem,
                                         const std::string& privateKeyPem) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  beast::error_code ec;
  // TLS 1.2 and 1.3 only, and no renegotiation: what kube-apiserver speaks, and nothing older.
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_RENEGOTIATION);
  if (!ec) context->use_certificate_chain(asio::buffer(certificateChainPem), ec);
  if (ec) return fail(ErrorCode::kInvalidArgument, "cannot load the certificate: " + ec.message());
  context->use_private_key(asio::buffer(privateKeyPem), ssl::context::pem, ec);
  if (ec) return fail(ErrorCode::kInvalidArgument, "cannot load the private key: " + ec.message());
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    ERR_clear_error();
    return fail(ErrorCode::kInvalidArgument, "the private key is not the certificate's");
  }
  return TlsIdentity(std::move(context));
}

struct TlsHttpServer::Impl : detail::HttpAcceptLoop<Protocol, detail::TlsStream> {
  Impl(asio::io_context& io, const Router& router, ServerLimits limits, TlsIdentity identity)
      : HttpAcceptLoop(io, router, limits),
        current(std::static_pointer_cast<ssl::context>(identity.context_)) {
    tlsContext = [this] {
      std::lock_guard lock(mutex);
      return current;
    };
  }

  std::mutex mutex;  // the accept handler reads `current`, setIdentity() replaces it
  std::shared_ptr<ssl::context> current;
};

TlsHttpServer::TlsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TlsHttpServer::~TlsHttpServer() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

void TlsHttpServer::setIdentity(TlsIdentity identity) {
  std::lock_guard lock(impl_->mutex);
  impl_->current = std::static_pointer_cast<ssl::context>(identity.context_);
}

uint16_t TlsHttpServer::port() const {
  beast::error_code ec;
  const auto endpoint = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

Result<std::unique_ptr<TlsHttpServer>> TlsHttpServer::listen(asio::io_context& io,
                                                             const IpAddress& address,
                                                             uint16_t port, const Router& router,
                                                             ServerLimits limits,
                                                             TlsIdentity identity) {
  auto impl = std::make_unique<Impl>(io, router, limits, std::move(identity));
  HOSTPORT_TRY_VOID(bindTcp(impl->acceptor, address, port));
  impl->accept();
  std::unique_ptr<TlsHttpServer> server(new TlsHttpServer(std::move(impl)));
  log::event(log::Component::kServer, log::Level::kInfo, "server.listening",
             {{"address", describeEndpoint(address, server->port())},
              {"tls", true},
              {"max_connections", limits.maxConnections}});
  return server;
}

}  // namespace hostport::agent::server
