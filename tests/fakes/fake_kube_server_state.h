#pragma once
// The fake Kubernetes API server's state (fake_kube_apiserver.h), shared by its public face
// (fake_kube_apiserver.cc) and its connections (fake_kube_session.cc). Internal to tests/fakes.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/fakes/fake_kube_objects.h"

namespace hostport::kube {

/// An HTTP answer before it is written.
struct FakeKubeReply {
  unsigned status = 200;
  std::string body;
  std::optional<unsigned> retryAfterSeconds;
};

/// A watch in progress, as the server tells it what happened (on the server's thread).
class FakeKubeWatch {
 public:
  virtual ~FakeKubeWatch() = default;
  /// The store or the server's watch generations changed: send what is new.
  virtual void pump() = 0;
  /// Close the connection at once, without ending the stream.
  virtual void drop() = 0;
};

struct FakeKubeApiServer::Impl {
  /// What the server decided when a request came in.
  struct Plan {
    std::uint64_t id = 0;  // the request's place in the log
    bool authenticated = false;
    std::optional<FakeKubeFault> fault;
  };

  Impl(tls::CertificateAuthority authority, std::string initialToken)
      : ca(std::move(authority)), token(std::move(initialToken)) {}

  /// Accepts connections, each served by a session (fake_kube_session.cc).
  void accept();
  /// Logs the request, authenticates it, and takes the fault it matches.
  Plan receive(FakeKubeRequest request);
  /// Serves a request the plan lets through (not a watch: the session streams those).
  FakeKubeReply serve(const Plan& plan, std::string_view method, std::string_view target,
                      std::string_view contentType, std::string_view body);
  /// Records how request `id` ended: the status written, or 0 when dropped.
  void finish(std::uint64_t id, unsigned status);

  /// Tells every watch, on the server's thread, that something changed; `act` runs there first.
  void notifyWatches(std::function<void(Impl&)> act = {});
  /// Runs `resume` on the server's thread once the test released held requests (at once when it
  /// has).
  void hold(std::function<void()> resume);

  /// Called on the server's thread by a watch that starts or ends.
  void addWatch(std::weak_ptr<FakeKubeWatch> watch) { watches.push_back(std::move(watch)); }

  tls::CertificateAuthority ca;
  boost::asio::ssl::context tls{boost::asio::ssl::context::tls_server};

  mutable std::mutex mutex;
  mutable std::condition_variable finishedChanged;
  FakeKubeObjects objects;
  std::string token;
  std::string oldToken;
  std::chrono::steady_clock::time_point oldTokenUntil{};
  std::deque<FakeKubeFault> faults;
  std::vector<FakeKubeRequest> log;
  std::uint64_t firstId = 0;  // the id of log[0]
  std::size_t finished = 0;   // requests of the log answered or dropped
  std::atomic<std::size_t> connections{0};
  // Raised by the test (under `mutex`); each watch acts once per raise.
  std::uint64_t bookmarkGeneration = 0;
  std::uint64_t expireGeneration = 0;
  std::uint64_t dropGeneration = 0;
  bool released = false;                           // releaseHeld() was called
  std::vector<std::function<void()>> heldResumes;  // requests a held fault holds
  // On the server's thread only.
  std::vector<std::weak_ptr<FakeKubeWatch>> watches;
  std::atomic<std::size_t> openWatches{0};

  std::uint16_t port = 0;
  // Destroyed before the state above: the io_context destroys the sessions it still holds.
  boost::asio::io_context io{1};
  boost::asio::ip::tcp::acceptor acceptor{io};
  std::thread thread;
};

}  // namespace hostport::kube
