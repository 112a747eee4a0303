#!/usr/bin/env node
// Checks every Kubernetes object in the given YAML files (multi-document, as `kubectl kustomize`
// prints them) against the Kubernetes OpenAPI schema of its apiVersion and kind, offline: the
// schemas ship inside the npm package kubernetes-models (installed here by scripts/setup.sh,
// `npm ci`). Prints one line per object; exits 1 when any object is invalid, has no schema, or
// no object was found at all, so a broken manifest fails the ctest that runs this.
// `--unchecked-group GROUP` (repeatable) names an API group with no schema offline (cert-manager.io):
// its objects are listed as unchecked, not invalid, and counted apart.
//
// What the schemas catch: missing required fields, wrong types, values outside an enum (a
// hostPath type, a protocol, a capability list that is not a list). What they do not: unknown
// fields (the Kubernetes schemas allow extra properties; the API server only warns about them).
"use strict";

const fs = require("fs");
const path = require("path");

function loadDependencies() {
  try {
    return { YAML: require("yaml") };
  } catch (error) {
    console.error(
      `validate.cjs: ${error.message.split("\n")[0]}; run scripts/setup.sh (npm ci in ${__dirname})`,
    );
    process.exit(2);
  }
}

// "apps/v1" + "DaemonSet" -> "kubernetes-models/apps/v1/DaemonSet"; the core group is "v1".
function modelPath(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  if (!/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion)) return null;
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) return null;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

function modelFor(apiVersion, kind) {
  const modulePath = modelPath(apiVersion, kind);
  if (modulePath === null) return null;
  try {
    return require(modulePath)[kind] ?? null;
  } catch {
    return null;
  }
}

function describe(object) {
  const name = object?.metadata?.name ?? "(no name)";
  return `${object?.kind ?? "(no kind)"}/${name}`;
}

/// The problems of one object: an empty list when it is valid.
function problemsOf(object) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) {
    return ["is not a mapping"];
  }
  const Model = modelFor(object.apiVersion, object.kind);
  if (Model === null) {
    return [`no schema for apiVersion ${JSON.stringify(object.apiVersion)} kind ${JSON.stringify(object.kind)}`];
  }
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [error.message];
  }
}

/// The API group of an apiVersion: "cert-manager.io/v1" -> "cert-manager.io", "v1" -> "".
function groupOf(apiVersion) {
  return typeof apiVersion === "string" && apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
}

function main(args) {
  const { YAML } = loadDependencies();
  const uncheckedGroups = new Set();
  const files = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--unchecked-group" && i + 1 < args.length) {
      uncheckedGroups.add(args[++i]);
    } else {
      files.push(args[i]);
    }
  }
  if (files.length === 0) {
    console.error("usage: validate.cjs [--unchecked-group GROUP]... FILE.yaml...");
    return 2;
  }
  let objects = 0;
  let invalid = 0;
  let unchecked = 0;
  for (const file of files) {
    const documents = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
    for (const document of documents) {
      if (document.errors.length > 0) {
        console.log(`invalid ${file}: not YAML: ${document.errors[0].message}`);
        invalid++;
        continue;
      }
      const object = document.toJS();
      if (object === null) continue;  // an empty document ("---" at the end)
      objects++;
      if (uncheckedGroups.has(groupOf(object?.apiVersion))) {
        unchecked++;
        console.log(`unchecked ${path.basename(file)}: ${describe(object)}: no schema offline for ${groupOf(object.apiVersion)}`);
        continue;
      }
      const problems = problemsOf(object);
      if (problems.length === 0) {
        console.log(`ok ${path.basename(file)}: ${describe(object)}`);
      } else {
        invalid++;
        console.log(`invalid ${path.basename(file)}: ${describe(object)}: ${problems.join("; ")}`);
      }
    }
  }
  console.log(`${objects} objects, ${invalid} invalid${unchecked > 0 ? `, ${unchecked} unchecked` : ""}`);
  if (objects === 0) {
    console.log("no Kubernetes object found");
    return 1;
  }
  return invalid === 0 ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
