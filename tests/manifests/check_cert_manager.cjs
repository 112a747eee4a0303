#!/usr/bin/env node
// Checks that a rendered install runs hostport-admission on cert-manager's certificate
// (daemonset/admission-cert-manager), beyond the schema, which knows no cert-manager objects:
// - a Certificate names the webhook Service as the API server calls it (<service>.<namespace>.svc);
// - both webhook configurations ask cert-manager's CA injector for that Certificate's CA;
// - the server is given the files of that Certificate's Secret (--tls-cert-file, --tls-key-file
//   in a volume of the Secret, readable by the pod's fsGroup) and keeps no Secret of its own;
// - it has no API access left: its Role and ClusterRole grant nothing, and it gets no token;
// - every rendered document is an object with a kind.
// Prints one line per promise broken and exits 1 if any; "cert-manager ok" otherwise.
"use strict";

const fs = require("fs");

function load(file) {
  const { parseAllDocuments } = require("yaml");
  return parseAllDocuments(fs.readFileSync(file, "utf8"))
    .map((doc) => doc.toJS())
    .filter((o) => o);
}

const NAME = "hostport-admission";
const problems = [];
const objects = load(process.argv[2]);
const find = (kind) => objects.filter((o) => o.kind === kind && o.metadata?.name === NAME);

const certificates = objects.filter(
  (o) => o.kind === "Certificate" && String(o.apiVersion).startsWith("cert-manager.io/"),
);
if (certificates.length !== 1) {
  problems.push(`${certificates.length} cert-manager.io Certificates, want 1`);
}
const certificate = certificates[0];
const namespace = certificate?.metadata?.namespace;
const secretName = certificate?.spec?.secretName;

for (const kind of ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]) {
  for (const configuration of find(kind)) {
    const inject = configuration.metadata?.annotations?.["cert-manager.io/inject-ca-from"];
    if (certificate && inject !== `${namespace}/${certificate.metadata.name}`) {
      problems.push(`${kind}: cert-manager.io/inject-ca-from is ${inject} (want ${namespace}/${certificate.metadata.name})`);
    }
    for (const hook of configuration.webhooks ?? []) {
      const service = hook.clientConfig?.service;
      const dnsName = `${service?.name}.${service?.namespace}.svc`;
      if (certificate && !(certificate.spec?.dnsNames ?? []).includes(dnsName)) {
        problems.push(`${kind}/${hook.name}: the Certificate does not name ${dnsName}`);
      }
    }
  }
}

const deployment = find("Deployment")[0];
const pod = deployment?.spec?.template?.spec;
const container = (pod?.containers ?? []).find((c) => c.command?.[0]?.endsWith("/hostport-admission"));
if (!container) {
  problems.push(`Deployment/${NAME}: no container runs hostport-admission`);
} else {
  const flag = (name) =>
    (container.args ?? []).find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const volume = secretName && (pod.volumes ?? []).find((v) => v.secret?.secretName === secretName);
  const mount = volume && (container.volumeMounts ?? []).find((m) => m.name === volume.name);
  if (!mount) problems.push(`Deployment/${NAME}: the Secret ${secretName} is not mounted`);
  for (const [name, file] of [["tls-cert-file", "tls.crt"], ["tls-key-file", "tls.key"]]) {
    if (mount && flag(name) !== `${mount.mountPath}/${file}`) {
      problems.push(`Deployment/${NAME}: --${name} is ${flag(name)} (want ${mount.mountPath}/${file})`);
    }
  }
  if (flag("secret") !== undefined) problems.push(`Deployment/${NAME}: --secret is still given`);
  const mode = volume?.secret?.defaultMode ?? 0o644;
  if ((mode & 0o004) !== 0) problems.push(`Deployment/${NAME}: the key is readable by others (mode ${mode.toString(8)})`);
  if ((mode & 0o040) !== 0 && pod.securityContext?.fsGroup === undefined) {
    problems.push(`Deployment/${NAME}: the files are the group's to read, but the pod has no fsGroup`);
  }
  if (pod.automountServiceAccountToken !== false) problems.push(`Deployment/${NAME}: a token is mounted`);
}
for (const kind of ["Role", "ClusterRole"]) {
  for (const role of find(kind)) {
    if ((role.rules ?? []).length > 0) problems.push(`${kind}/${NAME}: still grants ${role.rules.length} rules`);
  }
}
for (const object of objects) {
  if (!object.kind) problems.push("an object without a kind (an empty document left by a patch?)");
}

for (const problem of problems) console.log(problem);
if (problems.length === 0) console.log("cert-manager ok");
process.exitCode = problems.length === 0 ? 0 : 1;
