// An AdmissionReview body as the admission server receives it (admission/admission_review.h),
// through both webhooks' decisions against two pools. Invariants: a decoded review is answered
// with its uid, in JSON that parses; the mutating webhook never refuses, its patch applies to the
// object it was made for, and a second pass over the patched pod (reinvocationPolicy IfNeeded)
// adds nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "admission/admission_review.h"
#include "admission/pod_mutation.h"
#include "admission/pod_validation.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace admission = hostport::admission;
namespace core = hostport::agent::core;
using nlohmann::json;

const core::Allocator& pools() {
  static const core::Allocator allocator = [] {
    std::vector<core::PoolSpec> specs{
        {"default", {{40000, 40999}}, {}, core::Strategy::kLowest, 0, {}},
        {"games",
         {{30000, 30999}},
         {hostport::PortProtocol::kUdp},
         core::Strategy::kLowest,
         0,
         core::PoolRules{{"games-*"}, {}, 16}}};
    return std::move(*core::Allocator::create(std::move(specs), [] { return uint64_t{0}; }));
  }();
  return allocator;
}

void checkAnswer(const admission::AdmissionRequest& request,
                 const admission::AdmissionResponse& response) {
  FUZZ_CHECK(response.uid == request.uid);
  const json answer = json::parse(admission::encodeAdmissionReview(response), nullptr, false);
  FUZZ_CHECK(!answer.is_discarded());
  FUZZ_CHECK(answer["response"]["uid"] == request.uid);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto request = admission::decodeAdmissionReview(hostport::fuzz::textOf(data, size));
  if (!request) return 0;
  checkAnswer(*request, admission::validatePod(*request, pools()));
  const auto mutated = admission::mutatePod(*request, pools());
  checkAnswer(*request, mutated);
  FUZZ_CHECK(mutated.allowed);
  if (mutated.patch.empty()) return 0;
  json patched;
  try {
    patched = request->object.patch(mutated.patch);
  } catch (const json::exception& e) {
    hostport::fuzz::fail(e.what(), __FILE__, __LINE__);
  }
  auto again = *request;
  again.object = std::move(patched);
  FUZZ_CHECK(admission::mutatePod(again, pools()).patch.empty());
  return 0;
}
