#pragma once
// What the agent changed in the node's CNI configuration, kept under its state dir so that
// `hostportctl uninstall-cni` can undo it without the agent: the file chained into, the `.conf`
// it was converted from (with its content), and the portmap entry it replaced (with its index).
// Written atomically and durably: a record that lies would make uninstall restore the wrong thing.

#include <filesystem>
#include <optional>
#include <string_view>

#include "agent/cni_config/conf_editor.h"
#include "common/error.h"

namespace hostport::agent::cni_config {

inline constexpr std::string_view kChainRecordName = "cni-chain.json";

struct ConvertedConf {
  std::filesystem::path path;  // the `.conf` the conflist replaced
  Json content;                // its document, as the primary wrote it

  bool operator==(const ConvertedConf&) const = default;
};

struct ChainRecord {
  std::filesystem::path file;  // the conflist hostport is chained into
  std::optional<ConvertedConf> converted;
  std::optional<ReplacedPortmap> replacedPortmap;

  bool operator==(const ChainRecord&) const = default;
};

Json chainRecordJson(const ChainRecord& record);
/// kDecode naming the field when the document is not a record.
Result<ChainRecord> parseChainRecord(const Json& document);

/// The record in `stateDir`; nullopt when there is none.
Result<std::optional<ChainRecord>> readChainRecord(const std::filesystem::path& stateDir);
Result<void> writeChainRecord(const std::filesystem::path& stateDir, const ChainRecord& record);
Result<void> removeChainRecord(const std::filesystem::path& stateDir);

}  // namespace hostport::agent::cni_config
