#include "bench/bench_util.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "common/subprocess.h"
#include "common/unique_fd.h"

namespace hostport::bench {

void die(const std::string& message) {
  std::cerr << "bench: " << message << "\n";
  std::exit(2);
}

long procStatusKiB(int pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field + ":")) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

int startServer(const std::vector<std::string>& argv, const std::string& logPath,
                const std::string& netnsPath) {
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (auto& arg : args) argvp.push_back(arg.data());
  argvp.push_back(nullptr);
  UniqueFd log(::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log.valid()) die("cannot create " + logPath + ": " + std::strerror(errno));
  UniqueFd netns;
  if (!netnsPath.empty()) {
    netns = UniqueFd(::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns.valid()) die("cannot open " + netnsPath + ": " + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) die(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Async-signal-safe calls only: the benchmark may have threads.
    if (netns.valid() && ::setns(netns.get(), CLONE_NEWNET) != 0) _exit(126);
    if (::dup2(log.get(), 1) < 0 || ::dup2(log.get(), 2) < 0) _exit(126);
    ::execv(argvp[0], argvp.data());
    _exit(127);
  }
  return pid;
}

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string RunResult::describe() const {
  std::ostringstream text;
  text << "exit " << exitCode << "; stdout: " << out << "; stderr: " << err;
  return text.str();
}

std::string loadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string a, b, c;
  file >> a >> b >> c;
  return a + " " + b + " " + c;
}

RunResult runProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, const std::string& stdinData,
                     std::chrono::milliseconds timeout) {
  RunResult result;
  // Everything the child needs is prepared before fork, so the child only calls
  // async-signal-safe functions. fork and exec, as a container runtime starts a plugin.
  std::vector<std::string> envText;
  envText.reserve(env.size());
  for (const auto& [key, value] : env) envText.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : envText) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (auto& arg : args) argvp.push_back(arg.data());
  argvp.push_back(nullptr);

  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    die(std::string("pipe: ") + std::strerror(errno));
  }
  const auto started = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) die(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(argvp[0], argvp.data(), envp.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ProgramStreams streams{UniqueFd(in[1]), UniqueFd(out[0]), UniqueFd(err[0])};
  if (!exchangeWithProgram(streams, stdinData, result.out, result.err,
                           std::numeric_limits<std::size_t>::max(), started + timeout)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    die(argv.front() + " still ran after " + std::to_string(timeout.count()) +
        " ms and was killed; stderr so far: " + result.err);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.wallMs = msSince(started);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

void joinNetnsOrDie(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("open " + path + ": " + std::strerror(errno));
  if (::setns(fd, CLONE_NEWNET) != 0) die("setns " + path + ": " + std::strerror(errno));
  ::close(fd);
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const std::size_t index =
      std::min(values.size() - 1, static_cast<std::size_t>(std::max(1.0, rank)) - 1);
  return values[index];
}

namespace {

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

}  // namespace

std::string summaryJson(const std::vector<double>& valuesMs) {
  if (valuesMs.empty()) return "{\"n\":0}";
  const double mean =
      std::accumulate(valuesMs.begin(), valuesMs.end(), 0.0) / static_cast<double>(valuesMs.size());
  return "{\"n\":" + std::to_string(valuesMs.size()) +
         ",\"p50\":" + number(percentile(valuesMs, 50)) +
         ",\"p90\":" + number(percentile(valuesMs, 90)) +
         ",\"p99\":" + number(percentile(valuesMs, 99)) +
         ",\"min\":" + number(*std::min_element(valuesMs.begin(), valuesMs.end())) +
         ",\"max\":" + number(*std::max_element(valuesMs.begin(), valuesMs.end())) +
         ",\"mean\":" + number(mean) + "}";
}

std::vector<long> parseList(const std::string& text, const char* what) {
  std::vector<long> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || value < 0) {
      die(std::string(what) + ": not a list of numbers: " + text);
    }
    out.push_back(value);
  }
  return out;
}

std::string randomHex(std::size_t length) {
  static thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(length);
  for (std::size_t i = 0; i < length; ++i) text += kDigits[engine() % 16];
  return text;
}

IpAddress ipv4Plus(const IpAddress& first, long offset) {
  const auto bytes = first.bytes();
  uint32_t value = (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) |
                   (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
  value += static_cast<uint32_t>(offset);
  const uint8_t next[4] = {static_cast<uint8_t>(value >> 24), static_cast<uint8_t>(value >> 16),
                           static_cast<uint8_t>(value >> 8), static_cast<uint8_t>(value)};
  return *IpAddress::fromBytes(Family::kIPv4, next);
}

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!arg.starts_with("--")) {
      positional.push_back(arg);
      continue;
    }
    arg = arg.substr(2);
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      values[arg.substr(0, eq)] = arg.substr(eq + 1);
    } else if (i + 1 < argc && !std::string(argv[i + 1]).starts_with("--")) {
      values[arg] = argv[++i];
    } else {
      values[arg] = "";
    }
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const auto found = values.find(name);
  return found == values.end() ? fallback : found->second;
}

long Args::getLong(const std::string& name, long fallback) const {
  const auto found = values.find(name);
  if (found == values.end()) return fallback;
  char* end = nullptr;
  const long value = std::strtol(found->second.c_str(), &end, 10);
  if (end == found->second.c_str() || *end != '\0') die("--" + name + ": not a number");
  return value;
}

double Args::getDouble(const std::string& name, double fallback) const {
  const auto found = values.find(name);
  if (found == values.end()) return fallback;
  char* end = nullptr;
  const double value = std::strtod(found->second.c_str(), &end);
  if (end == found->second.c_str() || *end != '\0') die("--" + name + ": not a number");
  return value;
}

bool Args::has(const std::string& name) const { return values.contains(name); }

}  // namespace hostport::bench
