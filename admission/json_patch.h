#pragma once
// A JSON Patch (RFC 6902) built operation by operation: what a mutating webhook answers. Only
// `add` and `remove`, aimed at paths the webhook has just read in the object, so each operation
// applies to the object as the API server sent it.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostport::admission {

/// The RFC 6901 pointer of `tokens`, each escaped ('~' as "~0", '/' as "~1"):
/// {"metadata", "annotations", "hostport.io/ports"} is "/metadata/annotations/hostport.io~1ports".
std::string jsonPointer(std::initializer_list<std::string_view> tokens);

class JsonPatch {
 public:
  /// Sets the member (or array element) at `path`; its parent must exist.
  void add(std::string path, nlohmann::json value);
  void remove(std::string path);

  bool empty() const { return operations_.empty(); }
  /// The operations, in the order added: the patch's JSON array.
  const nlohmann::json& operations() const { return operations_; }

 private:
  nlohmann::json operations_ = nlohmann::json::array();
};

}  // namespace hostport::admission
