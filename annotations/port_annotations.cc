#include "annotations/port_annotations.h"

#include <algorithm>
#include <set>

#include "common/ascii.h"
#include "common/identifiers.h"
#include "common/json_fields.h"
#include "common/quote.h"

namespace hostport::annotations {
namespace {

using nlohmann::json;

constexpr std::string_view kBlanks = " \t\r\n";
constexpr std::string_view kEntryForm = "name=containerPort[-lastPort][/protocol]";

std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlanks) - first + 1);
}

std::unexpected<Error> annotationError(std::string_view key, const std::string& problem) {
  return fail(ErrorCode::kInvalidArgument, "annotation " + std::string(key) + ": " + problem);
}

std::unexpected<Error> badEntry(std::string_view entry, const std::string& problem) {
  return annotationError(kPortsAnnotation, "bad entry " + quoteText(entry) + ": " + problem);
}

/// 1 to 5 ASCII digits with a value in 1..65535: no sign, no blanks, no hex.
std::optional<uint16_t> parsePort(std::string_view text) {
  if (text.empty() || text.size() > 5 || !std::ranges::all_of(text, ascii::isDigit)) {
    return std::nullopt;
  }
  uint32_t value = 0;
  for (const char c : text) value = value * 10 + static_cast<uint32_t>(c - '0');
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

Result<DynamicPortRequest> parseEntry(std::string_view entry) {
  const std::size_t equals = entry.find('=');
  if (equals == std::string_view::npos) {
    return badEntry(entry, "expected " + std::string(kEntryForm));
  }
  DynamicPortRequest request;
  const std::string_view name = entry.substr(0, equals);
  if (name.empty()) return badEntry(entry, "missing name before '='");
  if (const Problem problem = dnsLabelProblem(name)) {
    return badEntry(entry, "name " + quoteText(name) + " " + std::string(*problem));
  }
  request.name = std::string(name);

  std::string_view ports = entry.substr(equals + 1);
  if (const std::size_t slash = ports.find('/'); slash != std::string_view::npos) {
    const std::string_view protocol = ports.substr(slash + 1);
    ports = ports.substr(0, slash);
    if (protocol.empty()) return badEntry(entry, "missing protocol after '/'");
    auto parsed = parsePortProtocol(protocol);
    if (!parsed) {
      return badEntry(
          entry, "unknown protocol " + quoteText(protocol) + " (want tcp, udp, sctp or tcpudp)");
    }
    request.protocol = *parsed;
  }
  if (ports.empty()) return badEntry(entry, "missing container port after '='");

  const std::size_t dash = ports.find('-');
  const std::string_view firstText = ports.substr(0, dash);
  const auto first = parsePort(firstText);
  if (!first) return badEntry(entry, "port " + quoteText(firstText) + " must be a number 1..65535");
  uint16_t last = *first;
  if (dash != std::string_view::npos) {
    const std::string_view lastText = ports.substr(dash + 1);
    const auto parsedLast = parsePort(lastText);
    if (!parsedLast) {
      return badEntry(entry, "port " + quoteText(lastText) + " must be a number 1..65535");
    }
    last = *parsedLast;
    if (last < *first) {
      return badEntry(entry, "range end " + std::to_string(last) + " is below its start " +
                                 std::to_string(*first));
    }
  }
  const uint32_t count = static_cast<uint32_t>(last) - *first + 1;
  if (count > kMaxRangeWidth) {
    return badEntry(entry, "range " + std::to_string(*first) + "-" + std::to_string(last) +
                               " holds " + std::to_string(count) + " ports, more than " +
                               std::to_string(kMaxRangeWidth));
  }
  request.containerPort = *first;
  request.count = static_cast<uint16_t>(count);
  return request;
}

Result<std::vector<DynamicPortRequest>> parsePorts(std::string_view text) {
  if (text.size() > kMaxPortsAnnotationBytes) {
    return annotationError(kPortsAnnotation, std::to_string(text.size()) +
                                                 " bytes exceed the limit of " +
                                                 std::to_string(kMaxPortsAnnotationBytes));
  }
  std::vector<DynamicPortRequest> requests;
  std::set<std::string, std::less<>> names;
  std::size_t index = 0;
  for (std::size_t start = 0; start <= text.size(); ++index) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view entry = trim(text.substr(start, comma - start));
    const bool isLast = comma == text.size();
    start = comma + 1;
    if (entry.empty()) {
      // A blank value asks for nothing, and one trailing comma is forgiven (generated lists);
      // any other empty entry is more likely a template that lost a value.
      if (isLast) break;
      return annotationError(kPortsAnnotation, "entry " + std::to_string(index + 1) +
                                                   " is empty (in " + quoteText(text) + ")");
    }
    if (requests.size() == kMaxPortsPerRequest) {
      return annotationError(kPortsAnnotation,
                             "more than " + std::to_string(kMaxPortsPerRequest) + " entries");
    }
    HOSTPORT_TRY(DynamicPortRequest request, parseEntry(entry));
    if (!names.insert(request.name).second) {
      return badEntry(entry, "name " + quoteText(request.name) + " is used twice");
    }
    requests.push_back(std::move(request));
  }
  return requests;
}

/// The annotation's text; nullopt when absent or null.
Result<std::optional<std::string_view>> stringAnnotation(const json& annotations,
                                                         std::string_view key) {
  const json* value = jsonMember(annotations, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    return invalidValue("annotation " + std::string(key), *value, "must be a string");
  }
  return std::string_view(value->get_ref<const std::string&>());
}

}  // namespace

Result<PortAnnotations> parsePortAnnotations(const json& annotations) {
  PortAnnotations result;
  if (annotations.is_null()) return result;
  if (!annotations.is_object()) {
    return invalidValue("pod annotations", annotations, "must be a JSON object");
  }
  HOSTPORT_TRY(const auto ports, stringAnnotation(annotations, kPortsAnnotation));
  if (ports) {
    HOSTPORT_TRY(result.dynamics, parsePorts(*ports));
  }
  HOSTPORT_TRY(const auto pool, stringAnnotation(annotations, kPoolAnnotation));
  if (pool) {
    if (const Problem problem = dnsLabelProblem(*pool)) {
      return annotationError(kPoolAnnotation, quoteText(*pool) + " " + std::string(*problem));
    }
    result.pool = std::string(*pool);
  }
  HOSTPORT_TRY(const auto sticky, stringAnnotation(annotations, kStickyAnnotation));
  if (sticky) {
    // Exactly these two words: YAML's other booleans ("no", "off") would be accepted by some
    // tools and not others, and a typo must not silently keep the default.
    if (*sticky != "true" && *sticky != "false") {
      return annotationError(kStickyAnnotation,
                             quoteText(*sticky) + " is not \"true\" or \"false\"");
    }
    result.sticky = *sticky == "true";
  }
  return result;
}

}  // namespace hostport::annotations
