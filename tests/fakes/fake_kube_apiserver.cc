#include "tests/fakes/fake_kube_apiserver.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/ascii.h"
#include "kube/base64.h"
#include "tests/fakes/fake_kube_objects.h"

namespace hostport::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

/// The fake's certificates: a test's day.
constexpr tls::Validity kDay{std::chrono::hours(24)};
constexpr std::chrono::seconds kHandshakeTimeout{10};
constexpr std::chrono::seconds kWriteTimeout{10};
constexpr std::uint64_t kMaxBodyBytes = 4 << 20;

/// An HTTP answer before it is written.
struct Reply {
  unsigned status = 200;
  std::string body;
  std::optional<unsigned> retryAfterSeconds;
};

Reply statusReply(unsigned code, std::string_view message) {
  return {code, kubeStatus(code, message).dump(), std::nullopt};
}

/// What the real server says with a status, for a fault that answers it.
std::string faultMessage(unsigned status) {
  switch (status) {
    case 409:
      return "Operation cannot be fulfilled: the object has been modified; please apply your "
             "changes to the latest version and try again (injected fault)";
    case 429:
      return "Too many requests, please try again later. (injected fault)";
    case 500:
      return "Internal error occurred: injected fault";
    case 503:
      return "the server is currently unable to handle the request (injected fault)";
    default:
      return "injected fault";
  }
}

std::string toStd(beast::string_view text) { return std::string(text.data(), text.size()); }

/// The token of "Bearer <token>" (the scheme in any case), or "".
std::string bearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      ascii::lowercase(authorization.substr(0, kScheme.size())) != kScheme) {
    return {};
  }
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  while (!authorization.empty() && authorization.back() == ' ') authorization.remove_suffix(1);
  return std::string(authorization);
}

bool matches(const FakeKubeFault& fault, const FakeKubeRequest& request) {
  return request.path.starts_with(fault.pathPrefix) &&
         (fault.method.empty() || fault.method == request.method);
}

Result<void> writeFile(const std::filesystem::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return fail(ErrorCode::kIo, "cannot write " + path.string());
  return {};
}

/// A YAML double-quoted scalar: JSON's string escapes are a subset of YAML's.
std::string yamlQuoted(std::string_view text) { return json(text).dump(); }

/// The CN of the client's certificate when it sent one and it verified against the CA, else "".
std::string verifiedClientName(SSL* ssl) {
  X509* certificate = SSL_get0_peer_certificate(ssl);  // owned by the connection
  if (certificate == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return {};
  char name[256] = {};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, name,
                                          sizeof(name));
  return n > 0 ? std::string(name, static_cast<std::size_t>(n)) : std::string();
}

json apiResource(std::string_view name, bool namespaced, std::string_view kind) {
  json verbs = json::array({"get", "patch", "update"});
  return {{"name", name},
          {"singularName", ""},
          {"namespaced", namespaced},
          {"kind", kind},
          {"verbs", std::move(verbs)}};
}

/// GET /version, and the legacy discovery documents (/api, /apis, /api/v1) that kubectl reads
/// before a patch: the resources the fake serves. nullopt for any other path.
std::optional<json> serverDocument(std::string_view path, std::uint16_t port) {
  if (path == "/version") {
    return json{{"major", "1"},
                {"minor", "30"},
                {"gitVersion", "v1.30.0-hostport-fake"},
                {"platform", "linux/amd64"}};
  }
  if (path == "/api") {
    return json{
        {"kind", "APIVersions"},
        {"versions", {"v1"}},
        {"serverAddressByClientCIDRs",
         {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:" + std::to_string(port)}}}}};
  }
  if (path == "/apis") {
    return json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array()}};
  }
  if (path == "/api/v1") {
    return json{
        {"kind", "APIResourceList"},
        {"groupVersion", "v1"},
        {"resources",
         {apiResource("pods", true, "Pod"), apiResource("pods/status", true, "Pod"),
          apiResource("nodes", false, "Node"), apiResource("nodes/status", false, "Node")}}};
  }
  return std::nullopt;
}

}  // namespace

// --- FakeKubeFault ---

FakeKubeFault FakeKubeFault::answer(unsigned status, std::optional<unsigned> retryAfterSeconds) {
  FakeKubeFault fault;
  fault.status = status;
  fault.retryAfterSeconds = retryAfterSeconds;
  return fault;
}

FakeKubeFault FakeKubeFault::dropConnection() {
  FakeKubeFault fault;
  fault.drop = Drop::kBeforeServing;
  return fault;
}

FakeKubeFault FakeKubeFault::dropAnswer() {
  FakeKubeFault fault;
  fault.drop = Drop::kAfterServing;
  return fault;
}

FakeKubeFault FakeKubeFault::slow(std::chrono::milliseconds delay) {
  FakeKubeFault fault;
  fault.delay = delay;
  return fault;
}

FakeKubeFault FakeKubeFault::on(std::string prefix) const {
  FakeKubeFault fault = *this;
  fault.pathPrefix = std::move(prefix);
  return fault;
}

FakeKubeFault FakeKubeFault::forMethod(std::string verb) const {
  FakeKubeFault fault = *this;
  fault.method = std::move(verb);
  return fault;
}

FakeKubeFault FakeKubeFault::repeated(unsigned count) const {
  FakeKubeFault fault = *this;
  fault.times = count;
  return fault;
}

// --- The server's state, shared by its sessions ---

struct FakeKubeApiServer::Impl {
  /// What the server decided when a request came in.
  struct Plan {
    std::uint64_t id = 0;  // the request's place in the log
    bool authenticated = false;
    std::optional<FakeKubeFault> fault;
  };

  Impl(tls::CertificateAuthority authority, std::string initialToken)
      : ca(std::move(authority)), token(std::move(initialToken)) {}

  void accept();

  /// Logs the request, authenticates it, and takes the fault it matches.
  Plan receive(FakeKubeRequest request) {
    std::lock_guard lock(mutex);
    Plan plan;
    const Clock::time_point now = Clock::now();
    request.received = now;
    plan.authenticated = !request.clientCertificate.empty() ||
                         (!request.bearerToken.empty() &&
                          (request.bearerToken == token ||
                           (request.bearerToken == oldToken && now < oldTokenUntil)));
    if (plan.authenticated) {
      for (auto it = faults.begin(); it != faults.end(); ++it) {
        if (!matches(*it, request)) continue;
        plan.fault = *it;
        if (--it->times == 0) faults.erase(it);
        break;
      }
    }
    plan.id = firstId + log.size();
    log.push_back(std::move(request));
    return plan;
  }

  /// Serves a request the plan lets through.
  Reply serve(const Plan& plan, std::string_view method, std::string_view path,
              std::string_view contentType, std::string_view body) {
    if (!plan.authenticated) return statusReply(401, "Unauthorized");
    if (plan.fault && plan.fault->status != 0) {
      Reply reply = statusReply(plan.fault->status, faultMessage(plan.fault->status));
      reply.retryAfterSeconds = plan.fault->retryAfterSeconds;
      return reply;
    }
    if (method == "GET") {
      if (const std::optional<json> about = serverDocument(path, port)) {
        return {200, about->dump(), std::nullopt};
      }
    }
    std::lock_guard lock(mutex);
    FakeKubeAnswer answer = objects.serve(method, path, contentType, body);
    return {answer.status, answer.body.dump(), std::nullopt};
  }

  /// Records how request `id` ended: the status written, or 0 when dropped.
  void finish(std::uint64_t id, unsigned status) {
    {
      std::lock_guard lock(mutex);
      if (id < firstId) return;  // cleared meanwhile
      log[id - firstId].status = status;
      ++finished;
    }
    finishedChanged.notify_all();
  }

  tls::CertificateAuthority ca;
  ssl::context tls{ssl::context::tls_server};

  mutable std::mutex mutex;
  mutable std::condition_variable finishedChanged;
  FakeKubeObjects objects;
  std::string token;
  std::string oldToken;
  Clock::time_point oldTokenUntil{};
  std::deque<FakeKubeFault> faults;
  std::vector<FakeKubeRequest> log;
  std::uint64_t firstId = 0;  // the id of log[0]
  std::size_t finished = 0;   // requests of the log answered or dropped
  std::atomic<std::size_t> connections{0};

  std::uint16_t port = 0;
  // Destroyed before the state above: the io_context destroys the sessions it still holds.
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
};

namespace {

/// One TLS connection: handshake, then requests one after the other while the client keeps it
/// alive. No deadline on an idle connection: the server's destructor ends it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, FakeKubeApiServer::Impl& server)
      : stream_(std::move(socket), server.tls), timer_(stream_.get_executor()), server_(server) {}

  void start() {
    beast::get_lowest_layer(stream_).expires_after(kHandshakeTimeout);
    stream_.async_handshake(ssl::stream_base::server,
                            [self = shared_from_this()](beast::error_code ec) {
                              if (ec) return;
                              self->clientName_ = verifiedClientName(self->stream_.native_handle());
                              beast::get_lowest_layer(self->stream_).expires_never();
                              self->read();
                            });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec) return;  // closed by the client, or not HTTP: the connection ends
    const auto& message = parser_->get();
    keepAlive_ = message.keep_alive();
    request_ = {};
    request_.method = toStd(message.method_string());
    request_.target = toStd(message.target());
    request_.path = request_.target.substr(0, request_.target.find('?'));
    request_.contentType = toStd(message[http::field::content_type]);
    request_.bearerToken = bearerToken(toStd(message[http::field::authorization]));
    request_.clientCertificate = clientName_;
    request_.body = message.body();
    plan_ = server_.receive(request_);
    if (plan_.fault && plan_.fault->delay.count() > 0) {
      timer_.expires_after(plan_.fault->delay);
      timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->act();
      });
      return;
    }
    act();
  }

  void act() {
    using Drop = FakeKubeFault::Drop;
    const Drop drop = plan_.fault ? plan_.fault->drop : Drop::kNone;
    if (drop == Drop::kBeforeServing) {
      server_.finish(plan_.id, 0);
      close();
      return;
    }
    Reply reply =
        server_.serve(plan_, request_.method, request_.path, request_.contentType, request_.body);
    if (drop == Drop::kAfterServing) {
      server_.finish(plan_.id, 0);
      close();
      return;
    }
    write(std::move(reply));
  }

  void write(Reply reply) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(reply.status), 11);
    response->set(http::field::content_type, "application/json");
    response->set(http::field::cache_control, "no-cache, private");
    if (reply.retryAfterSeconds) {
      response->set(http::field::retry_after, std::to_string(*reply.retryAfterSeconds));
    }
    response->keep_alive(keepAlive_);
    response->body() = std::move(reply.body);
    response->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
                        self->server_.finish(self->plan_.id, ec ? 0 : response->result_int());
                        if (ec) return;
                        beast::get_lowest_layer(self->stream_).expires_never();
                        if (self->keepAlive_) {
                          self->read();
                          return;
                        }
                        beast::get_lowest_layer(self->stream_).expires_after(kWriteTimeout);
                        self->stream_.async_shutdown([self](beast::error_code) { self->close(); });
                      });
  }

  /// Closes the TCP connection at once, without a TLS close_notify: a dropped connection.
  void close() {
    beast::error_code ignored;
    auto& socket = beast::get_lowest_layer(stream_).socket();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  asio::steady_timer timer_;
  FakeKubeApiServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string clientName_;
  bool keepAlive_ = true;
  FakeKubeRequest request_;  // the one being answered
  FakeKubeApiServer::Impl::Plan plan_;
};

}  // namespace

void FakeKubeApiServer::Impl::accept() {
  acceptor.async_accept(io, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      ++connections;
      std::make_shared<Session>(std::move(socket), *this)->start();
    }
    accept();
  });
}

// --- FakeKubeApiServer ---

namespace {

/// The server's TLS: its certificate and key, TLS 1.2 at least, and client certificates of the CA
/// verified when a client sends one.
Result<void> configureTls(ssl::context& tls, const tls::CertificateAuthority& ca) {
  HOSTPORT_TRY(const tls::PemCertificate server,
               ca.issueServer({"localhost"}, {"127.0.0.1"}, kDay));
  beast::error_code ec;
  tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                  ec);
  if (!ec) tls.use_certificate_chain(asio::buffer(server.certificatePem), ec);
  if (!ec) tls.use_private_key(asio::buffer(server.privateKeyPem), ssl::context::pem, ec);
  if (!ec) tls.add_certificate_authority(asio::buffer(ca.certificatePem()), ec);
  if (!ec) tls.set_verify_mode(ssl::verify_peer, ec);
  if (ec) return fail(ErrorCode::kInternal, "cannot set up the fake's TLS: " + ec.message());
  // The CA a client certificate must come from, named in the certificate request.
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(ca.certificatePem().data(), static_cast<int>(ca.certificatePem().size())),
      &BIO_free);
  X509* caCertificate = bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  const bool added =
      caCertificate != nullptr && SSL_CTX_add_client_CA(tls.native_handle(), caCertificate) == 1;
  X509_free(caCertificate);  // SSL_CTX_add_client_CA copied its name
  if (!added) return fail(ErrorCode::kInternal, "cannot name the client CA");
  return {};
}

}  // namespace

Result<std::unique_ptr<FakeKubeApiServer>> FakeKubeApiServer::start(Options options) {
  HOSTPORT_TRY(tls::CertificateAuthority ca,
               tls::CertificateAuthority::create("hostport fake kube-apiserver CA", kDay));
  auto impl = std::make_unique<Impl>(std::move(ca), std::move(options.token));
  HOSTPORT_TRY_VOID(configureTls(impl->tls, impl->ca));
  const tcp::endpoint endpoint(asio::ip::address_v4::loopback(), 0);
  beast::error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) impl->port = impl->acceptor.local_endpoint(ec).port();
  if (ec) return fail(ErrorCode::kIo, "the fake API server cannot listen: " + ec.message());
  impl->accept();
  Impl& state = *impl;
  state.thread = std::thread([&state] { state.io.run(); });
  return std::unique_ptr<FakeKubeApiServer>(new FakeKubeApiServer(std::move(impl)));
}

FakeKubeApiServer::FakeKubeApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeKubeApiServer::~FakeKubeApiServer() {
  // Stops at once whatever is pending (idle connections, slow answers); destroying the io_context
  // then destroys the sessions it holds, which closes their sockets.
  impl_->io.stop();
  impl_->thread.join();
}

std::uint16_t FakeKubeApiServer::port() const { return impl_->port; }

std::string FakeKubeApiServer::url() const {
  return "https://127.0.0.1:" + std::to_string(impl_->port);
}

const tls::CertificateAuthority& FakeKubeApiServer::ca() const { return impl_->ca; }

const std::string& FakeKubeApiServer::caPem() const { return impl_->ca.certificatePem(); }

void FakeKubeApiServer::setToken(std::string token, std::chrono::milliseconds oldTokenGrace) {
  std::lock_guard lock(impl_->mutex);
  impl_->oldToken = std::exchange(impl_->token, std::move(token));
  impl_->oldTokenUntil = Clock::now() + oldTokenGrace;
}

std::string FakeKubeApiServer::token() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->token;
}

Result<std::filesystem::path> FakeKubeApiServer::writeKubeconfig(
    const std::filesystem::path& dir, const FakeKubeconfigOptions& options) const {
  const std::filesystem::path base = std::filesystem::absolute(dir);
  std::string cluster =
      "    server: " + yamlQuoted("https://" + options.host + ":" + std::to_string(impl_->port)) +
      "\n";
  if (options.inlineCa) {
    cluster += "    certificate-authority-data: " + encodeBase64(caPem()) + "\n";
  } else {
    HOSTPORT_TRY_VOID(writeFile(base / "ca.crt", caPem()));
    cluster += "    certificate-authority: " + yamlQuoted((base / "ca.crt").string()) + "\n";
  }
  std::string user;
  using Credentials = FakeKubeconfigOptions::Credentials;
  switch (options.credentials) {
    case Credentials::kToken:
      user = "    token: " + yamlQuoted(token()) + "\n";
      break;
    case Credentials::kTokenFile:
      HOSTPORT_TRY_VOID(writeFile(base / "token", token()));
      user = "    tokenFile: " + yamlQuoted((base / "token").string()) + "\n";
      break;
    case Credentials::kClientCertificate: {
      HOSTPORT_TRY(const tls::PemCertificate client,
                   impl_->ca.issueClient("fake-client", {}, kDay));
      HOSTPORT_TRY_VOID(writeFile(base / "client.crt", client.certificatePem));
      HOSTPORT_TRY_VOID(writeFile(base / "client.key", client.privateKeyPem));
      user = "    client-certificate: " + yamlQuoted((base / "client.crt").string()) + "\n" +
             "    client-key: " + yamlQuoted((base / "client.key").string()) + "\n";
      break;
    }
  }
  const std::string text = "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n" +
                           cluster + "users:\n- name: fake\n  user:\n" + user +
                           "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
                           "    user: fake\n    namespace: " +
                           yamlQuoted(options.namespace_) + "\ncurrent-context: fake\n";
  HOSTPORT_TRY_VOID(writeFile(base / "kubeconfig", text));
  return base / "kubeconfig";
}

Result<void> FakeKubeApiServer::writeServiceAccount(const std::filesystem::path& dir,
                                                    std::string_view ns) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(ErrorCode::kIo, "cannot create " + dir.string() + ": " + ec.message());
  HOSTPORT_TRY_VOID(writeFile(dir / "token", token()));
  HOSTPORT_TRY_VOID(writeFile(dir / "ca.crt", caPem()));
  return writeFile(dir / "namespace", ns);
}

std::map<std::string, std::string> FakeKubeApiServer::inClusterEnvironment() const {
  const std::string port = std::to_string(impl_->port);
  return {{"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
          {"KUBERNETES_SERVICE_PORT", port},
          {"KUBERNETES_SERVICE_PORT_HTTPS", port}};
}

json FakeKubeApiServer::putPod(std::string_view ns, std::string_view name, std::string_view uid,
                               const std::map<std::string, std::string>& annotations) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"uid", uid}}},
              {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}},
              {"status", {{"phase", "Running"}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  auto stored = putObject("/api/v1/namespaces/" + std::string(ns) + "/pods/" + std::string(name),
                          std::move(pod));
  return stored ? *stored : json();
}

json FakeKubeApiServer::putNode(std::string_view name, std::string_view uid) {
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"uid", uid}}},
               {"spec", json::object()},
               {"status", {{"capacity", json::object()}, {"allocatable", json::object()}}}};
  auto stored = putObject("/api/v1/nodes/" + std::string(name), std::move(node));
  return stored ? *stored : json();
}

Result<json> FakeKubeApiServer::putObject(std::string_view path, json object) {
  std::lock_guard lock(impl_->mutex);
  return impl_->objects.put(path, std::move(object));
}

std::optional<json> FakeKubeApiServer::object(std::string_view path) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->objects.get(path);
}

bool FakeKubeApiServer::deleteObject(std::string_view path) {
  std::lock_guard lock(impl_->mutex);
  return impl_->objects.erase(path);
}

void FakeKubeApiServer::injectFault(FakeKubeFault fault) {
  if (fault.times == 0) return;
  std::lock_guard lock(impl_->mutex);
  impl_->faults.push_back(std::move(fault));
}

void FakeKubeApiServer::clearFaults() {
  std::lock_guard lock(impl_->mutex);
  impl_->faults.clear();
}

std::size_t FakeKubeApiServer::pendingFaults() const {
  std::lock_guard lock(impl_->mutex);
  std::size_t pending = 0;
  for (const FakeKubeFault& fault : impl_->faults) pending += fault.times;
  return pending;
}

std::vector<FakeKubeRequest> FakeKubeApiServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->log;
}

void FakeKubeApiServer::clearRequests() {
  std::lock_guard lock(impl_->mutex);
  impl_->firstId += impl_->log.size();
  impl_->log.clear();
  impl_->finished = 0;
}

bool FakeKubeApiServer::waitForRequests(std::size_t count,
                                        std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->finishedChanged.wait_for(lock, timeout, [&] { return impl_->finished >= count; });
}

std::size_t FakeKubeApiServer::connectionsAccepted() const { return impl_->connections.load(); }

}  // namespace hostport::kube
