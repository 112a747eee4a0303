#!/usr/bin/env node
// Checks what the rendered install promises about hostport-admission's webhooks
// (daemonset/admission/webhooks.yaml), beyond the schema: each sees pods only, only with a
// hostport.io/ annotation (the CEL matchCondition, read as text: no CEL evaluator offline), never
// from kube-system or hostport-system, fails open within 2 s, has no side effects and speaks
// AdmissionReview v1 to the service path of its own; the mutating ones are reinvoked if needed.
// The claim webhook (/claim, cluster pools) is the one that fails closed: it sees only pods that
// name a cluster pool, and every cluster pool of the shipped agent.yaml is among those it names.
// Prints one line per promise broken and exits 1 if any; "webhooks ok" otherwise.
"use strict";

const fs = require("fs");

function load(file) {
  const { parseAllDocuments } = require("yaml");
  return parseAllDocuments(fs.readFileSync(file, "utf8")).map((doc) => doc.toJS());
}

const expected = {
  MutatingWebhookConfiguration: { path: "/mutate", operations: ["CREATE"] },
  ValidatingWebhookConfiguration: { path: "/validate", operations: ["CREATE", "UPDATE"] },
};

const problems = [];
const objects = load(process.argv[2]);

// The cluster pools of the agents' config, as the ConfigMap carries it.
function clusterPools() {
  const { parse } = require("yaml");
  const pools = [];
  for (const o of objects) {
    const text = o && o.kind === "ConfigMap" && o.data && o.data["agent.yaml"];
    if (!text) continue;
    for (const [name, pool] of Object.entries(parse(text).pools ?? {}))
      if (pool && pool.scope === "cluster") pools.push(name);
  }
  return pools;
}

function checkClaimHook(hook, say) {
  const condition = (hook.matchConditions ?? []).map((c) => c.expression).join(" ");
  const listed = condition.match(/\['hostport\.io\/pool'\] in \[([^\]]*)\]/);
  if (!listed) say("no matchCondition limiting it to pods that name a cluster pool");
  const names = listed ? listed[1].split(",").map((n) => n.trim().replace(/^'|'$/g, "")) : [];
  for (const pool of clusterPools())
    if (!names.includes(pool)) say(`cluster pool ${pool} of agent.yaml is not in its matchCondition`);
  if (hook.failurePolicy !== "Fail") say(`failurePolicy ${hook.failurePolicy} (want Fail)`);
  if (!(hook.timeoutSeconds >= 2 && hook.timeoutSeconds <= 30)) say(`timeoutSeconds ${hook.timeoutSeconds}`);
  if (hook.sideEffects !== "NoneOnDryRun") say(`sideEffects ${hook.sideEffects} (want NoneOnDryRun)`);
  if (hook.reinvocationPolicy !== "IfNeeded") say(`reinvocationPolicy ${hook.reinvocationPolicy}`);
}
for (const [kind, want] of Object.entries(expected)) {
  const found = objects.filter((o) => o && o.kind === kind);
  if (found.length !== 1) {
    problems.push(`${kind}: ${found.length} objects, want 1`);
    continue;
  }
  for (const hook of found[0].webhooks ?? []) {
    const say = (what) => problems.push(`${kind}/${hook.name}: ${what}`);
    const rules = hook.rules ?? [];
    if (rules.length !== 1 || rules[0].resources.join() !== "pods" || rules[0].apiGroups.join() !== "")
      say("must match core pods only");
    const excluded = (hook.namespaceSelector?.matchExpressions ?? []).find(
      (e) => e.key === "kubernetes.io/metadata.name" && e.operator === "NotIn",
    );
    for (const ns of ["kube-system", "hostport-system"])
      if (!excluded || !excluded.values.includes(ns)) say(`namespace ${ns} is not left out`);
    if ((hook.admissionReviewVersions ?? []).join() !== "v1") say("admissionReviewVersions must be [v1]");
    if (kind === "MutatingWebhookConfiguration" && hook.clientConfig?.service?.path === "/claim") {
      if (rules[0] && rules[0].operations.join() !== "CREATE") say(`operations ${rules[0].operations}`);
      checkClaimHook(hook, say);
      continue;
    }
    if (rules[0] && rules[0].operations.join() !== want.operations.join())
      say(`operations ${rules[0].operations} (want ${want.operations})`);
    const condition = (hook.matchConditions ?? []).map((c) => c.expression).join(" ");
    if (!condition.includes("startsWith('hostport.io/')"))
      say("no matchCondition limiting it to pods with a hostport.io/ annotation");
    if (hook.failurePolicy !== "Ignore") say(`failurePolicy ${hook.failurePolicy} (want Ignore)`);
    if (hook.timeoutSeconds !== 2) say(`timeoutSeconds ${hook.timeoutSeconds} (want 2)`);
    if (hook.sideEffects !== "None") say(`sideEffects ${hook.sideEffects} (want None)`);
    if (hook.clientConfig?.service?.path !== want.path) say(`path ${hook.clientConfig?.service?.path}`);
    if (kind === "MutatingWebhookConfiguration" && hook.reinvocationPolicy !== "IfNeeded")
      say(`reinvocationPolicy ${hook.reinvocationPolicy} (want IfNeeded)`);
  }
}
for (const problem of problems) console.log(problem);
if (problems.length > 0) process.exit(1);
console.log("webhooks ok");
