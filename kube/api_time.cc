#include "kube/api_time.h"

#include <cstdio>
#include <ctime>

namespace hostport::kube {

std::string apiTime(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm broken{};
  gmtime_r(&seconds, &broken);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &broken);
  return text;
}

std::string apiMicroTime(std::chrono::system_clock::time_point time) {
  const auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time - seconds).count();
  std::string text = apiTime(seconds);
  char fraction[24];
  std::snprintf(fraction, sizeof fraction, ".%06lld", static_cast<long long>(micros));
  text.insert(text.size() - 1, fraction);
  return text;
}

}  // namespace hostport::kube
