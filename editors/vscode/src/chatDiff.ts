/**
 * The change an editing tool call made, as the few diff lines the chat view shows under it:
 * from the call's own arguments (edit_file's old/new strings, write_file's content, a hashline
 * patch's ops and `~` payload lines) and, in review mode, from a pending hunk's old/new text.
 * Pure functions: the view (src/webview/chat.ts) renders what they return.
 */

/** One diff line: `-` removed, `+` added, `@` a location note ("lines 3-4 replaced"). */
export interface DiffLine {
  kind: "-" | "+" | "@";
  text: string;
}

export interface FileDiff {
  /** The file as the tool named it (workspace-relative, usually). */
  path: string;
  lines: DiffLine[];
  /** Lines left out to keep the chat short. */
  omitted: number;
}

/** The tools whose successful calls the chat shows as a diff. */
export const EDIT_TOOLS = new Set(["edit_file", "write_file", "apply_patch"]);
export const DIFF_MAX_LINES = 40;

function linesOf(text: string): string[] {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") {
    lines.pop(); // a final newline ends the last line, it does not start another
  }
  return lines;
}

function capped(path: string, lines: DiffLine[], maxLines: number): FileDiff {
  return lines.length > maxLines ? { path, lines: lines.slice(0, maxLines), omitted: lines.length - maxLines } : { path, lines, omitted: 0 };
}

/** `-` lines for `oldText`, `+` lines for `newText`. */
export function textDiff(path: string, oldText: string, newText: string, maxLines: number = DIFF_MAX_LINES): FileDiff {
  const lines: DiffLine[] = [];
  if (oldText) {
    lines.push(...linesOf(oldText).map((text): DiffLine => ({ kind: "-", text })));
  }
  if (newText) {
    lines.push(...linesOf(newText).map((text): DiffLine => ({ kind: "+", text })));
  }
  return capped(path, lines, maxLines);
}

const ANCHOR = String.raw`(\d+):[0-9A-Fa-f]{2}`;
const RANGE_OP = new RegExp(String.raw`^([-=])\s*${ANCHOR}[^.]*?(?:\.\.\s*${ANCHOR})?`);
const INSERT_OP = new RegExp(String.raw`^([+<])\s*(?:${ANCHOR})?`);

/**
 * A hashline patch (lich_core/hashline/patch.py) per file: its anchors say where (the old lines
 * themselves are not in the patch), its `~` lines are the new text.
 */
export function patchDiffs(patch: string, maxLines: number = DIFF_MAX_LINES): FileDiff[] {
  const files: { path: string; lines: DiffLine[] }[] = [];
  let current: { path: string; lines: DiffLine[] } | undefined;
  for (const raw of patch.split("\n")) {
    const header = /^@@ (\S+)/.exec(raw);
    if (header) {
      current = { path: header[1], lines: [] };
      files.push(current);
      continue;
    }
    if (!current) {
      continue;
    }
    if (raw.startsWith("~")) {
      current.lines.push({ kind: "+", text: raw.slice(1) });
      continue;
    }
    const range = RANGE_OP.exec(raw);
    if (range) {
      const first = Number(range[2]);
      const last = range[3] !== undefined ? Number(range[3]) : first;
      const where = first === last ? `line ${first}` : `lines ${first}-${last}`;
      current.lines.push({ kind: "@", text: range[1] === "-" ? `${where} deleted` : `${where} replaced by:` });
      continue;
    }
    const insert = INSERT_OP.exec(raw);
    if (insert) {
      const line = insert[2];
      const where =
        insert[1] === "+" ? (line ? `after line ${line}` : "at the end") : line ? `before line ${line}` : "at the beginning";
      current.lines.push({ kind: "@", text: `inserted ${where}:` });
    }
  }
  return files.map((file) => capped(file.path, file.lines, maxLines));
}

function parseArguments(args: unknown): Record<string, unknown> | undefined {
  if (typeof args === "string") {
    try {
      return parseArguments(JSON.parse(args));
    } catch {
      return undefined; // cut to 300 characters by lich.thread: not enough for a diff
    }
  }
  return args && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : undefined;
}

/** The diffs of one editing tool call from its arguments; [] for other tools or unreadable ones. */
export function toolDiffs(name: string, args: unknown, maxLines: number = DIFF_MAX_LINES): FileDiff[] {
  if (!EDIT_TOOLS.has(name)) {
    return [];
  }
  const record = parseArguments(args);
  if (!record) {
    return [];
  }
  const str = (key: string): string | undefined => (typeof record[key] === "string" ? (record[key] as string) : undefined);
  const path = str("path");
  if (name === "edit_file" && path && str("old_string") !== undefined && str("new_string") !== undefined) {
    return [textDiff(path, str("old_string")!, str("new_string")!, maxLines)];
  }
  if (name === "write_file" && path && str("content") !== undefined) {
    return [textDiff(path, "", str("content")!, maxLines)];
  }
  if (name === "apply_patch") {
    const patch = str("input") ?? str("patch") ?? str("text");
    return patch ? patchDiffs(patch, maxLines) : [];
  }
  return [];
}
