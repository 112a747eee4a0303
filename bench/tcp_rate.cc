// hostport-bench-tcp: new TCP connections per second, for the datapath benchmark.
//
//   serve  --port P [--threads 2] [--netns PATH] [--ready-file F]
//          Accepts on 0.0.0.0:P, writes one byte to each connection and closes it. Runs until
//          SIGTERM/SIGINT. The ready file is created once the socket listens.
//   client --ip A --port P [--seconds 3] [--threads 2] [--netns PATH]
//          Each thread, until the time is up: socket, connect, read the byte, close (with
//          SO_LINGER 0, so no TIME_WAIT pins a source port: the rate stays steady for long runs).
//          Prints {"connectionsPerSecond", "connections", "failures", "firstError",
//          "seconds", "threads", "latencyMs": {summary of connect-to-byte times}}.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

std::atomic<bool> stopping{false};

int serve(const Args& args) {
  const int port = static_cast<int>(args.getLong("port", 8080));
  const long threads = std::max(1L, args.getLong("threads", 2));
  if (args.has("netns")) joinNetnsOrDie(args.get("netns"));
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) die(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    die("bind port " + std::to_string(port) + ": " + std::strerror(errno));
  }
  if (::listen(listener, 4096) != 0) die(std::string("listen: ") + std::strerror(errno));
  // Every thread blocks the stop signals; the main thread takes them with sigwait.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  if (args.has("ready-file")) {
    const int fd = ::open(args.get("ready-file").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) die("cannot create the ready file");
    ::close(fd);
  }
  std::vector<std::thread> workers;
  for (long t = 0; t < threads; ++t) {
    workers.emplace_back([listener] {
      while (!stopping) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        (void)!::write(fd, "x", 1);
        ::close(fd);
      }
    });
  }
  int signal = 0;
  ::sigwait(&stopSignals, &signal);
  stopping = true;
  ::shutdown(listener, SHUT_RDWR);  // wakes the accepting threads
  for (auto& worker : workers) worker.join();
  return 0;
}

int client(const Args& args) {
  const std::string ip = args.get("ip", "127.0.0.1");
  const int port = static_cast<int>(args.getLong("port", 8080));
  const double seconds = args.getDouble("seconds", 3);
  const long threads = std::max(1L, args.getLong("threads", 2));
  if (args.has("netns")) joinNetnsOrDie(args.get("netns"));
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &target.sin_addr) != 1) die("--ip: not IPv4: " + ip);

  std::atomic<long> failures{0};
  std::mutex mu;
  std::string firstError;
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(threads));
  const auto started = Clock::now();
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> workers;
  for (long t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto& mine = latencies[static_cast<std::size_t>(t)];
      mine.reserve(1 << 18);
      const auto fail = [&](const char* what) {
        ++failures;
        std::lock_guard lock(mu);
        if (firstError.empty()) firstError = std::string(what) + ": " + std::strerror(errno);
      };
      while (Clock::now() < deadline) {
        const auto begin = Clock::now();
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
          fail("socket");
          continue;
        }
        const linger hard{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        timeval timeout{2, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
          fail("connect");
          ::close(fd);
          continue;
        }
        char byte = 0;
        if (::read(fd, &byte, 1) != 1) {
          fail("read");
          ::close(fd);
          continue;
        }
        ::close(fd);
        mine.push_back(msSince(begin));
      }
    });
  }
  for (auto& worker : workers) worker.join();
  const double elapsed = msSince(started) / 1000.0;
  std::vector<double> all;
  for (const auto& mine : latencies) all.insert(all.end(), mine.begin(), mine.end());
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f", static_cast<double>(all.size()) / elapsed);
  std::string escaped;
  for (const char c : firstError) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  std::cout << "{\"connectionsPerSecond\":" << rate << ",\"connections\":" << all.size()
            << ",\"failures\":" << failures.load() << ",\"firstError\":\"" << escaped
            << "\",\"seconds\":" << elapsed << ",\"threads\":" << threads
            << ",\"latencyMs\":" << summaryJson(all) << "}\n";
  return 0;
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  const std::string mode = args.positional.empty() ? "" : args.positional.front();
  if (mode == "serve") return serve(args);
  if (mode == "client") return client(args);
  std::cout << "usage: hostport-bench-tcp serve --port P [--threads N] [--netns PATH] "
               "[--ready-file F]\n"
               "       hostport-bench-tcp client --ip A --port P [--seconds S] [--threads N] "
               "[--netns PATH]\n";
  return args.has("help") ? 0 : 2;
}
