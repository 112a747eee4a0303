#pragma once
// Chaining and unchaining as file operations: the conf dir read in libcni's order, the editor's
// decision, the record, and the writes in the order that keeps every crash point undoable.
//
// Design note, the order of a chain write: the record first (so uninstall knows about a portmap
// entry before it leaves the file), then the conflist (atomically), then, for a converted `.conf`,
// the unlink of the `.conf` (the runtime never lacks a config: for a moment it sees the `.conf`,
// which sorts first, and then the conflist of the same name). The primary's file is replaced or
// unlinked only while it is still the version the plan was made from (applyChain).

#include <filesystem>
#include <functional>
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
  ConfVersion sourceVersion;  // `source` as read: what `document` was made from
};

/// Looks at the conf dir and decides; writes nothing. kConflict when a `.conf` would be converted
/// onto an existing conflist that is not ours; kIo when the dir or the record cannot be read.
Result<ChainPlan> planChain(const ChainPaths& paths, const ChainOptions& options);

enum class Applied {
  kWritten,        // done (or nothing to do: not a kWrite plan)
  kSourceChanged,  // `source` is no longer the version planned from: left alone; plan again
};

/// Carries out a kWrite plan (nothing for the others). Just before `source` is replaced (the
/// rename) or unlinked (a converted `.conf`), it must still be `sourceVersion`; otherwise the temp
/// file is dropped and the answer is kSourceChanged. `beforeSourceCheck` is for tests: it runs
/// just before each of those checks, where a primary's write races ours.
Result<Applied> applyChain(const ChainPaths& paths, const ChainPlan& plan,
                           const std::function<void()>& beforeSourceCheck = {});

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
