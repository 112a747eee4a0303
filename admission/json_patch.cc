#include "admission/json_patch.h"

namespace hostport::admission {

std::string jsonPointer(std::initializer_list<std::string_view> tokens) {
  std::string pointer;
  for (const std::string_view token : tokens) {
    pointer += '/';
    for (const char c : token) {
      if (c == '~') {
        pointer += "~0";
      } else if (c == '/') {
        pointer += "~1";
      } else {
        pointer += c;
      }
    }
  }
  return pointer;
}

void JsonPatch::add(std::string path, nlohmann::json value) {
  operations_.push_back({{"op", "add"}, {"path", std::move(path)}, {"value", std::move(value)}});
}

void JsonPatch::remove(std::string path) {
  operations_.push_back({{"op", "remove"}, {"path", std::move(path)}});
}

}  // namespace hostport::admission
