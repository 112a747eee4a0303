// The fake Kubernetes API server started from inside a network namespace serves that netns: a
// client there (an agent started in it) reaches it at 127.0.0.1:port, the host's 127.0.0.1 does
// not.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <thread>

#include "common/unique_fd.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

namespace hostport::kube {
namespace {

using namespace std::chrono_literals;

/// Connects to 127.0.0.1:port from the calling thread's netns: 0, or the errno of connect().
int connectToLoopback(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!fd.valid()) return errno;
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0
             ? 0
             : errno;
}

bool waitForConnections(const FakeKubeApiServer& server, std::size_t count) {
  for (int i = 0; i < 400 && server.connectionsAccepted() < count; ++i) {
    std::this_thread::sleep_for(5ms);
  }
  return server.connectionsAccepted() >= count;
}

TEST(FakeKubeApiServerNetnsTest, ServesTheNetnsItWasStartedIn) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  ASSERT_OK_AND_ASSIGN(test::Netns netns, test::Netns::create());
  ASSERT_OK_AND_ASSIGN(auto started, netns.run([] { return FakeKubeApiServer::start(); }));
  ASSERT_OK(started);
  const std::unique_ptr<FakeKubeApiServer> server = std::move(*started);

  ASSERT_OK_AND_ASSIGN(const int inside,
                       netns.run([&] { return connectToLoopback(server->port()); }));
  EXPECT_EQ(inside, 0);
  ASSERT_TRUE(waitForConnections(*server, 1));

  // From the host's netns: refused, or some host process of that port, never the fake.
  (void)connectToLoopback(server->port());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(server->connectionsAccepted(), 1u);
}

}  // namespace
}  // namespace hostport::kube
