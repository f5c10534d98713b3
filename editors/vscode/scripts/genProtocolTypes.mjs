// Generates src/protocol.generated.ts from the server's two JSON Schemas: docs/lich-event.schema.json
// (every lich/event) and docs/lich-commands.schema.json (every workspace/executeCommand command's
// params and result). Our own few lines rather than json-schema-to-typescript: the schemas use a
// small subset (objects, $ref, enum/const, anyOf/oneOf, arrays, nullable scalars) and the
// extension takes no new dependency for it.
//
//   node scripts/genProtocolTypes.mjs           writes src/protocol.generated.ts
//   node scripts/genProtocolTypes.mjs --check   exits 1 when the checked-in file is stale
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const docs = join(here, "..", "..", "..", "docs");
const out = join(here, "..", "src", "protocol.generated.ts");

function pascal(name) {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join("");
}

/** The TypeScript name of a $defs entry: an event's wire name (run_start) becomes RunStartEvent. */
function defName(prefix, name) {
  return /^[a-z]/.test(name) ? `${prefix}${pascal(name)}Event` : `${prefix}${name}`;
}

function comment(text, indent) {
  if (!text) return "";
  const safe = String(text).replace(/\*\//g, "*\\/");
  return `${indent}/** ${safe} */\n`;
}

function typeOf(schema, names, indent) {
  if (schema === true || schema === undefined || Object.keys(schema).length === 0 ||
      (Object.keys(schema).length === 1 && schema.description !== undefined)) {
    return "unknown";
  }
  if (schema.$ref) {
    const name = schema.$ref.replace("#/$defs/", "");
    if (!names.has(name)) throw new Error(`unknown $ref ${schema.$ref}`);
    return names.get(name);
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return union.map((part) => typeOf(part, names, indent)).join(" | ");
  if (schema.allOf) return schema.allOf.map((part) => typeOf(part, names, indent)).join(" & ");
  const kinds = Array.isArray(schema.type) ? schema.type : [schema.type];
  return kinds
    .map((kind) => {
      switch (kind) {
        case "string":
          return "string";
        case "integer":
        case "number":
          return "number";
        case "boolean":
          return "boolean";
        case "null":
          return "null";
        case "array":
          return `${wrap(typeOf(schema.items ?? {}, names, indent))}[]`;
        case "object":
          return objectType(schema, names, indent);
        default:
          throw new Error(`no TypeScript for ${JSON.stringify(schema)}`);
      }
    })
    .join(" | ");
}

function wrap(type) {
  return /[|&]/.test(type) ? `(${type})` : type;
}

function objectType(schema, names, indent) {
  const props = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const inner = indent + "  ";
  const lines = Object.entries(props).map(([key, prop]) => {
    const name = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key);
    const optional = required.has(key) ? "" : "?";
    return `${comment(prop.description, inner)}${inner}${name}${optional}: ${typeOf(prop, names, inner)};`;
  });
  const extra = schema.additionalProperties;
  if (extra !== false && (Object.keys(props).length === 0 || (extra && typeof extra === "object"))) {
    const value = extra && typeof extra === "object" ? typeOf(extra, names, inner) : "unknown";
    lines.push(`${inner}[key: string]: ${value};`);
  }
  if (lines.length === 0) return "Record<string, never>";
  return `{\n${lines.join("\n")}\n${indent}}`;
}

function declarations(schema, prefix, names) {
  const parts = [];
  for (const [name, def] of Object.entries(schema.$defs ?? {})) {
    const body = typeOf(def, names, "");
    parts.push(`${comment(def.description, "")}export type ${names.get(name)} = ${body};\n`);
  }
  return parts;
}

function namesFor(schema, prefix, taken) {
  const names = new Map();
  for (const name of Object.keys(schema.$defs ?? {})) {
    const ts = defName(prefix, name);
    if (taken.has(ts)) throw new Error(`two schema types are both ${ts}`);
    taken.add(ts);
    names.set(name, ts);
  }
  return names;
}

export function generate() {
  const events = JSON.parse(readFileSync(join(docs, "lich-event.schema.json"), "utf8"));
  const commands = JSON.parse(readFileSync(join(docs, "lich-commands.schema.json"), "utf8"));
  const taken = new Set();
  const eventNames = namesFor(events, "", taken);
  const commandNames = namesFor(commands, "", taken);
  const described = commands.properties.commands.properties;
  const table = Object.entries(described).map(([name, entry]) => {
    const params = typeOf(entry.properties.params, commandNames, "  ");
    const result = typeOf(entry.properties.result, commandNames, "  ");
    return `  ${JSON.stringify(name)}: { params: ${params}; result: ${result} };`;
  });
  return [
    "// Generated by scripts/genProtocolTypes.mjs from docs/lich-event.schema.json and",
    "// docs/lich-commands.schema.json; do not edit by hand (tests/editors/test_vscode_unit.py checks it).",
    "/* eslint-disable */",
    "",
    `${comment(events.description, "")}export type LichEventPayload = ${typeOf({ oneOf: events.oneOf }, eventNames, "")};`,
    "",
    ...declarations(events, "", eventNames),
    ...declarations(commands, "", commandNames),
    "/** Every workspace/executeCommand command of the server: its one argument and its result. */",
    "export interface LichCommands {",
    ...table,
    "}",
    "",
    "export type LichCommandName = keyof LichCommands;",
    'export type CommandParams<K extends LichCommandName> = LichCommands[K]["params"];',
    'export type CommandResult<K extends LichCommandName> = LichCommands[K]["result"];',
    "",
  ].join("\n");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = generate();
  if (process.argv.includes("--check")) {
    const current = readFileSync(out, "utf8");
    if (current !== text) {
      console.error(`${out} is stale: run node scripts/genProtocolTypes.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(out, text);
    console.log(out);
  }
}
