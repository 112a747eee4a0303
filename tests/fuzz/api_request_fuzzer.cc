// The control socket's JSON bodies (agent/api/json_codec.h), which the agent decodes from anything
// that can open its socket and the plugin decodes from the agent. One body is tried as every
// document the codec reads. Invariants: what decodes encodes to JSON that decodes to the same
// value; an allocation request's pod addresses pass common/pod_address.h, and there is one when
// it asks for ports; and its forwarding, planned as the agent plans a lease from it, passes
// every check of plan_check.h.

#include <nlohmann/json.hpp>

#include "agent/api/json_codec.h"
#include "common/pod_address.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/plan_check.h"

namespace {

namespace api = hostport::agent::api;

/// decode(encode(value)) == value, for the codec's types that compare.
template <typename T, typename Encode, typename Decode>
void checkRoundTrip(const T& value, Encode encode, Decode decode) {
  const auto again = decode(api::parseBody(api::dumpBody(encode(value))).value());
  FUZZ_CHECK(again.has_value() && *again == value);
}

void checkAllocationRequest(const nlohmann::json& body) {
  const auto request = api::allocationRequestFromJson(body);
  if (!request) return;
  // AllocationRequest has no ==: its encoding stands for it.
  const nlohmann::json encoded = api::toJson(*request);
  const auto again = api::allocationRequestFromJson(api::parseBody(api::dumpBody(encoded)).value());
  FUZZ_CHECK(again.has_value() && api::toJson(*again) == encoded);
  // The agent takes no pod address on the plugin's word (issue 29): an accepted request's are
  // ones a pod may have, and it names one whenever it asks for a port.
  if (const auto& forwarding = request->forwarding) {
    for (const auto& address : {forwarding->podV4, forwarding->podV6}) {
      FUZZ_CHECK(!address || !hostport::podAddressProblem(*address));
    }
    const bool asksForPorts = !request->statics.empty() || !request->dynamics.empty();
    FUZZ_CHECK(!asksForPorts || forwarding->podV4 || forwarding->podV6);
  }
  hostport::fuzz::checkLeasePlan(hostport::fuzz::leaseAtOwnNumbers(*request));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto body = api::parseBody(hostport::fuzz::textOf(data, size));
  if (!body) return 0;
  checkAllocationRequest(*body);
  if (const auto request = api::gcRequestFromJson(*body)) {
    checkRoundTrip(*request, api::gcRequestBody, api::gcRequestFromJson);
  }
  if (const auto lease = api::leaseFromJson(*body)) {
    checkRoundTrip(
        *lease, [](const hostport::Lease& value) { return api::toJson(value); },
        api::leaseFromJson);
    hostport::fuzz::checkLeasePlan(*lease);
  }
  if (const auto leases = api::leaseListFromJson(*body, "leases")) {
    checkRoundTrip(
        *leases, [](const auto& value) { return api::leaseListBody("leases", value); },
        [](const nlohmann::json& json) { return api::leaseListFromJson(json, "leases"); });
  }
  if (const auto released = api::releasedFromJson(*body)) {
    checkRoundTrip(*released, api::releasedBody, api::releasedFromJson);
  }
  if (const auto pools = api::poolsFromJson(*body)) {
    checkRoundTrip(*pools, api::poolsBody, api::poolsFromJson);
  }
  return 0;
}
