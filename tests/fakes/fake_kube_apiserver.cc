#include "tests/fakes/fake_kube_apiserver.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/post.hpp>
#include <fstream>

#include "kube/base64.h"
#include "tests/fakes/fake_kube_server_state.h"

namespace hostport::kube {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

/// The fake's certificates: a test's day.
constexpr tls::Validity kDay{std::chrono::hours(24)};

FakeKubeReply statusReply(unsigned code, std::string_view message) {
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

json apiResource(std::string_view name, bool namespaced, std::string_view kind) {
  json verbs = json::array({"get", "list", "watch", "patch", "update"});
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

// --- The server's state, shared by its sessions (fake_kube_server_state.h) ---

FakeKubeApiServer::Impl::Plan FakeKubeApiServer::Impl::receive(FakeKubeRequest request) {
  std::lock_guard lock(mutex);
  Plan plan;
  const Clock::time_point now = Clock::now();
  request.received = now;
  plan.authenticated =
      !request.clientCertificate.empty() ||
      (!request.bearerToken.empty() &&
       (request.bearerToken == token || (request.bearerToken == oldToken && now < oldTokenUntil)));
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

FakeKubeReply FakeKubeApiServer::Impl::serve(const Plan& plan, std::string_view method,
                                             std::string_view target, std::string_view contentType,
                                             std::string_view body) {
  if (!plan.authenticated) return statusReply(401, "Unauthorized");
  if (plan.fault && plan.fault->status != 0) {
    FakeKubeReply reply = statusReply(plan.fault->status, faultMessage(plan.fault->status));
    reply.retryAfterSeconds = plan.fault->retryAfterSeconds;
    return reply;
  }
  const std::string_view path = target.substr(0, target.find('?'));
  if (method == "GET") {
    if (const std::optional<json> about = serverDocument(path, port)) {
      return {200, about->dump(), std::nullopt};
    }
    if (const auto collection = parseKubeCollectionPath(path)) {
      auto query = parseKubeListQuery(target);
      if (!query) return statusReply(400, query.error().message);
      std::lock_guard lock(mutex);
      FakeKubeAnswer answer = objects.list(*collection, *query);
      return {answer.status, answer.body.dump(), std::nullopt};
    }
  }
  FakeKubeAnswer answer;
  {
    std::lock_guard lock(mutex);
    answer = objects.serve(method, path, contentType, body);
  }
  if (method != "GET") notifyWatches();
  return {answer.status, answer.body.dump(), std::nullopt};
}

void FakeKubeApiServer::Impl::finish(std::uint64_t id, unsigned status) {
  {
    std::lock_guard lock(mutex);
    if (id < firstId) return;  // cleared meanwhile
    log[id - firstId].status = status;
    ++finished;
  }
  finishedChanged.notify_all();
}

void FakeKubeApiServer::Impl::notifyWatches(std::function<void(Impl&)> act) {
  asio::post(io, [this, act = std::move(act)] {
    if (act) act(*this);
    std::erase_if(watches, [](const std::weak_ptr<FakeKubeWatch>& weak) { return weak.expired(); });
    // A copy: a watch that ends may start another session's reads, never this list's.
    const auto current = watches;
    for (const auto& weak : current) {
      if (const auto watch = weak.lock()) watch->pump();
    }
  });
}

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

FakeKubeFault FakeKubeFault::heldUntilReleased() {
  FakeKubeFault fault;
  fault.held = true;
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

// --- FakeKubeApiServer ---

namespace {

/// The server's TLS: its certificate and key, TLS 1.2 at least, and client certificates of the CA
/// verified when a client sends one.
Result<void> configureTls(ssl::context& tls, const tls::CertificateAuthority& ca) {
  HOSTPORT_TRY(const tls::PemCertificate server,
               ca.issueServer({"localhost"}, {"127.0.0.1"}, kDay));
  boost::system::error_code ec;
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
  boost::system::error_code ec;
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
  // The sessions a held fault holds go before the io_context their sockets belong to.
  impl_->heldResumes.clear();
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
                               const std::map<std::string, std::string>& annotations,
                               std::string_view node) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"uid", uid}}},
              {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}},
              {"status", {{"phase", "Running"}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  if (!node.empty()) pod["spec"]["nodeName"] = node;
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
  Result<json> stored;
  {
    std::lock_guard lock(impl_->mutex);
    stored = impl_->objects.put(path, std::move(object));
  }
  impl_->notifyWatches();
  return stored;
}

std::optional<json> FakeKubeApiServer::object(std::string_view path) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->objects.get(path);
}

bool FakeKubeApiServer::deleteObject(std::string_view path) {
  bool erased = false;
  {
    std::lock_guard lock(impl_->mutex);
    erased = impl_->objects.erase(path);
  }
  impl_->notifyWatches();
  return erased;
}

std::string FakeKubeApiServer::resourceVersion() const {
  std::lock_guard lock(impl_->mutex);
  return std::to_string(impl_->objects.revision());
}

void FakeKubeApiServer::sendBookmarks() {
  {
    std::lock_guard lock(impl_->mutex);
    ++impl_->bookmarkGeneration;
  }
  impl_->notifyWatches();
}

void FakeKubeApiServer::expireWatches() {
  {
    std::lock_guard lock(impl_->mutex);
    ++impl_->expireGeneration;
  }
  impl_->notifyWatches();
}

void FakeKubeApiServer::Impl::hold(std::function<void()> resume) {
  {
    std::lock_guard lock(mutex);
    if (!released) {
      heldResumes.push_back(std::move(resume));
      return;
    }
  }
  asio::post(io, std::move(resume));
}

void FakeKubeApiServer::releaseHeld() {
  std::vector<std::function<void()>> resumes;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->released = true;
    resumes.swap(impl_->heldResumes);
  }
  for (auto& resume : resumes) asio::post(impl_->io, std::move(resume));
}

void FakeKubeApiServer::dropWatches() {
  {
    std::lock_guard lock(impl_->mutex);
    ++impl_->dropGeneration;
  }
  impl_->notifyWatches();
}

void FakeKubeApiServer::compact() {
  std::lock_guard lock(impl_->mutex);
  impl_->objects.compact();
}

std::size_t FakeKubeApiServer::openWatches() const { return impl_->openWatches.load(); }

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
