/**
 * Review mode in the editor (src/reviewDecorations.ts): a pending hunk's old lines are marked
 * deleted and its new lines drawn after them, from lich.reviewList's hunks for the file; a file
 * whose review diagnostics are gone loses its decorations.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { hunkMarks, keepIndent, listedHunks, ReviewDecorations } from "../src/reviewDecorations";
import { mock, window } from "./mocks/vscode";

const NBSP = "\u00a0";

describe("where a hunk's marks go", () => {
  it("a one-line replacement: the old line deleted, the new one after it, indentation kept", () => {
    expect(hunkMarks({ start_line: 1, end_line: 2, new_text: '    return f"Hello, {name}!"\n' }, 5)).toEqual({
      deleted: [1],
      added: [{ line: 1, text: `→ ${NBSP.repeat(4)}return f"Hello, {name}!"` }],
    });
  });

  it("more new lines than old: line by line, the rest after the last old line", () => {
    expect(hunkMarks({ start_line: 2, end_line: 4, new_text: "a\nb\nc\nd\n" }, 10)).toEqual({
      deleted: [2, 3],
      added: [
        { line: 2, text: "→ a" },
        { line: 3, text: "→ b ⏎ c ⏎ d" },
      ],
    });
  });

  it("fewer new lines than old, and a deletion: the extra old lines only deleted", () => {
    expect(hunkMarks({ start_line: 0, end_line: 3, new_text: "x\n" }, 4)).toEqual({ deleted: [0, 1, 2], added: [{ line: 0, text: "→ x" }] });
    expect(hunkMarks({ start_line: 1, end_line: 3, new_text: "" }, 4)).toEqual({ deleted: [1, 2], added: [] });
  });

  it("an insertion: after the line before it, or on the first line at the top", () => {
    expect(hunkMarks({ start_line: 2, end_line: 2, new_text: "import os\nimport re\n" }, 5)).toEqual({ deleted: [], added: [{ line: 1, text: "+ import os ⏎ import re" }] });
    expect(hunkMarks({ start_line: 0, end_line: 0, new_text: "#!/bin/sh\n" }, 5)).toEqual({ deleted: [], added: [{ line: 0, text: "+ #!/bin/sh" }] });
    // At the end of the file (past the last line): after the last line.
    expect(hunkMarks({ start_line: 5, end_line: 5, new_text: "end\n" }, 5)).toEqual({ deleted: [], added: [{ line: 4, text: "+ end" }] });
  });

  it("tabs count as four spaces of indentation; inner spaces stay as they are", () => {
    expect(keepIndent("\tx = 1  # y")).toBe(`${NBSP.repeat(4)}x = 1  # y`);
  });

  it("keeps only well-formed hunks of lich.reviewList", () => {
    const good = { hunk_id: "t1-1", uri: "file:///ws/a.py", start_line: 0, end_line: 1, old_text: "a\n", new_text: "b\n" };
    expect(listedHunks({ hunks: [good, { hunk_id: "t1-2" }, null] })).toEqual([good]);
    expect(listedHunks(undefined)).toEqual([]);
  });
});

function fakeEditor(uri: string, lines: string[]) {
  const set = new Map<unknown, unknown[]>();
  return {
    set,
    document: {
      uri: { toString: () => uri },
      lineCount: lines.length,
      lineAt: (line: number) => ({ range: { end: { line, character: lines[line].length } } }),
    },
    setDecorations: (type: unknown, decorations: unknown[]) => void set.set(type, decorations),
  };
}

describe("the decorations in a visible editor", () => {
  beforeEach(() => mock.reset());

  it("draws the hunks of a file with review diagnostics and clears them when they are decided", async () => {
    const uri = "file:///ws/greet.py";
    const editor = fakeEditor(uri, ["def greet(name):", '    return "Hello, " + name', "", "print(greet('x'))"]);
    const other = fakeEditor("file:///ws/other.py", ["x = 1"]);
    (window as { visibleTextEditors: unknown[] }).visibleTextEditors = [editor, other];
    const asked: string[] = [];
    const hunk = { hunk_id: "t1-1", task_id: "t1", uri, start_line: 1, end_line: 2, old_text: '    return "Hello, " + name\n', new_text: '    return f"Hello, {name}!"\n' };
    const decorations = new ReviewDecorations(async (u) => {
      asked.push(u);
      return { hunks: [hunk] };
    });
    mock.setDiagnostics(uri, [{ source: "lich review", code: "t1-1", range: {}, message: "lich: proposed change" }]);
    await decorations.refresh();
    // Only the file with review diagnostics is asked for.
    expect(asked.every((u) => u === uri)).toBe(true);
    const [deleted, added] = [...editor.set.values()] as [{ start: { line: number } }[], { range: { start: { line: number; character: number } }; renderOptions: { after: { contentText: string } } }[]];
    expect(deleted.map((r) => r.start.line)).toEqual([1]);
    expect(added).toHaveLength(1);
    expect(added[0].range.start).toEqual({ line: 1, character: 27 });
    expect(added[0].renderOptions.after.contentText).toBe(`→ ${NBSP.repeat(4)}return f"Hello, {name}!"`);
    expect([...other.set.values()].every((list) => list.length === 0)).toBe(true);
    // Another file's diagnostics changing (a linter) asks nothing and draws nothing again.
    const asks = asked.length;
    mock.setDiagnostics("file:///ws/lint.py", [{ source: "ruff", range: {} }]);
    expect(asked.length).toBe(asks); // (a draw asks at once, before its first await)
    // The file's own diagnostics changing (the hunk moved as the user typed) asks again.
    mock.setDiagnostics(uri, [{ source: "lich review", code: "t1-1", range: {}, message: "lich: proposed change" }]);
    expect(asked.length).toBe(asks + 1);
    // Accepted: the server drops the diagnostic; the marks go without asking the server again.
    const before = asked.length;
    mock.setDiagnostics(uri, []);
    await decorations.refresh();
    expect(asked.length).toBe(before);
    expect([...editor.set.values()].every((list) => list.length === 0)).toBe(true);
    decorations.dispose();
  });

  it("draws nothing when the server cannot list the hunks", async () => {
    const uri = "file:///ws/a.py";
    const editor = fakeEditor(uri, ["a"]);
    (window as { visibleTextEditors: unknown[] }).visibleTextEditors = [editor];
    mock.setDiagnostics(uri, [{ source: "lich review", code: "t1-1", range: {} }]);
    const decorations = new ReviewDecorations(async () => {
      throw new Error("the language server is not running");
    });
    await decorations.refresh();
    expect([...editor.set.values()].every((list) => list.length === 0)).toBe(true);
    decorations.dispose();
  });
});
