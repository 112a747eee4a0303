#include "agent/cni_config/chain_record.h"

#include "common/atomic_file.h"
#include "common/bounded_json.h"

namespace hostport::agent::cni_config {
namespace {

constexpr std::size_t kMaxRecordBytes = 4 << 20;
constexpr int kMaxRecordDepth = 72;  // a config's depth plus the record's own

Result<std::string> pathMember(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().front() != '/') {
    return fail(ErrorCode::kDecode,
                "cni chain record: " + std::string(key) + ": missing or not an absolute path");
  }
  return it->get<std::string>();
}

}  // namespace

Json chainRecordJson(const ChainRecord& record) {
  Json document = Json::object();
  document["file"] = record.file.string();
  if (record.converted) {
    document["convertedFrom"] = {{"path", record.converted->path.string()},
                                 {"content", record.converted->content}};
  }
  if (record.replacedPortmap) {
    document["replacedPortmap"] = {{"index", record.replacedPortmap->index},
                                   {"entry", record.replacedPortmap->entry}};
  }
  return document;
}

Result<ChainRecord> parseChainRecord(const Json& document) {
  if (!document.is_object()) return fail(ErrorCode::kDecode, "cni chain record: not an object");
  ChainRecord record;
  HOSTPORT_TRY(record.file, pathMember(document, "file"));
  if (const auto converted = document.find("convertedFrom"); converted != document.end()) {
    if (!converted->is_object() || !converted->contains("content")) {
      return fail(ErrorCode::kDecode, "cni chain record: convertedFrom: not {path, content}");
    }
    HOSTPORT_TRY(std::string path, pathMember(*converted, "path"));
    record.converted = ConvertedConf{std::move(path), converted->at("content")};
  }
  if (const auto portmap = document.find("replacedPortmap"); portmap != document.end()) {
    const auto index = portmap->is_object() ? portmap->find("index") : portmap->end();
    if (index == portmap->end() || !index->is_number_unsigned() || !portmap->contains("entry")) {
      return fail(ErrorCode::kDecode, "cni chain record: replacedPortmap: not {index, entry}");
    }
    record.replacedPortmap = ReplacedPortmap{index->get<std::size_t>(), portmap->at("entry")};
  }
  return record;
}

Result<std::optional<ChainRecord>> readChainRecord(const std::filesystem::path& stateDir) {
  const auto path = stateDir / kChainRecordName;
  HOSTPORT_TRY(auto text, readSmallFile(path, kMaxRecordBytes));
  if (!text) return std::nullopt;
  auto document = parseBoundedOrderedJson(*text, path.string(), kMaxRecordBytes, kMaxRecordDepth);
  if (!document) return std::unexpected(document.error());
  auto record = parseChainRecord(*document);
  if (!record) return withContext(record.error(), path.string());
  return std::optional(std::move(*record));
}

Result<void> writeChainRecord(const std::filesystem::path& stateDir, const ChainRecord& record) {
  return writeFileAtomically(stateDir, kChainRecordName, chainRecordJson(record).dump(2) + "\n",
                             Durability::kDurable);
}

Result<void> removeChainRecord(const std::filesystem::path& stateDir) {
  return removeFile(stateDir / kChainRecordName);
}

}  // namespace hostport::agent::cni_config
