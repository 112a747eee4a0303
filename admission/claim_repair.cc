#include "admission/claim_repair.h"

#include "agent/log/event_log.h"
#include "annotations/annotation_names.h"
#include "common/json_fields.h"
#include "kube/api_time.h"
#include "kube/paged_list.h"

namespace hostport::admission {
namespace {

namespace log = agent::log;
using nlohmann::json;

constexpr std::string_view kJson = "application/json";

}  // namespace

ClaimRepair::ClaimRepair(std::unique_ptr<kube::KubeClient> client, RepairOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      orphans_(options_.grace, options_.passes),
      thread_([this] { run(); }) {}

ClaimRepair::~ClaimRepair() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void ClaimRepair::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  wake_.notify_all();
}

std::string ClaimRepair::leasePath() const {
  return leasesPath(options_.namespaceName) + "/" + options_.leaseName;
}

void ClaimRepair::run() {
  // A pass every grace/passes: `passes` of them span the grace.
  const auto period =
      std::max<Clock::duration>(options_.grace / options_.passes, options_.retryPeriod);
  auto nextPass = Clock::now();
  for (;;) {
    const auto now = Clock::now();
    const bool wasLeading = leading_.load();
    const bool leads = lead(now);
    leading_ = leads;
    if (leads != wasLeading) {
      if (leads) ++transitions_;
      if (!leads) orphans_.forget();
      missing_ = orphans_.missing();
      log::event(log::Component::kAdmission, log::Level::kInfo,
                 leads ? "admission.repair_leading" : "admission.repair_following",
                 {{"identity", options_.identity}, {"lease", options_.leaseName}});
      if (leads) nextPass = now;
    }
    if (leads && now >= nextPass) {
      if (auto repaired = repair(now); !repaired) {
        ++failedPasses_;
        log::event(log::Component::kAdmission, log::Level::kWarn, "admission.repair_failed",
                   {{"cause", repaired.error().message}});
      }
      nextPass = now + period;
    }
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, options_.retryPeriod, [this] { return stopped_; })) break;
  }
  if (leading_) handOver();
  leading_ = false;
}

bool ClaimRepair::lead(Clock::time_point now) {
  const auto wall = std::chrono::system_clock::now();
  auto read = client_->send({"GET", leasePath(), "", ""});
  if (!read) return false;
  if (read->status == 404) {
    const json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.leaseName}, {"namespace", options_.namespaceName}}},
        {"spec",
         {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", options_.leaseDuration.count()},
          {"acquireTime", kube::apiMicroTime(wall)},
          {"renewTime", kube::apiMicroTime(wall)},
          {"leaseTransitions", 0}}}};
    auto created = client_->send(
        {"POST", leasesPath(options_.namespaceName), std::string(kJson), lease.dump()});
    return created && created->ok();
  }
  if (!read->ok()) return false;
  auto parsed = parseLease(read->body, "leader lease");
  if (!parsed || !parsed->is_object()) return false;
  json lease = std::move(*parsed);
  json& spec = lease["spec"];
  if (!spec.is_object()) spec = json::object();
  const std::string holder = jsonText(spec, "holderIdentity");
  const std::string record = holder + "\n" + jsonText(spec, "renewTime");
  if (record != observedRecord_) {
    observedRecord_ = record;
    observedAt_ = now;
  }
  const bool ours = holder == options_.identity;
  if (!ours && !holder.empty() && now - observedAt_ < options_.leaseDuration) return false;
  if (!ours) {
    spec["holderIdentity"] = options_.identity;
    spec["acquireTime"] = kube::apiMicroTime(wall);
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["leaseDurationSeconds"] = options_.leaseDuration.count();
  spec["renewTime"] = kube::apiMicroTime(wall);
  // The resourceVersion read rides along: a replica that wrote meanwhile makes this a 409.
  auto written = client_->send({"PUT", leasePath(), std::string(kJson), lease.dump()});
  if (!written || !written->ok()) return false;
  observedRecord_ = options_.identity + "\n" + spec["renewTime"].get<std::string>();
  observedAt_ = now;
  return true;
}

void ClaimRepair::handOver() {
  auto read = client_->send({"GET", leasePath(), "", ""});
  if (!read || !read->ok()) return;
  auto lease = parseLease(read->body, "leader lease");
  if (!lease || !lease->is_object() || !(*lease)["spec"].is_object() ||
      jsonText((*lease)["spec"], "holderIdentity") != options_.identity) {
    return;
  }
  (*lease)["spec"]["holderIdentity"] = "";
  (void)client_->send({"PUT", leasePath(), std::string(kJson), lease->dump()});
}

Result<ClaimHolders> ClaimRepair::holders() {
  ClaimHolders holders;
  HOSTPORT_TRY(const auto pods, kube::listCollection(*client_, "/api/v1/pods", {}));
  // Read in place: a pod's metadata carries its managedFields, not to be copied per pass.
  for (const json& pod : pods.items) {
    const json* metadata = jsonMember(pod, "metadata");
    if (metadata == nullptr) continue;
    holders.pods.insert(jsonText(*metadata, "namespace") + "/" + jsonText(*metadata, "name"));
    if (const json* notes = jsonMember(*metadata, "annotations")) {
      if (std::string written = jsonText(*notes, annotations::kClaimHolderAnnotation);
          !written.empty()) {
        holders.pods.insert(std::move(written));
      }
    }
  }
  HOSTPORT_TRY(const auto sets, kube::listCollection(*client_, "/apis/apps/v1/statefulsets", {}));
  for (const json& set : sets.items) {
    const json* metadata = jsonMember(set, "metadata");
    const json* spec = jsonMember(set, "spec");
    if (metadata == nullptr || spec == nullptr) continue;
    const json* replicas = jsonMember(*spec, "replicas");
    holders.statefulSets[jsonText(*metadata, "namespace") + "/" + jsonText(*metadata, "name")] =
        replicas != nullptr && replicas->is_number_integer() ? replicas->get<int64_t>()
                                                             : 1;  // the API server's default
  }
  return holders;
}

Result<void> ClaimRepair::repair(Clock::time_point now) {
  // Claims first: a claim made after this list is not judged in this pass, and a pod admitted
  // before it is in the pods listed after it.
  HOSTPORT_TRY(const std::vector<PortClaim> claims, listClaims(*client_, options_.namespaceName));
  HOSTPORT_TRY(const ClaimHolders found, holders());
  ++passes_;
  const auto orphans = orphans_.pass(claims, found, now);
  missing_ = orphans_.missing();
  for (const auto& claim : orphans) {
    const json options = {{"apiVersion", "v1"},
                          {"kind", "DeleteOptions"},
                          {"preconditions", {{"resourceVersion", claim.resourceVersion}}}};
    auto deleted =
        client_->send({"DELETE", leasesPath(options_.namespaceName) + "/" + claim.leaseName(),
                       std::string(kJson), options.dump()});
    if (!deleted || !deleted->ok()) continue;  // gone, or claimed again meanwhile
    ++released_;
    log::event(log::Component::kAdmission, log::Level::kInfo, "admission.claim_released",
               {{"pool", claim.pool},
                {"port", claim.port},
                log::untrusted("holder", claim.holder),
                log::untrusted("entry", claim.entry)});
  }
  return {};
}

void ClaimRepair::writeMetrics(prometheus::TextWriter& out) const {
  using prometheus::Type;
  out.family("hostport_admission_repair_leader", Type::kGauge,
             "1 while this replica leads the repair of cluster pools' claims.");
  out.sample("hostport_admission_repair_leader", uint64_t{leading_.load() ? 1u : 0u});
  out.family("hostport_admission_repair_leaderships_total", Type::kCounter,
             "Times this replica became the repair loop's leader.");
  out.sample("hostport_admission_repair_leaderships_total", transitions_.load());
  out.family("hostport_admission_repair_passes_total", Type::kCounter,
             "Repair passes over the claims, by outcome.");
  out.sample("hostport_admission_repair_passes_total", passes_.load(), {{"outcome", "done"}});
  out.sample("hostport_admission_repair_passes_total", failedPasses_.load(),
             {{"outcome", "failed"}});
  out.family("hostport_admission_claims_released_total", Type::kCounter,
             "Claims the repair loop released: their pod gone for the grace, in every pass.");
  out.sample("hostport_admission_claims_released_total", released_.load());
  out.family("hostport_admission_claims_missing", Type::kGauge,
             "Claims whose holder the last pass did not find, waiting out the grace.");
  out.sample("hostport_admission_claims_missing", missing_.load());
}

}  // namespace hostport::admission
