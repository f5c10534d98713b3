/** The diff lines the chat draws for an editing tool call (src/chatDiff.ts). */
import { describe, expect, it } from "vitest";
import { patchDiffs, textDiff, toolDiffs } from "../src/chatDiff";

describe("toolDiffs", () => {
  it("reads a hashline patch per file: where from the anchors, the new text from the ~ lines", () => {
    const patch = ["@@ a.py", "= 2:9f..4:0c", "~x = 1", "~y = 2", "- 7:aa", "+ 9:1b", "~tail", "@@ b/c.py", "<", "~# header", "+", "~# footer", ""].join("\n");
    expect(patchDiffs(patch)).toEqual([
      {
        path: "a.py",
        omitted: 0,
        lines: [
          { kind: "@", text: "lines 2-4 replaced by:" },
          { kind: "+", text: "x = 1" },
          { kind: "+", text: "y = 2" },
          { kind: "@", text: "line 7 deleted" },
          { kind: "@", text: "inserted after line 9:" },
          { kind: "+", text: "tail" },
        ],
      },
      {
        path: "b/c.py",
        omitted: 0,
        lines: [
          { kind: "@", text: "inserted at the beginning:" },
          { kind: "+", text: "# header" },
          { kind: "@", text: "inserted at the end:" },
          { kind: "+", text: "# footer" },
        ],
      },
    ]);
  });

  it("edit_file: old lines then new; write_file: its content; other tools: nothing", () => {
    expect(toolDiffs("edit_file", { path: "a.py", old_string: "a\nb", new_string: "c\n" })).toEqual([
      { path: "a.py", omitted: 0, lines: [{ kind: "-", text: "a" }, { kind: "-", text: "b" }, { kind: "+", text: "c" }] },
    ]);
    expect(toolDiffs("write_file", '{"path": "n.py", "content": "1\\n2\\n"}')[0].lines.map((l) => l.kind + l.text)).toEqual(["+1", "+2"]);
    expect(toolDiffs("read_file", { path: "a.py" })).toEqual([]);
    expect(toolDiffs("write_file", '{"path": "n.py", "content": "cut off')).toEqual([]);
    expect(toolDiffs("apply_patch", { input: "@@ z.py\n+\n~z\n" })[0].path).toBe("z.py");
  });

  it("keeps a long change short and says how much was left out", () => {
    const big = Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n");
    const diff = textDiff("big.py", "", big, 40);
    expect(diff.lines).toHaveLength(40);
    expect(diff.omitted).toBe(10);
  });
});
