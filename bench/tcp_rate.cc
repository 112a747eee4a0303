// hostport-bench-tcp: new TCP connections per second and UDP first-packet latency, for the
// datapath benchmark.
//
//   serve  --port P [--threads 2] [--netns PATH] [--ready-file F]
//          Accepts on 0.0.0.0:P (TCP), writes one byte to each connection and closes it; echoes
//          every datagram to 0.0.0.0:P (UDP) back to its sender. Runs until SIGTERM/SIGINT. The
//          ready file is created once both sockets are bound.
//   client --ip A --port P [--seconds 3] [--threads 2] [--netns PATH]
//          Each thread, until the time is up: socket, connect, read the byte, close (with
//          SO_LINGER 0, so no TIME_WAIT pins a source port: the rate stays steady for long runs).
//          Prints {"connectionsPerSecond", "connections", "failures", "firstError",
//          "seconds", "threads", "latencyMs": {summary of connect-to-byte times}}.
//   udp    --ip A --port P [--samples 500] [--first-source-port 20000] [--timeout-ms 1000]
//          [--netns PATH]
//          Each sample: a fresh UDP socket bound to the next source port (first-source-port + i,
//          so every request is a new 5-tuple: a new conntrack entry, which is what consults the
//          DNAT map), one byte sent to A:P, the echo awaited. Sequential, one in flight. Prints
//          {"samples", "answered", "lost", "firstError", "rttMs": {summary of send-to-echo},
//           "rttUs": {the same in microseconds, for its precision}}.

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

std::string jsonEscaped(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

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
  const int echo = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (echo < 0) die(std::string("socket: ") + std::strerror(errno));
  if (::bind(echo, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    die("bind udp port " + std::to_string(port) + ": " + std::strerror(errno));
  }
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
  workers.emplace_back([echo] {
    char buffer[512];
    while (!stopping) {
      sockaddr_in peer{};
      socklen_t peerLength = sizeof peer;
      const ssize_t n = ::recvfrom(echo, buffer, sizeof buffer, 0,
                                   reinterpret_cast<sockaddr*>(&peer), &peerLength);
      if (n < 0) continue;
      (void)::sendto(echo, buffer, static_cast<std::size_t>(n), 0,
                     reinterpret_cast<const sockaddr*>(&peer), peerLength);
    }
  });
  int signal = 0;
  ::sigwait(&stopSignals, &signal);
  stopping = true;
  ::shutdown(listener, SHUT_RDWR);  // wakes the accepting threads
  ::shutdown(echo, SHUT_RDWR);      // and the echo thread
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
  const std::string escaped = jsonEscaped(firstError);
  std::cout << "{\"connectionsPerSecond\":" << rate << ",\"connections\":" << all.size()
            << ",\"failures\":" << failures.load() << ",\"firstError\":\"" << escaped
            << "\",\"seconds\":" << elapsed << ",\"threads\":" << threads
            << ",\"latencyMs\":" << summaryJson(all) << "}\n";
  return 0;
}

int udpClient(const Args& args) {
  const std::string ip = args.get("ip", "127.0.0.1");
  const int port = static_cast<int>(args.getLong("port", 8080));
  const long samples = std::max(1L, args.getLong("samples", 500));
  const long firstSource = args.getLong("first-source-port", 20000);
  const long timeoutMs = std::max(1L, args.getLong("timeout-ms", 1000));
  if (firstSource < 1 || firstSource + samples - 1 > 65535) {
    die("--first-source-port + --samples goes past port 65535");
  }
  if (args.has("netns")) joinNetnsOrDie(args.get("netns"));
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &target.sin_addr) != 1) die("--ip: not IPv4: " + ip);
  std::vector<double> rtt;
  rtt.reserve(static_cast<std::size_t>(samples));
  long lost = 0;
  std::string firstError;
  const auto fail = [&](const char* what) {
    ++lost;
    if (firstError.empty()) firstError = std::string(what) + ": " + std::strerror(errno);
  };
  for (long i = 0; i < samples; ++i) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die(std::string("socket: ") + std::strerror(errno));
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    timeval timeout{timeoutMs / 1000, (timeoutMs % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in source{};
    source.sin_family = AF_INET;
    source.sin_port = htons(static_cast<uint16_t>(firstSource + i));
    source.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
      fail("bind");
      ::close(fd);
      continue;
    }
    const auto begin = Clock::now();
    char byte = 'x';
    if (::sendto(fd, &byte, 1, 0, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 1) {
      fail("sendto");
      ::close(fd);
      continue;
    }
    char reply = 0;
    if (::recv(fd, &reply, 1, 0) != 1) {
      fail("recv");
      ::close(fd);
      continue;
    }
    rtt.push_back(msSince(begin));
    ::close(fd);
  }
  std::vector<double> rttUs;
  for (const double ms : rtt) rttUs.push_back(ms * 1000);
  std::cout << "{\"samples\":" << samples << ",\"answered\":" << rtt.size() << ",\"lost\":" << lost
            << ",\"firstError\":\"" << jsonEscaped(firstError)
            << "\",\"rttMs\":" << summaryJson(rtt) << ",\"rttUs\":" << summaryJson(rttUs) << "}\n";
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
  if (mode == "udp") return udpClient(args);
  std::cout << "usage: hostport-bench-tcp serve --port P [--threads N] [--netns PATH] "
               "[--ready-file F]\n"
               "       hostport-bench-tcp client --ip A --port P [--seconds S] [--threads N] "
               "[--netns PATH]\n"
               "       hostport-bench-tcp udp --ip A --port P [--samples N] "
               "[--first-source-port S] [--timeout-ms T] [--netns PATH]\n";
  return args.has("help") ? 0 : 2;
}
