#!/usr/bin/env node
// Checks what the rendered install promises about hostport-admission's two webhooks
// (daemonset/admission/webhooks.yaml), beyond the schema: each sees pods only, only with a
// hostport.io/ annotation (the CEL matchCondition, read as text: no CEL evaluator offline), never
// from kube-system or hostport-system, fails open within 2 s, has no side effects and speaks
// AdmissionReview v1 to the service path of its own; the mutating one is reinvoked if needed.
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
    if (rules[0] && rules[0].operations.join() !== want.operations.join())
      say(`operations ${rules[0].operations} (want ${want.operations})`);
    const condition = (hook.matchConditions ?? []).map((c) => c.expression).join(" ");
    if (!condition.includes("startsWith('hostport.io/')"))
      say("no matchCondition limiting it to pods with a hostport.io/ annotation");
    const excluded = (hook.namespaceSelector?.matchExpressions ?? []).find(
      (e) => e.key === "kubernetes.io/metadata.name" && e.operator === "NotIn",
    );
    for (const ns of ["kube-system", "hostport-system"])
      if (!excluded || !excluded.values.includes(ns)) say(`namespace ${ns} is not left out`);
    if (hook.failurePolicy !== "Ignore") say(`failurePolicy ${hook.failurePolicy} (want Ignore)`);
    if (hook.timeoutSeconds !== 2) say(`timeoutSeconds ${hook.timeoutSeconds} (want 2)`);
    if (hook.sideEffects !== "None") say(`sideEffects ${hook.sideEffects} (want None)`);
    if ((hook.admissionReviewVersions ?? []).join() !== "v1") say("admissionReviewVersions must be [v1]");
    if (hook.clientConfig?.service?.path !== want.path) say(`path ${hook.clientConfig?.service?.path}`);
    if (kind === "MutatingWebhookConfiguration" && hook.reinvocationPolicy !== "IfNeeded")
      say(`reinvocationPolicy ${hook.reinvocationPolicy} (want IfNeeded)`);
  }
}
for (const problem of problems) console.log(problem);
if (problems.length > 0) process.exit(1);
console.log("webhooks ok");
