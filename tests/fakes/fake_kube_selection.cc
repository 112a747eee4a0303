#include "tests/fakes/fake_kube_selection.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "common/percent_encoding.h"

namespace hostport::kube {
namespace {

using nlohmann::json;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

constexpr std::array<std::string_view, 10> kPodFields = {
    "metadata.name",      "metadata.namespace",      "spec.nodeName",    "spec.restartPolicy",
    "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
    "status.podIP",       "status.nominatedNodeName"};

bool supported(std::string_view field, std::string_view resource) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (resource != "pods") return false;
  for (const std::string_view known : kPodFields) {
    if (known == field) return true;
  }
  return false;
}

/// A field as the real server's field set has it: a missing field is "", a bool "true"/"false".
std::string fieldText(const json& object, const std::vector<std::string>& path) {
  const json* at = &object;
  for (const std::string& key : path) {
    if (!at->is_object()) return {};
    const auto found = at->find(key);
    if (found == at->end()) return {};
    at = &*found;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean()) return at->get<bool>() ? "true" : "false";
  return {};
}

}  // namespace

std::optional<std::size_t> groupVersionSegments(const std::vector<std::string_view>& segments) {
  if (segments.size() >= 2 && segments[0] == "api") return 2;
  if (segments.size() >= 3 && segments[0] == "apis") return 3;
  return std::nullopt;
}

bool KubeCollectionPath::contains(std::string_view objectPath) const {
  const std::string scope =
      namespace_.empty() ? groupVersion + "/" : groupVersion + "/namespaces/" + namespace_ + "/";
  if (!objectPath.starts_with(scope)) return false;
  std::vector<std::string_view> rest = split(objectPath.substr(scope.size()), '/');
  // {resource}/{name} in a namespace or cluster-wide; namespaces/{ns}/{resource}/{name} when the
  // collection spans every namespace.
  if (rest.size() == 4 && namespace_.empty() && rest[0] == "namespaces") {
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  return rest.size() == 2 && rest[0] == resource;
}

std::optional<KubeCollectionPath> parseKubeCollectionPath(std::string_view path) {
  std::vector<std::string_view> segments = split(path.substr(path.starts_with('/') ? 1 : 0), '/');
  for (const std::string_view segment : segments) {
    if (segment.empty()) return std::nullopt;
  }
  KubeCollectionPath parsed;
  const auto groupVersion = groupVersionSegments(segments);
  if (!groupVersion) return std::nullopt;
  const std::size_t first = *groupVersion;
  for (std::size_t i = 0; i < first; ++i) parsed.groupVersion += "/" + std::string(segments[i]);
  const std::size_t left = segments.size() - first;
  if (left == 3 && segments[first] == "namespaces") {
    parsed.namespace_ = segments[first + 1];
    parsed.resource = segments[first + 2];
  } else if (left == 1) {
    parsed.resource = segments[first];
  } else {
    return std::nullopt;
  }
  return parsed;
}

Result<KubeListQuery> parseKubeListQuery(std::string_view target) {
  KubeListQuery query;
  const std::size_t mark = target.find('?');
  if (mark == std::string_view::npos) return query;
  for (const std::string_view pair : split(target.substr(mark + 1), '&')) {
    if (pair.empty()) continue;
    const std::size_t equals = pair.find('=');
    HOSTPORT_TRY(const std::string name, percentDecode(pair.substr(0, equals)));
    HOSTPORT_TRY(const std::string value,
                 percentDecode(equals == std::string_view::npos ? "" : pair.substr(equals + 1)));
    const auto number = [&](auto& out) -> Result<void> {
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
      if (error != std::errc() || end != value.data() + value.size()) {
        return fail(ErrorCode::kInvalidArgument, name + ": not a number: " + value);
      }
      return {};
    };
    if (name == "fieldSelector") {
      query.fieldSelector = value;
    } else if (name == "labelSelector") {
      query.labelSelector = value;
    } else if (name == "resourceVersion") {
      query.resourceVersion = value;
    } else if (name == "continue") {
      query.continueToken = value;
    } else if (name == "limit") {
      HOSTPORT_TRY_VOID(number(query.limit));
    } else if (name == "timeoutSeconds") {
      unsigned seconds = 0;
      HOSTPORT_TRY_VOID(number(seconds));
      query.timeoutSeconds = seconds;
    } else if (name == "watch") {
      query.watch = value == "true" || value == "1";
    } else if (name == "allowWatchBookmarks") {
      query.allowWatchBookmarks = value == "true" || value == "1";
    }
  }
  return query;
}

Result<FieldSelector> FieldSelector::parse(std::string_view text, std::string_view resource) {
  FieldSelector selector;
  if (text.empty()) return selector;
  for (const std::string_view term : split(text, ',')) {
    Term parsed;
    std::size_t at = term.find("!=");
    std::size_t width = 2;
    if (at != std::string_view::npos) {
      parsed.equal = false;
    } else if ((at = term.find("==")) == std::string_view::npos) {
      at = term.find('=');
      width = 1;
    }
    if (at == std::string_view::npos || at == 0) {
      return fail(ErrorCode::kInvalidArgument,
                  "invalid field selector term " + std::string(term) + ": no operator");
    }
    const std::string_view field = term.substr(0, at);
    if (!supported(field, resource)) {
      return fail(ErrorCode::kInvalidArgument, "field label not supported: " + std::string(field));
    }
    for (const std::string_view key : split(field, '.')) parsed.path.emplace_back(key);
    parsed.value = term.substr(at + width);
    selector.terms_.push_back(std::move(parsed));
  }
  return selector;
}

bool FieldSelector::matches(const json& object) const {
  for (const Term& term : terms_) {
    if ((fieldText(object, term.path) == term.value) != term.equal) return false;
  }
  return true;
}

namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

/// The requirements of a label selector: split at the commas outside parentheses.
std::vector<std::string_view> requirementsOf(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') --depth;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

/// A label key: [prefix/]name, the name 1 to 63 of [A-Za-z0-9._-].
bool validKey(std::string_view key) {
  const std::size_t slash = key.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (slash != std::string_view::npos && (slash == 0 || slash > 253)) return false;
  return !name.empty() && name.size() <= 63 && std::ranges::all_of(name, isNameChar);
}

/// A label value: at most 63 of [A-Za-z0-9._-], possibly empty.
bool validValue(std::string_view value) {
  return value.size() <= 63 && std::ranges::all_of(value, isNameChar);
}

const std::string* labelOf(const json& object, const std::string& key) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return nullptr;
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return nullptr;
  const auto found = labels->find(key);
  if (found == labels->end() || !found->is_string()) return nullptr;
  return found->get_ptr<const std::string*>();
}

}  // namespace

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  if (trimmed(text).empty()) return selector;
  for (const std::string_view raw : requirementsOf(text)) {
    const std::string_view term = trimmed(raw);
    const auto bad = [&](std::string_view why) {
      return fail(ErrorCode::kInvalidArgument, "unable to parse requirement: \"" +
                                                   std::string(term) + "\": " + std::string(why));
    };
    Requirement requirement;
    std::string_view key;
    if (term.starts_with('!')) {
      key = trimmed(term.substr(1));
      requirement.op = Op::kNotExists;
    } else if (const std::size_t in = term.find(" in "), notin = term.find(" notin ");
               in != std::string_view::npos || notin != std::string_view::npos) {
      const bool isIn =
          in != std::string_view::npos && (notin == std::string_view::npos || in < notin);
      const std::size_t at = isIn ? in : notin;
      key = trimmed(term.substr(0, at));
      requirement.op = isIn ? Op::kIn : Op::kNotIn;
      const std::string_view set = trimmed(term.substr(at + (isIn ? 4 : 7)));
      if (!set.starts_with('(') || !set.ends_with(')')) return bad("a set is (value,...)");
      for (const std::string_view value : split(set.substr(1, set.size() - 2), ',')) {
        if (!validValue(trimmed(value))) return bad("invalid value");
        requirement.values.emplace_back(trimmed(value));
      }
    } else if (const std::size_t ne = term.find("!="); ne != std::string_view::npos) {
      key = trimmed(term.substr(0, ne));
      requirement.op = Op::kNotIn;
      requirement.values.emplace_back(trimmed(term.substr(ne + 2)));
    } else if (const std::size_t eq = term.find('='); eq != std::string_view::npos) {
      key = trimmed(term.substr(0, eq));
      requirement.op = Op::kIn;
      const std::size_t width = term.substr(eq).starts_with("==") ? 2 : 1;
      requirement.values.emplace_back(trimmed(term.substr(eq + width)));
    } else {
      key = term;
    }
    if (!validKey(key)) return bad("invalid label key");
    for (const std::string& value : requirement.values) {
      if (!validValue(value)) return bad("invalid label value");
    }
    requirement.key = key;
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

bool LabelSelector::matches(const json& object) const {
  for (const Requirement& requirement : requirements_) {
    const std::string* value = labelOf(object, requirement.key);
    const bool listed = value != nullptr &&
                        std::ranges::find(requirement.values, *value) != requirement.values.end();
    switch (requirement.op) {
      case Op::kExists:
        if (value == nullptr) return false;
        break;
      case Op::kNotExists:
        if (value != nullptr) return false;
        break;
      case Op::kIn:
        if (!listed) return false;
        break;
      case Op::kNotIn:
        if (listed) return false;
        break;
    }
  }
  return true;
}

Result<Selector> Selector::parse(const KubeListQuery& query, std::string_view resource) {
  HOSTPORT_TRY(FieldSelector fields, FieldSelector::parse(query.fieldSelector, resource));
  HOSTPORT_TRY(LabelSelector labels, LabelSelector::parse(query.labelSelector));
  return Selector{std::move(fields), std::move(labels)};
}

}  // namespace hostport::kube
