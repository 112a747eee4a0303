#pragma once
// Chaining and unchaining as file operations: the conf dir read in libcni's order, the editor's
// decision, the record, and the writes in the order that keeps every crash point undoable.
//
// Design note, the order of a chain write: the record first (so uninstall knows about a portmap
// entry before it leaves the file), then the conflist (atomically), then, for a converted `.conf`,
// the unlink of the `.conf` (the runtime never lacks a config: for a moment it sees the `.conf`,
// which sorts first, and then the conflist of the same name).

#include <filesystem>
#include <optional>
#include <vector>

#include "agent/cni_config/chain_record.h"
#include "agent/cni_config/conf_dir.h"
#include "agent/cni_config/conf_editor.h"
#include "common/error.h"

namespace hostport::agent::cni_config {

struct ChainPaths {
  std::filesystem::path confDir;   // cniConfDir
  std::filesystem::path stateDir;  // the agent's state dir, where the record lives
};

struct ChainPlan {
  enum class Kind {
    kNoConfig,     // no config file loads: the primary has not installed yet
    kUnparseable,  // a config sorted first does not load (a write in progress?): wait
    kUpToDate,     // hostport is chained as asked
    kWrite,        // `document` goes to `target`
  };
  Kind kind = Kind::kNoConfig;
  std::vector<UnparseableFile> unparseable;
  std::filesystem::path source;  // the file the runtime uses
  std::filesystem::path target;  // the file to write: `source`, or the conflist of a `.conf`
  Json document;
  bool inserted = false;  // our entry was missing from `source`
  ChainRecord record;     // the record once `document` is written
  mode_t mode = 0644;
};

/// Looks at the conf dir and decides; writes nothing. kConflict when a `.conf` would be converted
/// onto an existing conflist that is not ours; kIo when the dir or the record cannot be read.
Result<ChainPlan> planChain(const ChainPaths& paths, const ChainOptions& options);

/// Carries out a kWrite plan (nothing for the others).
Result<void> applyChain(const ChainPaths& paths, const ChainPlan& plan);

struct UnchainReport {
  std::optional<std::filesystem::path> file;  // the config edited; nullopt: nothing to undo
  bool restoredConf = false;                  // a converted `.conf` came back
  bool restoredPortmap = false;
};

/// Takes hostport out of the node's CNI configuration, from the record (or, without one, from the
/// file the runtime uses), and removes the record. Works without the agent. A file that does not
/// parse is left alone: kDecode, try again.
Result<UnchainReport> unchain(const ChainPaths& paths);

}  // namespace hostport::agent::cni_config
