// fake-kube-apiserver: the FAKE Kubernetes API server of the tests (fake_kube_apiserver.h) as a
// process of its own, for scripts/demo.sh and trials by hand on a machine without a cluster. It
// is no API server: it stores what it is sent and streams watches, with no scheduler, no kubelet,
// no admission and no RBAC.

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "tests/fakes/fake_kube_apiserver.h"

namespace {

constexpr std::string_view kUsage = R"(Usage: fake-kube-apiserver --dir DIR [--node NAME]

A FAKE Kubernetes API server (HTTPS on 127.0.0.1, a port the kernel picks), for the demo and for
trials by hand: it stores the objects it is sent, answers lists and watches as a real server
does, and nothing else (no scheduler, kubelet, admission or RBAC). Serves in the network
namespace it starts in, until SIGTERM or SIGINT.

  --dir DIR     writes DIR/kubeconfig (with DIR/ca.crt and DIR/token, which a client such as
                curl can use too) and DIR/url, then DIR/ready once it serves
  --node NAME   stores a Node of that name (the agent patches its capacity)
  -h, --help    this text

Exit codes: 0 stopped by a signal, 1 could not start, 2 bad usage.
)";

int usageError(const std::string& message) {
  std::fprintf(stderr, "fake-kube-apiserver: error: %s\n%s", message.c_str(), kUsage.data());
  return 2;
}

bool writeFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out.flush());
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  std::string node;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage.data(), stdout);
      return 0;
    }
    if ((arg == "--dir" || arg == "--node") && i + 1 < argc) {
      (arg == "--dir" ? dir : node) = argv[++i];
      continue;
    }
    return usageError("unknown or incomplete argument: " + std::string(arg));
  }
  if (dir.empty()) return usageError("--dir is required");
  // Blocked before the server's threads start, so they inherit the mask and only sigwait() here
  // takes the signal.
  sigset_t stopping;
  sigemptyset(&stopping);
  sigaddset(&stopping, SIGTERM);
  sigaddset(&stopping, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopping, nullptr);

  auto server = hostport::kube::FakeKubeApiServer::start();
  if (!server) {
    std::fprintf(stderr, "fake-kube-apiserver: %s\n", server.error().message.c_str());
    return 1;
  }
  if (!node.empty()) (*server)->putNode(node);
  const auto kubeconfig = (*server)->writeKubeconfig(
      dir, {.credentials = hostport::kube::FakeKubeconfigOptions::Credentials::kTokenFile});
  if (!kubeconfig || !writeFile(std::filesystem::path(dir) / "url", (*server)->url() + "\n") ||
      !writeFile(std::filesystem::path(dir) / "ready", "")) {
    std::fprintf(stderr, "fake-kube-apiserver: cannot write to %s%s\n", dir.c_str(),
                 kubeconfig ? "" : (": " + kubeconfig.error().message).c_str());
    return 1;
  }
  std::printf("fake-kube-apiserver: FAKE API server at %s (kubeconfig %s)\n",
              (*server)->url().c_str(), kubeconfig->c_str());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stopping, &signal);
  std::printf("fake-kube-apiserver: stopped by %s\n", strsignal(signal));
  return 0;
}
