#include "agent/cni_config/chain_files.h"

#include "common/atomic_file.h"

namespace hostport::agent::cni_config {
namespace {

constexpr std::size_t kMaxConfBytes = 1 << 20;

std::filesystem::path conflistPathOf(const std::filesystem::path& conf) {
  auto path = conf;
  path.replace_extension(".conflist");
  return path;
}

/// The record after this edit: what an earlier edit of the same file recorded stays (its portmap
/// is no longer in the file to be found again).
ChainRecord nextRecord(const std::optional<ChainRecord>& previous, const ChainPlan& plan,
                       std::optional<ConvertedConf> converted,
                       std::optional<ReplacedPortmap> replaced) {
  ChainRecord record{plan.target, std::move(converted), std::move(replaced)};
  if (previous && previous->file == plan.target) {
    if (!record.converted) record.converted = previous->converted;
    if (!record.replacedPortmap) record.replacedPortmap = previous->replacedPortmap;
  }
  return record;
}

Result<Json> readConf(const std::filesystem::path& path) {
  const auto format = confFormatOf(path);
  if (!format) return fail(ErrorCode::kInvalidArgument, path.string() + " is not a CNI config");
  HOSTPORT_TRY(auto text, readSmallFile(path, kMaxConfBytes));
  if (!text) return fail(ErrorCode::kNotFound, path.string() + " does not exist");
  auto document = parseConf(*text, *format);
  if (!document) return withContext(document.error(), path.string());
  return document;
}

}  // namespace

Result<ChainPlan> planChain(const ChainPaths& paths, const ChainOptions& options) {
  ChainPlan plan;
  HOSTPORT_TRY(ConfDirScan scan, scanConfDir(paths.confDir));
  plan.unparseable = std::move(scan.unparseable);
  if (!plan.unparseable.empty()) {
    plan.kind = ChainPlan::Kind::kUnparseable;
    return plan;
  }
  if (!scan.chosen) return plan;
  HOSTPORT_TRY(const auto previous, readChainRecord(paths.stateDir));
  ConfFile& chosen = *scan.chosen;
  plan.source = chosen.path;
  plan.target = chosen.path;
  plan.mode = confModeOf(chosen.path);
  plan.sourceVersion = chosen.version;
  std::optional<ConvertedConf> converted;
  Json conflist;
  if (chosen.format == ConfFormat::kConf) {
    plan.target = conflistPathOf(chosen.path);
    std::error_code error;
    const bool ours = previous && previous->file == plan.target;
    if (std::filesystem::exists(plan.target, error) && !ours) {
      return fail(ErrorCode::kConflict, "cannot convert " + chosen.path.string() + ": " +
                                            plan.target.string() + " exists and is not ours");
    }
    auto made = conflistFromConf(chosen.document);
    if (!made) return withContext(made.error(), chosen.path.string());
    conflist = std::move(*made);
    converted = ConvertedConf{chosen.path, chosen.document};
  } else {
    conflist = chosen.document;
  }
  auto edit = chainIntoConflist(conflist, options);
  if (!edit) return withContext(edit.error(), chosen.path.string());
  plan.inserted = edit->inserted;
  plan.record = nextRecord(previous, plan, std::move(converted), std::move(edit->replacedPortmap));
  plan.document = std::move(edit->conflist);
  const bool recordCurrent = previous && *previous == plan.record;
  plan.kind = edit->changed || plan.source != plan.target || !recordCurrent
                  ? ChainPlan::Kind::kWrite
                  : ChainPlan::Kind::kUpToDate;
  return plan;
}

Result<Applied> applyChain(const ChainPaths& paths, const ChainPlan& plan,
                           const std::function<void()>& beforeSourceCheck) {
  if (plan.kind != ChainPlan::Kind::kWrite) return Applied::kWritten;
  // A primary rewrites its file when it likes (Calico's install-cni, flannel's cp -f, Cilium); a
  // rewrite that lands while we write would vanish under our rename, or with the `.conf` we
  // unlink. So `source` is compared with the version planned from at the last moment. A rewrite
  // between that check and rename(2) or unlink(2) is still lost: CNI installers share no lock.
  bool changed = false;
  const auto sourceUnchanged = [&]() -> Result<void> {
    if (beforeSourceCheck) beforeSourceCheck();
    HOSTPORT_TRY(const auto now, readConfVersion(plan.source));
    changed = now != plan.sourceVersion;
    if (changed) return fail(ErrorCode::kConflict, plan.source.string() + " changed meanwhile");
    return {};
  };
  if (auto recorded = writeChainRecord(paths.stateDir, plan.record); !recorded) {
    return withContext(recorded.error(), "cannot keep the record of the chaining");
  }
  if (auto written = writeConf(plan.target, plan.document, plan.mode, sourceUnchanged); !written) {
    if (changed) return Applied::kSourceChanged;
    return std::unexpected(written.error());
  }
  if (plan.source != plan.target) {
    // Our conflist is in place, but the `.conf` sorts first: while it stays, the runtime uses it.
    if (auto unchanged = sourceUnchanged(); !unchanged) {
      if (changed) return Applied::kSourceChanged;
      return std::unexpected(unchanged.error());
    }
    HOSTPORT_TRY_VOID(removeFile(plan.source));
  }
  return Applied::kWritten;
}

Result<UnchainReport> unchain(const ChainPaths& paths) {
  UnchainReport report;
  HOSTPORT_TRY(const auto record, readChainRecord(paths.stateDir));
  // The record names files as the agent saw them; the caller's conf dir may be the same dir seen
  // from elsewhere (`kubectl debug node` mounts the host at /host), so only the names count.
  const auto inConfDir = [&](const std::filesystem::path& recorded) {
    return paths.confDir / recorded.filename();
  };
  std::filesystem::path file;
  if (record) {
    file = inConfDir(record->file);
  } else {
    HOSTPORT_TRY(ConfDirScan scan, scanConfDir(paths.confDir));
    if (!scan.chosen) return report;
    file = scan.chosen->path;
  }
  auto current = readConf(file);
  if (!current && current.error().code != ErrorCode::kNotFound)
    return std::unexpected(current.error());
  if (record && record->converted) {
    // The primary's own `.conf` comes back as it was, then our conflist goes.
    const auto& conf = *record->converted;
    const auto original = inConfDir(conf.path);
    HOSTPORT_TRY_VOID(writeConf(original, conf.content, confModeOf(file)));
    if (current) HOSTPORT_TRY_VOID(removeFile(file));
    report.file = original;
    report.restoredConf = true;
    report.restoredPortmap = record->replacedPortmap.has_value();
  } else if (current) {
    if (confFormatOf(file) == ConfFormat::kConflist) {
      const auto portmap = record ? record->replacedPortmap : std::nullopt;
      HOSTPORT_TRY(Json restored, unchainFromConflist(*current, portmap));
      if (restored != *current) HOSTPORT_TRY_VOID(writeConf(file, restored, confModeOf(file)));
      report.restoredPortmap = portmap.has_value();
    }
    report.file = file;
  }
  HOSTPORT_TRY_VOID(removeChainRecord(paths.stateDir));
  return report;
}

}  // namespace hostport::agent::cni_config
