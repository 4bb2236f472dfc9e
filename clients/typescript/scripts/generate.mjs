#!/usr/bin/env node
// Generates src/generated/ from a node's bundled OpenAPI document:
//
//   schema.ts  the types, by openapi-typescript (the version pinned in package.json);
//   spec.ts    what the client needs at run time from the same document: the JSON-RPC methods
//              of each dialect with their params and result types, the error codes with
//              their names, reasons and messages, the header names, the A2A versions, and
//              the paths of the operations the client calls.
//
// Usage: node scripts/generate.mjs --spec FILE_OR_URL [--out DIR]
//   FILE_OR_URL  the bundled document (`synthorg-a2a spec --bundle`, or a node's /openapi.json)
//   DIR          where to write (default src/generated)
//
// The output depends on the document alone, so a regeneration into another folder can be
// compared byte for byte with the committed files (the staleness check in CI does that).

import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import openapiTS, { astToString } from "openapi-typescript";

const HERE = dirname(fileURLToPath(import.meta.url));
const GENERATOR = JSON.parse(
  await readFile(join(HERE, "..", "node_modules", "openapi-typescript", "package.json"), "utf8"),
);

// The two params unions and the dialect (A2A-Version value) each one's methods belong to.
const UNIONS = { RpcParams: "0.3", V1RpcParams: "1.0" };
// The operations the client calls, by operationId.
const OPERATIONS = {
  RPC: "gateway.rpc",
  AGENT_RPC: "gateway.agent_rpc",
  COMPANY_CARD: "handlers.cards.company_card",
  AGENT_CARD: "handlers.cards.agent_card",
};
const HTTP_METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

function fail(message) {
  console.error(`generate: ${message}`);
  process.exit(1);
}

async function load(source) {
  if (/^https?:\/\//i.test(source)) {
    const response = await fetch(source);
    if (!response.ok) fail(`${source}: HTTP ${response.status}`);
    return response.json();
  }
  return JSON.parse(await readFile(resolve(source), "utf8"));
}

/** `MessageSend` -> `MESSAGE_SEND`, `V1SendMessage` -> `V1_SEND_MESSAGE`, as codegen spells it. */
function upperSnake(name) {
  return name
    .replace(/(?<=[a-z0-9])(?=[A-Z])/g, "_")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toUpperCase();
}

function localName(ref) {
  const prefix = "#/components/schemas/";
  if (typeof ref !== "string" || !ref.startsWith(prefix)) fail(`not a bundled schema reference: ${ref}`);
  return ref.slice(prefix.length);
}

function methodsOf(schemas, union) {
  const schema = schemas[union];
  const mapping = schema?.discriminator?.mapping;
  if (!mapping) fail(`${union} has no discriminator mapping`);
  return Object.entries(mapping).map(([method, ref]) => {
    const params = localName(ref);
    if (!params.endsWith("Params")) fail(`${params}: params are named <Name>Params`);
    const result = `${params.slice(0, -"Params".length)}Result`;
    if (!(result in schemas)) fail(`${params}: the spec defines no ${result}`);
    return {
      method,
      constant: upperSnake(params.slice(0, -"Params".length)),
      params,
      result,
      stream: schemas[params]["x-stream"] === true,
      dialect: UNIONS[union],
    };
  });
}

function errorCodes(schemas, name) {
  const schema = schemas[name];
  const codes = schema.enum;
  const names = schema["x-enum-varnames"] ?? [];
  const messages = schema["x-enum-descriptions"] ?? [];
  if (codes.length !== names.length || codes.length !== messages.length) {
    fail(`${name}: every code needs x-enum-varnames and x-enum-descriptions`);
  }
  return codes.map((code, i) => ({ code, name: names[i], reason: upperSnake(names[i]), message: messages[i] }));
}

function operation(document, operationId) {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      if (item[method]?.operationId === operationId) return { path, method };
    }
  }
  fail(`no operation ${operationId}`);
}

function headerParameters(document) {
  const shared = document.components?.parameters ?? {};
  const names = new Set();
  for (const item of Object.values(document.paths)) {
    for (const op of [item, ...HTTP_METHODS.map((m) => item[m]).filter(Boolean)]) {
      for (let parameter of op.parameters ?? []) {
        if (parameter.$ref) parameter = shared[parameter.$ref.split("/").pop()];
        if (parameter.in === "header") names.add(parameter.name);
      }
    }
  }
  // Spelled as codegen spells them: X-A2A-Signature -> A2A_SIGNATURE_HEADER.
  return [...names].map((name) => [`${name.replaceAll("-", "_").toUpperCase().replace(/^X_/, "")}_HEADER`, name]);
}

const q = (value) => JSON.stringify(value);

function renderSpec(document) {
  const schemas = document.components.schemas;
  const methods = Object.keys(UNIONS).flatMap((union) => methodsOf(schemas, union));
  const errors = errorCodes(schemas, "ErrorCode");
  const errorsV1 = errorCodes(schemas, "V1ErrorCode");
  const versions = schemas.A2AVersion.enum;
  for (const dialect of Object.values(UNIONS)) {
    if (!versions.includes(dialect)) fail(`A2AVersion does not list ${dialect}`);
  }
  const out = [];
  out.push(`// GENERATED by scripts/generate.mjs from the bundled OpenAPI document. Do not edit.
// ${document.info.title} ${document.info.version}

import type { components } from "./schema.js";

type Schemas = components["schemas"];

/** The contract these files were generated from (info.version). */
export const SPEC_VERSION = ${q(document.info.version)};

/** The A2A-Version values the node serves; each names a dialect. */
export const A2A_VERSIONS = [${versions.map(q).join(", ")}] as const;
export type Dialect = (typeof A2A_VERSIONS)[number];
`);
  out.push("/** Every JSON-RPC method, by the name codegen gives it. */");
  out.push("export const METHODS = {");
  for (const m of methods) out.push(`  ${m.constant}: ${q(m.method)},`);
  out.push("} as const;\n");
  out.push("/** Each method's params and result (`<Name>Params` answers `<Name>Result`), whether it");
  out.push(" * answers a stream of results, and the dialect it belongs to. */");
  out.push("export interface MethodTable {");
  for (const m of methods) {
    out.push(
      `  ${q(m.method)}: { params: Schemas[${q(m.params)}]; result: Schemas[${q(m.result)}]; ` +
        `stream: ${m.stream}; dialect: ${q(m.dialect)} };`,
    );
  }
  out.push("}\n");
  out.push("/** The methods that answer text/event-stream. */");
  out.push(`export const STREAMING_METHODS: ReadonlySet<string> = new Set([${methods.filter((m) => m.stream).map((m) => q(m.method)).join(", ")}]);\n`);
  const renderErrors = (label, name, list) => {
    out.push(`/** ${label} */`);
    out.push(`export const ${name} = {`);
    for (const e of list) {
      out.push(`  ${e.reason}: { code: ${e.code}, name: ${q(e.name)}, reason: ${q(e.reason)}, message: ${q(e.message)} },`);
    }
    out.push("} as const;\n");
  };
  renderErrors("JSON-RPC error codes (ErrorCode): name, reason (as A2A 1.0's ErrorInfo spells it) and canonical message.", "ERRORS", errors);
  renderErrors("A2A 1.0's meanings of codes ErrorCode gives another meaning (V1ErrorCode), answered in the 1.0 dialect only.", "V1_ERRORS", errorsV1);
  out.push("/** An error's reason: ErrorInfo.reason in 1.0, the code's name in UPPER_SNAKE_CASE otherwise. */");
  out.push("export type ErrorReason =");
  const reasons = [...new Set([...errors, ...errorsV1].map((e) => e.reason))];
  out.push(reasons.map((r) => `  | ${q(r)}`).join("\n") + ";\n");
  out.push("/** Header names the operations declare. */");
  for (const [constant, name] of headerParameters(document)) {
    out.push(`export const ${constant} = ${q(name)};`);
  }
  out.push("");
  out.push("/** The operations the client calls: their path templates. */");
  out.push("export const PATHS = {");
  for (const [constant, operationId] of Object.entries(OPERATIONS)) {
    out.push(`  ${constant}: ${q(operation(document, operationId).path)},`);
  }
  out.push("} as const;");
  return out.join("\n") + "\n";
}

async function main() {
  const { values } = parseArgs({
    options: { spec: { type: "string" }, out: { type: "string", default: join(HERE, "..", "src", "generated") } },
  });
  if (!values.spec) fail("usage: generate.mjs --spec FILE_OR_URL [--out DIR]");
  const document = await load(values.spec);
  if (typeof document.openapi !== "string" || !document.openapi.startsWith("3.1")) {
    fail("not an OpenAPI 3.1 document");
  }
  const ast = await openapiTS(document, { rootTypes: true, rootTypesNoSchemaPrefix: true, silent: true });
  const header =
    `// GENERATED by openapi-typescript ${GENERATOR.version} (scripts/generate.mjs) from the bundled\n` +
    `// OpenAPI document, ${document.info.title} ${document.info.version}. Do not edit.\n\n`;
  await mkdir(values.out, { recursive: true });
  await writeFile(join(values.out, "schema.ts"), header + astToString(ast));
  await writeFile(join(values.out, "spec.ts"), renderSpec(document));
}

await main();
