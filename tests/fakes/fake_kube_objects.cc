#include "tests/fakes/fake_kube_objects.h"

#include <cstdio>
#include <span>
#include <vector>

#include "common/ascii.h"

namespace hostport::kube {

using nlohmann::json;

namespace {

// What every seeded object says it was created at: no clock in the fake.
constexpr const char* kCreationTimestamp = "2024-01-01T00:00:00Z";

std::vector<std::string_view> splitPath(std::string_view path) {
  std::vector<std::string_view> segments;
  if (path.empty() || path.front() != '/') return segments;
  path.remove_prefix(1);
  while (true) {
    const std::size_t slash = path.find('/');
    segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

/// The media type of a Content-Type header, lowercase, without parameters.
std::string mediaType(std::string_view contentType) {
  contentType = contentType.substr(0, contentType.find(';'));
  while (!contentType.empty() && contentType.back() == ' ') contentType.remove_suffix(1);
  while (!contentType.empty() && contentType.front() == ' ') contentType.remove_prefix(1);
  return ascii::lowercase(contentType);
}

FakeKubeAnswer failure(unsigned code, std::string_view message) {
  return {code, kubeStatus(code, message)};
}

/// `pods "name"`, how the real server names an object in its messages.
std::string describe(const KubeObjectPath& path) {
  return path.resource + " \"" + path.name + "\"";
}

FakeKubeAnswer notFound(const KubeObjectPath& path) {
  FakeKubeAnswer answer = failure(404, describe(path) + " not found");
  answer.body["details"] = {{"name", path.name}, {"kind", path.resource}};
  return answer;
}

FakeKubeAnswer conflict(const KubeObjectPath& path, std::string_view why) {
  FakeKubeAnswer answer =
      failure(409, "Operation cannot be fulfilled on " + describe(path) + ": " + std::string(why));
  answer.body["details"] = {{"name", path.name}, {"kind", path.resource}};
  return answer;
}

std::string stringField(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string_view kubeReason(unsigned code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";  // what the server says of a version compacted away
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

json kubeStatus(unsigned code, std::string_view message) {
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", json::object()},
                 {"status", "Failure"},
                 {"message", message}};
  if (const std::string_view reason = kubeReason(code); !reason.empty()) status["reason"] = reason;
  status["code"] = code;
  return status;
}

std::optional<KubeObjectPath> parseKubeObjectPath(std::string_view path) {
  const std::vector<std::string_view> segments = splitPath(path);
  for (const std::string_view segment : segments) {
    if (segment.empty()) return std::nullopt;
  }
  const auto groupVersion = groupVersionSegments(segments);
  if (!groupVersion) return std::nullopt;
  const std::size_t first = *groupVersion;  // the first segment after the group and version
  const std::span<const std::string_view> rest(segments.begin() + first, segments.end());
  KubeObjectPath parsed;
  std::size_t tail = 0;
  if (rest.size() >= 4 && rest[0] == "namespaces") {
    parsed.namespace_ = rest[1];
    parsed.resource = rest[2];
    parsed.name = rest[3];
    tail = 4;
  } else if (rest.size() >= 2) {
    parsed.resource = rest[0];
    parsed.name = rest[1];
    tail = 2;
  } else {
    return std::nullopt;
  }
  if (rest.size() == tail + 1 && rest[tail] == "status") {
    parsed.status = true;
  } else if (rest.size() != tail) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < first + tail; ++i) {
    parsed.object += '/';
    parsed.object += segments[i];
  }
  return parsed;
}

std::string FakeKubeObjects::newUid() {
  char uid[40];
  std::snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(++uids_));
  return uid;
}

Result<json> FakeKubeObjects::put(std::string_view path, json object) {
  const auto parsed = parseKubeObjectPath(path);
  if (!parsed || parsed->status) {
    return fail(ErrorCode::kInvalidArgument, "not the path of an object: " + std::string(path));
  }
  if (!object.is_object())
    return fail(ErrorCode::kInvalidArgument, "an object must be a JSON object");
  json& metadata = object["metadata"];
  if (metadata.is_null()) metadata = json::object();
  if (!metadata.is_object()) return fail(ErrorCode::kInvalidArgument, "metadata is not an object");
  metadata["name"] = parsed->name;
  if (!parsed->namespace_.empty()) metadata["namespace"] = parsed->namespace_;
  if (stringField(metadata, "uid").empty()) metadata["uid"] = newUid();
  if (!metadata.contains("creationTimestamp")) metadata["creationTimestamp"] = kCreationTimestamp;
  metadata["resourceVersion"] = nextResourceVersion();
  json& slot = objects_[parsed->object];
  std::optional<json> before;
  if (!slot.is_null()) before = std::move(slot);
  slot = object;
  record(parsed->object, std::move(before), object);
  return object;
}

std::optional<json> FakeKubeObjects::get(std::string_view path) const {
  const auto parsed = parseKubeObjectPath(path);
  if (!parsed) return std::nullopt;
  const auto it = objects_.find(parsed->object);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

bool FakeKubeObjects::erase(std::string_view path) {
  const auto parsed = parseKubeObjectPath(path);
  if (!parsed) return false;
  const auto it = objects_.find(parsed->object);
  if (it == objects_.end()) return false;
  json last = std::move(it->second);
  objects_.erase(it);
  // The deletion is a change of its own, at a version of its own, as etcd's delete is.
  last["metadata"]["resourceVersion"] = nextResourceVersion();
  record(parsed->object, std::move(last), std::nullopt);
  return true;
}

FakeKubeAnswer FakeKubeObjects::serve(std::string_view method, std::string_view path,
                                      std::string_view contentType, std::string_view body) {
  const auto parsed = parseKubeObjectPath(path);
  if (method == "POST" && !parsed) return create(path, body);
  if (!parsed) return failure(404, "the server could not find the requested resource");
  if (method == "GET") {
    const auto it = objects_.find(parsed->object);
    if (it == objects_.end()) return notFound(*parsed);
    return {200, it->second};
  }
  if (method == "PATCH") return patch(*parsed, contentType, body);
  if (method == "PUT") return update(*parsed, body);
  if (method == "DELETE" && !parsed->status) return remove(*parsed, body);
  return failure(
      405, "the fake API server does not serve " + std::string(method) + " " + std::string(path));
}

FakeKubeAnswer FakeKubeObjects::remove(const KubeObjectPath& path, std::string_view body) {
  const auto it = objects_.find(path.object);
  if (it == objects_.end()) return notFound(path);
  // DeleteOptions: its preconditions hold against the stored object, or nothing is deleted.
  if (!body.empty()) {
    const json options = json::parse(body, nullptr, false);
    if (!options.is_object()) return failure(400, "the DeleteOptions are not a JSON object");
    const json preconditions = options.value("preconditions", json::object());
    const json& metadata = it->second["metadata"];
    for (const char* field : {"uid", "resourceVersion"}) {
      const std::string wanted = stringField(preconditions, field);
      const std::string stored = stringField(metadata, field);
      if (!wanted.empty() && wanted != stored) {
        const std::string name = std::string(field) == "uid" ? "UID" : "ResourceVersion";
        return conflict(path, "Precondition failed: " + name + " in precondition: " + wanted +
                                  ", " + name + " in object meta: " + stored);
      }
    }
  }
  const std::string uid = stringField(it->second["metadata"], "uid");
  erase(path.object);
  return {200,
          {{"kind", "Status"},
           {"apiVersion", "v1"},
           {"metadata", json::object()},
           {"status", "Success"},
           {"details", {{"name", path.name}, {"kind", path.resource}, {"uid", uid}}}}};
}

FakeKubeAnswer FakeKubeObjects::patch(const KubeObjectPath& path, std::string_view contentType,
                                      std::string_view body) {
  const auto it = objects_.find(path.object);
  if (it == objects_.end()) return notFound(path);
  const std::string type = mediaType(contentType);
  const bool merge = type == "application/merge-patch+json";
  if (!merge && type != "application/json-patch+json") {
    return failure(415,
                   "the body of the request was in an unknown format - accepted media types "
                   "(by this fake): application/json-patch+json, "
                   "application/merge-patch+json");
  }
  const json document = json::parse(body, nullptr, false);
  if (document.is_discarded()) return failure(400, "the patch is not JSON");
  json changed = it->second;
  if (merge) {
    changed.merge_patch(document);
  } else {
    if (!document.is_array()) return failure(400, "a JSON patch must be an array of operations");
    // nlohmann's RFC 6902 patch throws on a failed test or a missing path; the store is untouched.
    try {
      changed = it->second.patch(document);
    } catch (const json::exception& error) {
      return failure(422, std::string("the JSON patch cannot be applied: ") + error.what());
    }
  }
  return write(path, std::move(changed));
}

FakeKubeAnswer FakeKubeObjects::update(const KubeObjectPath& path, std::string_view body) {
  if (!objects_.contains(path.object)) return notFound(path);
  json object = json::parse(body, nullptr, false);
  if (object.is_discarded() || !object.is_object())
    return failure(400, "the body is not a JSON object");
  return write(path, std::move(object));
}

FakeKubeAnswer FakeKubeObjects::create(std::string_view collection, std::string_view body) {
  json object = json::parse(body, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return failure(400, "the body is not a JSON object");
  }
  const json* metadata = object.contains("metadata") ? &object["metadata"] : nullptr;
  const std::string name = metadata != nullptr ? stringField(*metadata, "name") : "";
  if (name.empty()) return failure(422, "metadata.name: Required value: name is required");
  // The collection's path and the name make the object's: a path that names no object then is no
  // collection either.
  const std::string objectPath = std::string(collection) + "/" + name;
  const auto parsed = parseKubeObjectPath(objectPath);
  if (!parsed || parsed->status) {
    return failure(404, "the server could not find the requested resource");
  }
  if (const std::string ns = stringField(*metadata, "namespace");
      !ns.empty() && ns != parsed->namespace_) {
    return failure(400,
                   "the namespace of the provided object does not match the namespace sent on "
                   "the request");
  }
  if (objects_.contains(parsed->object)) {
    FakeKubeAnswer answer = failure(409, describe(*parsed) + " already exists");
    answer.body["reason"] = "AlreadyExists";
    answer.body["details"] = {{"name", name}, {"kind", parsed->resource}};
    return answer;
  }
  object["metadata"].erase("uid");
  object["metadata"].erase("resourceVersion");
  auto stored = put(parsed->object, std::move(object));
  if (!stored) return failure(422, stored.error().message);
  return {201, std::move(*stored)};
}

FakeKubeAnswer FakeKubeObjects::write(const KubeObjectPath& path, json changed) {
  const json& current = objects_.at(path.object);
  if (!changed.is_object()) return failure(422, "the object is not a JSON object");
  json& metadata = changed["metadata"];
  if (metadata.is_null()) metadata = json::object();
  if (!metadata.is_object()) return failure(422, "metadata is not an object");
  const json& before = current.at("metadata");

  if (const std::string name = stringField(metadata, "name"); name.empty()) {
    metadata["name"] = path.name;
  } else if (name != path.name) {
    return failure(400, "the name of the object (" + name +
                            ") does not match the name on the URL (" + path.name + ")");
  }
  if (const std::string ns = stringField(metadata, "namespace");
      !path.namespace_.empty() && !ns.empty() && ns != path.namespace_) {
    return failure(400,
                   "the namespace of the provided object does not match the namespace sent on "
                   "the request");
  }
  const std::string uid = stringField(before, "uid");
  if (const std::string given = stringField(metadata, "uid"); !given.empty() && given != uid) {
    return conflict(path, "Precondition failed: UID in precondition: " + uid +
                              ", UID in object meta: " + given);
  }
  const std::string version = stringField(before, "resourceVersion");
  if (const std::string given = stringField(metadata, "resourceVersion");
      !given.empty() && given != version) {
    return conflict(path,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  metadata["uid"] = uid;
  metadata["resourceVersion"] = version;
  if (before.contains("creationTimestamp")) {
    metadata["creationTimestamp"] = before["creationTimestamp"];
  }

  // The main resource keeps its status; /status changes nothing but the status.
  json stored;
  const json* status = nullptr;
  if (path.status) {
    stored = current;
    status = changed.contains("status") ? &changed["status"] : nullptr;
  } else {
    status = current.contains("status") ? &current["status"] : nullptr;
    stored = std::move(changed);
  }
  if (status != nullptr) {
    stored["status"] = *status;
  } else {
    stored.erase("status");
  }

  // Like the real server, a write that changes nothing is no write: same resourceVersion.
  json& slot = objects_[path.object];
  if (stored == slot) return {200, slot};
  stored["metadata"]["resourceVersion"] = nextResourceVersion();
  json previous = std::exchange(slot, std::move(stored));
  record(path.object, std::move(previous), slot);
  return {200, slot};
}

}  // namespace hostport::kube
