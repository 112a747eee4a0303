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
constexpr std::string_view kHostEntryForm = "name[*count][/protocol]";

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

/// Splits "<head>/<protocol>" into head and protocol (tcp when there is no '/').
Result<std::string_view> takeProtocol(std::string_view entry, std::string_view text,
                                      PortProtocol& protocol) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return text;
  const std::string_view name = text.substr(slash + 1);
  if (name.empty()) return badEntry(entry, "missing protocol after '/'");
  auto parsed = parsePortProtocol(name);
  if (!parsed) {
    return badEntry(entry,
                    "unknown protocol " + quoteText(name) + " (want tcp, udp, sctp or tcpudp)");
  }
  protocol = *parsed;
  return text.substr(0, slash);
}

Result<void> takeName(std::string_view entry, std::string_view name, DynamicPortRequest& request) {
  if (const Problem problem = dnsLabelProblem(name)) {
    return badEntry(entry, "name " + quoteText(name) + " " + std::string(*problem));
  }
  request.name = std::string(name);
  return {};
}

/// A hostNetwork pod's entry: `name[*count][/protocol]`. Its process binds the host port itself,
/// so there is no containerPort to forward to (0 in the request).
Result<DynamicPortRequest> parseHostEntry(std::string_view entry) {
  if (const std::size_t equals = entry.find('='); equals != std::string_view::npos) {
    const std::size_t slash = entry.find('/');
    const std::string protocol =
        slash == std::string_view::npos ? std::string() : std::string(entry.substr(slash));
    const std::string name(entry.substr(0, equals));
    return badEntry(entry,
                    "a hostNetwork pod names no containerPort (its process binds the host port "
                    "itself): write " +
                        quoteText(name + protocol) + ", or " + quoteText(name + "*N" + protocol) +
                        " for a block of N ports");
  }
  DynamicPortRequest request;
  request.containerPort = 0;
  HOSTPORT_TRY(std::string_view head, takeProtocol(entry, entry, request.protocol));
  const std::size_t star = head.find('*');
  HOSTPORT_TRY_VOID(takeName(entry, head.substr(0, star), request));
  if (star == std::string_view::npos) return request;
  const std::string_view countText = head.substr(star + 1);
  const auto count = parsePort(countText);
  if (!count || *count > kMaxRangeWidth) {
    return badEntry(entry, "block size " + quoteText(countText) + " must be a number 1.." +
                               std::to_string(kMaxRangeWidth));
  }
  request.count = *count;
  return request;
}

Result<DynamicPortRequest> parseEntry(std::string_view entry, PodNetwork network) {
  if (network == PodNetwork::kHost) return parseHostEntry(entry);
  const std::size_t equals = entry.find('=');
  if (equals == std::string_view::npos) {
    return badEntry(entry, "expected " + std::string(kEntryForm) + " (" +
                               std::string(kHostEntryForm) +
                               ", with no containerPort, is for hostNetwork pods)");
  }
  DynamicPortRequest request;
  const std::string_view name = entry.substr(0, equals);
  if (name.empty()) return badEntry(entry, "missing name before '='");
  HOSTPORT_TRY_VOID(takeName(entry, name, request));
  HOSTPORT_TRY(std::string_view ports,
               takeProtocol(entry, entry.substr(equals + 1), request.protocol));
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

Result<std::vector<DynamicPortRequest>> parsePorts(std::string_view text, PodNetwork network) {
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
    HOSTPORT_TRY(DynamicPortRequest request, parseEntry(entry, network));
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

Result<PortAnnotations> parsePortAnnotations(const json& annotations, PodNetwork network) {
  PortAnnotations result;
  if (annotations.is_null()) return result;
  if (!annotations.is_object()) {
    return invalidValue("pod annotations", annotations, "must be a JSON object");
  }
  HOSTPORT_TRY(const auto ports, stringAnnotation(annotations, kPortsAnnotation));
  if (ports) {
    HOSTPORT_TRY(result.dynamics, parsePorts(*ports, network));
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
