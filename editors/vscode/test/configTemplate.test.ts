/**
 * "Lich: Open Config"'s template (src/configTemplate.ts) sets nothing as written: with its `//`
 * lines gone it is the empty object, so it narrows and hides none of the user's settings; and each
 * commented example is valid JSON on its own (uncommenting one line gives a working file).
 */
import { describe, expect, it } from "vitest";
import { CONFIG_TEMPLATE } from "../src/configTemplate";

function withoutComments(text: string): string {
  return text
    .split("\n")
    .filter((line) => !line.trim().startsWith("//"))
    .join("\n");
}

describe("the config template", () => {
  it("parses to an empty object: no key is set", () => {
    expect(JSON.parse(withoutComments(CONFIG_TEMPLATE))).toEqual({});
  });

  it("has examples that each make a valid file when uncommented alone", () => {
    const examples = CONFIG_TEMPLATE.split("\n").filter((line) => /^\s*\/\/ "/.test(line));
    expect(examples.length).toBeGreaterThanOrEqual(5);
    for (const example of examples) {
      const entry = example.trim().replace(/^\/\/ /, "");
      expect(() => JSON.parse(`{${entry}}`), entry).not.toThrow();
    }
  });
});
