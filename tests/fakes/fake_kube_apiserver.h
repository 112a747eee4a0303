#pragma once
// A FAKE Kubernetes API server, for tests of the agent's Kubernetes client (issue 13): there is no
// API server on the test machines. It speaks the real protocol, so a real client works against it
// unchanged, and it lets a test script the faults a real cluster shows.
//
// What it implements:
// - HTTPS (TLS 1.2+, HTTP/1.1, keep-alive, concurrent connections) on 127.0.0.1 at a port the
//   kernel picks, with a CA and a server certificate (SANs 127.0.0.1 and localhost) made when it
//   starts (tls/certificate_authority.h);
// - bearer-token authentication, "Authorization: Bearer <token>", else 401 Unauthorized; the
//   token can be rotated, with a grace for the old one. A client certificate signed by the fake's
//   CA also authenticates (a kubeconfig's client-certificate);
// - GET, POST (create), PATCH (JSON merge patch, JSON patch), PUT and DELETE of objects, the
// /status
//   subresource, resourceVersion, uid preconditions and Status errors as fake_kube_objects.h
//   describes; GET /version, and the legacy discovery of /api, /apis and /api/v1 (pods and nodes),
//   enough for kubectl get and patch by hand;
// - lists (field and label selectors, limit and continue) and watches, as a real server streams
// them: HTTP
//   200, chunked, one {"type":...,"object":...} line per event (ADDED, MODIFIED, DELETED as the
//   selector sees the object), BOOKMARK lines when asked (allowWatchBookmarks) and the test says
//   so (sendBookmarks()), the end after timeoutSeconds, and ERROR with a 410 Expired Status for a
//   version older than the history (compact()) or when the test says so (expireWatches());
//   dropWatches() cuts every watch's connection;
// - a log of every request (method, target, content type, token, body, time received, status);
// - faults, queued and taken in order by the first request each matches: an answer with a given
//   status (and Retry-After), a dropped connection (before or after the request is served), a
//   slow answer.
// What it does not: graceful deletion, deletecollection, RBAC (every authenticated client may do
// everything), admission, strategic merge and apply patches (415), HTTP/2, request limits or
// priority and fairness, impersonation, audit.
//
// Threads: the listening socket is made by start() on the calling thread, so a test that calls it
// from inside a network namespace (tests/support/netns.h) gets a server reachable there. It then
// serves on a thread of its own. Every public function may be called from any thread.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "nlohmann/json.hpp"
#include "tls/certificate_authority.h"

namespace hostport::kube {

/// One request as the fake API server received it.
struct FakeKubeRequest {
  std::string method;
  std::string target;  // as sent, with the query
  std::string path;    // without the query
  std::string contentType;
  std::string bearerToken;        // "" when none was sent
  std::string clientCertificate;  // the CN of a verified client certificate, or ""
  std::string body;
  std::chrono::steady_clock::time_point received;  // when the whole request had been read
  unsigned status = 0;  // the status answered; 0 while not answered, or when dropped
};

/// A fault to inject. It applies to the requests whose path starts with pathPrefix ("" for any)
/// and, when method is set, that use it; each of the next `times` such requests takes it.
struct FakeKubeFault {
  std::string pathPrefix;
  std::string method;
  unsigned times = 1;
  /// Waits this long before doing the rest (serving, answering `status`, dropping).
  std::chrono::milliseconds delay{0};
  /// Waits until the test calls FakeKubeApiServer::releaseHeld(), then does the rest: for a test
  /// that needs one request to land after another, whatever the machine's load.
  bool held = false;
  /// Answers this status with a Status body instead of serving the request; 0 serves it.
  unsigned status = 0;
  /// With `status`: a Retry-After header of this many seconds.
  std::optional<unsigned> retryAfterSeconds;
  enum class Drop {
    kNone,
    kBeforeServing,  // the request is lost: nothing changes
    kAfterServing,   // the request is served, then its answer is lost
  };
  /// Closes the connection without an answer.
  Drop drop = Drop::kNone;

  /// Answers `status` (409, 429, 500, 503...) with an optional Retry-After.
  static FakeKubeFault answer(unsigned status,
                              std::optional<unsigned> retryAfterSeconds = std::nullopt);
  /// Closes the connection without answering, the request not served.
  static FakeKubeFault dropConnection();
  /// Serves the request, then closes the connection without answering.
  static FakeKubeFault dropAnswer();
  /// Serves the request after `delay`.
  static FakeKubeFault slow(std::chrono::milliseconds delay);
  /// Serves the request once the test calls releaseHeld().
  static FakeKubeFault heldUntilReleased();

  /// This fault for requests under `prefix` only.
  FakeKubeFault on(std::string prefix) const;
  /// This fault for requests with `verb` only ("PATCH").
  FakeKubeFault forMethod(std::string verb) const;
  /// This fault for the next `count` matching requests.
  FakeKubeFault repeated(unsigned count) const;
};

/// How writeKubeconfig() describes the fake to a client.
struct FakeKubeconfigOptions {
  /// The server's host in the URL: "127.0.0.1", or "localhost" (its certificate has both).
  std::string host = "127.0.0.1";
  /// certificate-authority-data (base64) rather than certificate-authority (a ca.crt file).
  bool inlineCa = false;
  enum class Credentials {
    kToken,              // user.token
    kTokenFile,          // user.tokenFile, a file "token"
    kClientCertificate,  // user.client-certificate and client-key, files client.crt/client.key
  };
  Credentials credentials = Credentials::kToken;
  std::string namespace_ = "default";
};

/// The fake Kubernetes API server; see the top of this file.
class FakeKubeApiServer {
 public:
  struct Options {
    std::string token = "fake-token";  // the bearer token it accepts at first
  };

  /// Makes the certificates, listens on 127.0.0.1 (port 0) on the calling thread, and serves on a
  /// thread of its own. kInternal or kIo naming what failed.
  static Result<std::unique_ptr<FakeKubeApiServer>> start(Options options);
  static Result<std::unique_ptr<FakeKubeApiServer>> start() { return start(Options{}); }

  /// Stops serving: drops every connection (open, idle or with an answer pending) and joins the
  /// thread.
  ~FakeKubeApiServer();
  FakeKubeApiServer(const FakeKubeApiServer&) = delete;
  FakeKubeApiServer& operator=(const FakeKubeApiServer&) = delete;

  std::uint16_t port() const;
  /// "https://127.0.0.1:<port>".
  std::string url() const;
  /// The CA that signed the server's certificate: what a client trusts (ca.crt). It can also
  /// issue client certificates the server accepts.
  const tls::CertificateAuthority& ca() const;
  const std::string& caPem() const;

  // --- Authentication ---
  /// The token accepted from now on. The previous one is still accepted for `oldTokenGrace`
  /// (zero: no more). Rewriting the client's token file is the test's business.
  void setToken(std::string token, std::chrono::milliseconds oldTokenGrace = {});
  std::string token() const;

  // --- Files for a client ---
  /// Writes `dir`/kubeconfig, with one cluster, user and context, all named "fake", and the files
  /// it refers to by absolute path (ca.crt, token, client.crt, client.key). Returns its path.
  Result<std::filesystem::path> writeKubeconfig(const std::filesystem::path& dir,
                                                const FakeKubeconfigOptions& options = {}) const;
  /// Writes an in-cluster service-account directory: `dir`/token, ca.crt and namespace.
  Result<void> writeServiceAccount(const std::filesystem::path& dir,
                                   std::string_view ns = "default") const;
  /// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT for an in-cluster client.
  std::map<std::string, std::string> inClusterEnvironment() const;

  // --- Objects ---
  /// Stores a Pod (phase Running) at /api/v1/namespaces/{ns}/pods/{name}, replacing one of that
  /// name; uid "" takes a fresh one; on Node `node` when one is given. Returns the stored object.
  nlohmann::json putPod(std::string_view ns, std::string_view name, std::string_view uid = "",
                        const std::map<std::string, std::string>& annotations = {},
                        std::string_view node = "");
  /// Stores a Node at /api/v1/nodes/{name}, with empty capacity and allocatable.
  nlohmann::json putNode(std::string_view name, std::string_view uid = "");
  /// Stores any object at the path of an object (FakeKubeObjects::put).
  Result<nlohmann::json> putObject(std::string_view path, nlohmann::json object);
  /// The object stored at `path`, or nullopt.
  std::optional<nlohmann::json> object(std::string_view path) const;
  /// Removes the object at `path`; false when there was none.
  bool deleteObject(std::string_view path);
  /// The store's current resourceVersion: every write moves it.
  std::string resourceVersion() const;

  // --- Watches ---
  /// Every open watch that asked for bookmarks gets one, at the current resourceVersion (after
  /// the events before it).
  void sendBookmarks();
  /// Every open watch gets an ERROR event with a 410 Expired Status and its stream ends, as when
  /// the real server's watch cache no longer holds the version a watcher is at.
  void expireWatches();
  /// Every open watch's connection is closed at once, mid-stream.
  void dropWatches();
  /// Lets every request a heldUntilReleased() fault holds go on, and those it will hold later.
  void releaseHeld();
  /// Forgets the history, as etcd's compaction: a watch or a continued list from a version before
  /// now is 410 Expired.
  void compact();
  /// Watches streaming now.
  std::size_t openWatches() const;

  // --- Faults ---
  void injectFault(FakeKubeFault fault);
  void clearFaults();
  /// How many requests the queued faults still apply to.
  std::size_t pendingFaults() const;

  // --- What happened ---
  /// Every request received, in order of receipt.
  std::vector<FakeKubeRequest> requests() const;
  void clearRequests();
  /// Waits until `count` requests have been answered (or dropped) since the last clearRequests();
  /// false on timeout.
  bool waitForRequests(std::size_t count, std::chrono::milliseconds timeout) const;
  /// TLS connections accepted so far: tells keep-alive from a connection per request.
  std::size_t connectionsAccepted() const;

  struct Impl;

 private:
  explicit FakeKubeApiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostport::kube
