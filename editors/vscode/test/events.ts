/**
 * The shared `lich/event` fixtures (tests/fixtures/events/*.json at the repository root: one run
 * each, as the server sends it) and the schema generated from the server's event dataclasses
 * (docs/lich-event.schema.json). Every fixture is validated on load, so a renamed field fails
 * here first, and the renderer tests read the same files instead of hand-written payloads.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import Ajv2020 from "ajv/dist/2020";
import type { ErrorObject, ValidateFunction } from "ajv";
import type { LichEvent } from "../src/transcript";

export const REPO = path.resolve(__dirname, "..", "..", "..");
export const SCHEMA_FILE = path.join(REPO, "docs", "lich-event.schema.json");
export const FIXTURES_DIR = path.join(REPO, "tests", "fixtures", "events");

let validator: ValidateFunction | undefined;

function validate(): ValidateFunction {
  if (!validator) {
    const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
    validator = ajv.compile(JSON.parse(fs.readFileSync(SCHEMA_FILE, "utf8")));
  }
  return validator;
}

/** Why `event` is not a valid lich/event ([] when it is). */
export function schemaErrors(event: unknown): string[] {
  const check = validate();
  if (check(event)) {
    return [];
  }
  return (check.errors ?? []).map((e: ErrorObject) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`);
}

export function fixtureNames(): string[] {
  return fs
    .readdirSync(FIXTURES_DIR)
    .filter((name) => name.endsWith(".json"))
    .map((name) => name.slice(0, -".json".length))
    .sort();
}

/** The events of one fixture run; throws when one of them does not match the schema. */
export function loadFixture(name: string): LichEvent[] {
  const events = JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, `${name}.json`), "utf8")) as LichEvent[];
  events.forEach((event, index) => {
    const errors = schemaErrors(event);
    if (errors.length > 0) {
      throw new Error(`${name}.json[${index}] (${String(event.type)}) does not match ${SCHEMA_FILE}:\n${errors.join("\n")}`);
    }
  });
  return events;
}
