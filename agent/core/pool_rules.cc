#include "agent/core/pool_rules.h"

#include <algorithm>

#include "common/quote.h"

namespace hostport::agent::core {
namespace {

std::string patternsText(const std::vector<std::string>& patterns) {
  std::string out;
  for (const auto& pattern : patterns) out += (out.empty() ? "" : ", ") + pattern;
  return out;
}

std::string podText(const PodIdentity& pod) {
  return quoteText(pod.namespaceName + "/" + pod.name);
}

}  // namespace

std::string_view refusalName(Refusal refusal) {
  switch (refusal) {
    case Refusal::kNamespace:
      return "namespace";
    case Refusal::kNamespaceQuota:
      return "namespace_quota";
    case Refusal::kPodQuota:
      return "pod_quota";
  }
  return "namespace";
}

bool globMatches(std::string_view pattern, std::string_view text) {
  // The classic greedy walk with one backtrack point (the last '*'): linear in practice, and a
  // namespace is at most 63 characters anyway.
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Problem namespacePatternProblem(std::string_view pattern) {
  if (pattern.empty()) return "must not be empty";
  if (pattern.size() > kMaxDnsLabelLength) return "is longer than 63 characters";
  // A glob is a namespace name in which '*' stands for some characters: with each '*' read as a
  // letter it must be a DNS label, so "games-*" and "*-prod" pass and "-*" or "games_*" do not.
  std::string asName(pattern);
  std::ranges::replace(asName, '*', 'a');
  if (isDnsLabel(asName)) return std::nullopt;
  return "must be a namespace name (a DNS label) in which '*' may stand for any characters";
}

Result<void> validatePoolRules(std::string_view pool, const PoolRules& rules) {
  for (const auto& pattern : rules.namespaces) {
    if (const Problem problem = namespacePatternProblem(pattern)) {
      return fail(ErrorCode::kInvalidArgument, "pool " + quoteText(pool) + " namespace " +
                                                   quoteText(pattern) + " " +
                                                   std::string(*problem));
    }
  }
  return {};
}

bool allowsNamespace(const PoolRules& rules, std::string_view namespaceName) {
  if (rules.namespaces.empty()) return true;
  return std::ranges::any_of(rules.namespaces, [&](const std::string& pattern) {
    return globMatches(pattern, namespaceName);
  });
}

std::optional<RuleRefusal> checkRules(const PoolRules& rules, std::string_view pool,
                                      const PodIdentity& pod, uint32_t asked,
                                      const RuleUsage& usage) {
  if (asked == 0) return std::nullopt;
  const std::string poolText = "pool " + quoteText(pool);
  if (!allowsNamespace(rules, pod.namespaceName)) {
    const std::string who = pod.namespaceName.empty() ? std::string("a pod without a namespace")
                                                      : "namespace " + quoteText(pod.namespaceName);
    return RuleRefusal{Refusal::kNamespace,
                       Error{ErrorCode::kNotAllowed,
                             poolText + " does not allow " + who +
                                 " (namespaces: " + patternsText(rules.namespaces) + ")",
                             {}}};
  }
  const auto quota = [&](Refusal reason, uint32_t limit, uint32_t held, const std::string& per,
                         const std::string& whose) {
    return RuleRefusal{
        reason, Error{ErrorCode::kQuotaExceeded,
                      poolText + " allows at most " + std::to_string(limit) + " ports " + per +
                          ": " + whose + " holds " + std::to_string(held) + " and asks for " +
                          std::to_string(asked) + " (maxPortsPer" +
                          (reason == Refusal::kPodQuota ? "Pod" : "Namespace") + ")",
                      {}}};
  };
  if (rules.maxPortsPerPod && uint64_t{usage.podHeld} + asked > *rules.maxPortsPerPod) {
    return quota(Refusal::kPodQuota, *rules.maxPortsPerPod, usage.podHeld, "per pod",
                 "pod " + podText(pod));
  }
  if (rules.maxPortsPerNamespace &&
      uint64_t{usage.namespaceHeld} + asked > *rules.maxPortsPerNamespace) {
    return quota(Refusal::kNamespaceQuota, *rules.maxPortsPerNamespace, usage.namespaceHeld,
                 "per namespace", "namespace " + quoteText(pod.namespaceName));
  }
  return std::nullopt;
}

std::string podQuotaKey(const PodIdentity& pod) {
  if (pod.empty()) return {};
  std::string key = pod.namespaceName;
  key += '\0';
  key += pod.name;
  key += '\0';
  key += pod.uid;
  return key;
}

}  // namespace hostport::agent::core
