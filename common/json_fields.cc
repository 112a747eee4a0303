#include "common/json_fields.h"

#include "common/bounded_json.h"

namespace hostport {

using nlohmann::json;

std::string memberPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string path(parent);
  path += '.';
  path += key;
  return path;
}

std::string elementPath(std::string_view parent, std::size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

const json* jsonMember(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string jsonText(const json& object, std::string_view key) {
  const json* value = jsonMember(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

JsonField jsonField(const json& object, std::string_view parent, std::string_view key) {
  return JsonField{jsonMember(object, key), memberPath(parent, key)};
}

std::unexpected<Error> invalidValue(std::string_view path, const json& value,
                                    std::string_view problem, ErrorCode code) {
  return fail(code, std::string(path) + ": " + echo(value) + " " + std::string(problem));
}

std::unexpected<Error> invalidValue(const JsonField& field, std::string_view problem) {
  return invalidValue(field.path, *field.value, problem);
}

std::unexpected<Error> missingValue(std::string_view path) {
  return fail(ErrorCode::kInvalidArgument, std::string(path) + ": missing");
}

Result<std::string> readString(const JsonField& field) {
  if (field.value == nullptr) return missingValue(field.path);
  if (!field.value->is_string()) return invalidValue(field, "must be a string");
  return field.value->get<std::string>();
}

Result<std::string> readString(const JsonField& field, std::string_view fallback) {
  if (field.value == nullptr) return std::string(fallback);
  return readString(field);
}

Result<bool> readBool(const JsonField& field, bool fallback) {
  if (field.value == nullptr) return fallback;
  if (!field.value->is_boolean()) return invalidValue(field, "must be true or false");
  return field.value->get<bool>();
}

Result<uint64_t> readInteger(const JsonField& field, uint64_t min, uint64_t max) {
  if (field.value == nullptr) return missingValue(field.path);
  const json& value = *field.value;
  const auto outside = [&] {
    return invalidValue(field,
                        "must be an integer " + std::to_string(min) + ".." + std::to_string(max));
  };
  const bool negative =
      value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() < 0;
  if (!value.is_number_integer() || negative) return outside();
  const auto number = value.get<uint64_t>();
  if (number < min || number > max) return outside();
  return number;
}

Result<uint64_t> readInteger(const JsonField& field, uint64_t min, uint64_t max,
                             uint64_t fallback) {
  if (field.value == nullptr) return fallback;
  return readInteger(field, min, max);
}

Result<uint16_t> readPort(const JsonField& field) {
  HOSTPORT_TRY(const uint64_t port, readInteger(field, 1, 65535));
  return static_cast<uint16_t>(port);
}

Result<const json*> readArray(const JsonField& field, std::size_t maxSize) {
  if (field.value == nullptr) return missingValue(field.path);
  if (!field.value->is_array()) return invalidValue(field, "must be an array");
  if (field.value->size() > maxSize) {
    return fail(ErrorCode::kInvalidArgument,
                field.path + ": " + std::to_string(field.value->size()) +
                    " entries exceed the limit of " + std::to_string(maxSize));
  }
  return field.value;
}

Result<const json*> readArrayOrEmpty(const JsonField& field, std::size_t maxSize) {
  static const json kEmpty = json::array();
  if (field.value == nullptr) return &kEmpty;
  return readArray(field, maxSize);
}

Result<Protocol> readProtocol(const JsonField& field) {
  if (field.value != nullptr && field.value->is_string() &&
      field.value->get_ref<const std::string&>().empty()) {
    return Protocol::kTcp;
  }
  return readProtocolWith(field, parseProtocol, "tcp, udp or sctp");
}

Result<std::optional<IpAddress>> readHostIp(const JsonField& field) {
  HOSTPORT_TRY(const std::string text, readString(field, ""));
  if (text.empty()) return std::nullopt;
  auto address = IpAddress::parse(text);
  if (!address) return invalidValue(field, "is not an IP address");
  if (address->isUnspecified()) return std::nullopt;
  return *address;
}

}  // namespace hostport
