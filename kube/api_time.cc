#include "kube/api_time.h"

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

}  // namespace hostport::kube
