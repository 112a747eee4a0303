#pragma once
// Small helpers shared by the benchmark programs: running a program the way a container runtime
// runs a CNI plugin (chosen environment, stdin from a string, stdout/stderr captured, optionally
// inside a network namespace), wall-clock timing, and percentiles. Benchmarks only: nothing here
// is used by the product or by the test suite.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/ip_address.h"

namespace hostport::bench {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// What a program printed and how it ended, and how long it took from fork to reaping.
struct RunResult {
  int exitCode = -1;  // -1: killed by a signal or never started
  std::string out;
  std::string err;
  double wallMs = 0;

  bool ok() const { return exitCode == 0; }
  std::string describe() const;
};

/// Forks and execs argv[0] (no PATH search) with exactly `env`, feeding `stdinData` through
/// common/subprocess.h's exchange. wallMs covers fork to waitpid, which is what a runtime waiting
/// for its plugin sees.
/// A program still running after `timeout` is killed (SIGKILL) and the benchmark exits with a
/// message: a hung plugin must not hang the whole run.
RunResult runProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, const std::string& stdinData,
                     std::chrono::milliseconds timeout = std::chrono::minutes(2));

/// Forks and execs a server that keeps running: argv[0] (no PATH search) with the caller's
/// environment, in the netns at `netnsPath` when it is not empty, its stdout and stderr to
/// `logPath` (truncated). Returns its pid; the caller stops and reaps it. Exits the benchmark with
/// a message when the log cannot be made or fork fails.
int startServer(const std::vector<std::string>& argv, const std::string& logPath,
                const std::string& netnsPath = {});

/// The whole file at `path`; "" when it cannot be read.
std::string readFile(const std::string& path);

/// The first three fields of /proc/loadavg ("1.52 2.59 4.79").
std::string loadAverage();

/// Joins the network namespace at `path` on the calling thread (setns CLONE_NEWNET).
/// Exits the process with a message on failure: benchmarks have no way to recover from it.
void joinNetnsOrDie(const std::string& path);

/// A kB field of /proc/PID/status ("VmRSS", "VmHWM") in KiB; -1 when the process or field is
/// gone.
long procStatusKiB(int pid, const std::string& field);

/// Percentile (0..100) of `values` by nearest rank; 0 for an empty input. Sorts a copy.
double percentile(std::vector<double> values, double p);

/// Summary of a latency sample in milliseconds, as a JSON object text:
/// {"n":..,"p50":..,"p90":..,"p99":..,"min":..,"max":..,"mean":..}
std::string summaryJson(const std::vector<double>& valuesMs);

/// Parses "0,1000,5000" into numbers; exits with a message on bad input.
std::vector<long> parseList(const std::string& text, const char* what);

/// A random lower-case hex string of `length` characters.
std::string randomHex(std::size_t length);

/// The IPv4 address `offset` after `first` (carrying into the higher bytes): the fabricated pods'
/// addresses, one per lease or client.
IpAddress ipv4Plus(const IpAddress& first, long offset);

/// Value of "--name value" or "--name=value" in argv, or `fallback`.
struct Args {
  Args(int argc, char** argv);
  std::string get(const std::string& name, const std::string& fallback = {}) const;
  long getLong(const std::string& name, long fallback) const;
  double getDouble(const std::string& name, double fallback) const;
  bool has(const std::string& name) const;
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;
};

[[noreturn]] void die(const std::string& message);

}  // namespace hostport::bench
