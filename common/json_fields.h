#pragma once
// Readers for the fields of untrusted JSON documents: CNI stdin, the previous plugin's result and
// the agent's API bodies. Every error names the field by its path from the document's root
// (`runtimeConfig.portMappings[2].hostPort`, `dynamic[0].containerPort`) and echoes the value
// through echo() (common/bounded_json.h), so a hostile value can neither forge a log line nor
// flood one. Absent and JSON null mean the same everywhere, as they do to Go's decoder: runtimes
// emit null for empty capability arguments.
//
// A reader takes a JsonField, the value already looked up (nullptr when absent) with its path.
// Most callers get one from jsonField(); the plugin looks portMappings keys up case-insensitively
// (containerd sends "HostPort") and builds its JsonField itself.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/ip_address.h"
#include "common/protocol.h"

namespace hostport {

/// A field to read: its value (nullptr when absent or JSON null) and its path, for errors.
struct JsonField {
  const nlohmann::json* value = nullptr;
  std::string path;
};

/// `parent.key`, or `key` alone at the root (an empty parent).
std::string memberPath(std::string_view parent, std::string_view key);

/// `parent[index]`.
std::string elementPath(std::string_view parent, std::size_t index);

/// object[key]; nullptr when the key is missing, its value is JSON null, or `object` is not an
/// object.
const nlohmann::json* jsonMember(const nlohmann::json& object, std::string_view key);

/// The string at object[key]; "" when it is missing or not a string: for documents read as far
/// as they are understood (a Lease another writer made), not checked field by field.
std::string jsonText(const nlohmann::json& object, std::string_view key);

/// object[key] as a field at memberPath(parent, key).
JsonField jsonField(const nlohmann::json& object, std::string_view parent, std::string_view key);

/// "<path>: <echo(value)> <problem>", as kInvalidArgument unless `code` says otherwise.
std::unexpected<Error> invalidValue(std::string_view path, const nlohmann::json& value,
                                    std::string_view problem,
                                    ErrorCode code = ErrorCode::kInvalidArgument);

/// invalidValue() of a present field.
std::unexpected<Error> invalidValue(const JsonField& field, std::string_view problem);

/// "<path>: missing", as kInvalidArgument.
std::unexpected<Error> missingValue(std::string_view path);

/// A string; "<path>: missing" when absent.
Result<std::string> readString(const JsonField& field);

/// A string; `fallback` when absent.
Result<std::string> readString(const JsonField& field, std::string_view fallback);

/// true or false; `fallback` when absent.
Result<bool> readBool(const JsonField& field, bool fallback);

/// A JSON integer in min..max; "must be an integer <min>..<max>" for anything else, including
/// 80.0 and "80" (a sender that writes them is broken, and coercing would hide it).
Result<uint64_t> readInteger(const JsonField& field, uint64_t min, uint64_t max);

/// readInteger(), with `fallback` when absent.
Result<uint64_t> readInteger(const JsonField& field, uint64_t min, uint64_t max, uint64_t fallback);

/// A port, 1..65535; "<path>: missing" when absent.
Result<uint16_t> readPort(const JsonField& field);

/// An array of at most `maxSize` entries; "<path>: missing" when absent.
Result<const nlohmann::json*> readArray(const JsonField& field, std::size_t maxSize);

/// readArray(), with an empty array when absent.
Result<const nlohmann::json*> readArrayOrEmpty(const JsonField& field, std::size_t maxSize);

/// A protocol name, decoded by `parse` (case-insensitive by contract): common/protocol.h's
/// parseProtocol, or a vocabulary of its own such as the agent's PortProtocol with tcpudp.
/// `names` lists the accepted names for the error ("tcp, udp or sctp"). Absent means tcp, the
/// default of Kubernetes and CNI alike.
template <typename P>
Result<P> readProtocolWith(const JsonField& field, Result<P> (*parse)(std::string_view),
                           std::string_view names) {
  if (field.value == nullptr) return P::kTcp;
  HOSTPORT_TRY(const std::string text, readString(field));
  auto protocol = parse(text);
  if (!protocol) return invalidValue(field, "is not " + std::string(names));
  return *protocol;
}

/// A Protocol (common/protocol.h); absent and "" mean tcp, as portmap reads portMappings.
Result<Protocol> readProtocol(const JsonField& field);

/// A hostIP. Absent, "" and the unspecified addresses (0.0.0.0, ::) all mean every local address,
/// which an unspecified address would bind anyway, so they read as nullopt.
Result<std::optional<IpAddress>> readHostIp(const JsonField& field);

}  // namespace hostport
