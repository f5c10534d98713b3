/**
 * Review mode in the editor: each pending hunk is shown where it lives. The lines it replaces are
 * marked deleted (struck through on the diff editor's "removed" background), and its new lines are
 * drawn after them as decorations on the "inserted" background, so a hunk can be judged without
 * leaving the file; the Accept | Reject CodeLens (./review) stays above it.
 *
 * Which hunks: the server publishes each as a `lich review` diagnostic; for a visible editor that
 * has some, `lich.reviewList {uri}` gives their lines and text (start_line, end_line, old_text,
 * new_text). VS Code has no API for whole lines between a document's lines, so the new lines go
 * beside the old ones: new line i after old line i, the rest after the last old line joined with
 * " ⏎ "; an insertion after the line before it.
 */
import * as vscode from "vscode";
import { REVIEW_SOURCE, type HunkDiagnostic } from "./review";

export const REVIEW_LIST_COMMAND = "lich.reviewList";
/** Between new lines drawn on one editor line. */
export const LINE_JOIN = " ⏎ ";
/** Before the proposed text of a replaced line, and of an insertion. */
export const REPLACED_MARK = "→ ";
export const INSERTED_MARK = "+ ";

/** One entry of lich.reviewList's `hunks` (the fields this module reads). */
export interface ListedHunk {
  hunk_id: string;
  uri: string;
  start_line: number;
  end_line: number;
  old_text: string;
  new_text: string;
}

export interface HunkMarks {
  /** 0-based lines shown as deleted. */
  deleted: number[];
  /** The proposed text drawn after the end of a line. */
  added: { line: number; text: string }[];
}

/** lich.reviewList's hunks, keeping the well-formed ones. */
export function listedHunks(answer: unknown): ListedHunk[] {
  const hunks = answer && typeof answer === "object" ? (answer as { hunks?: unknown }).hunks : undefined;
  if (!Array.isArray(hunks)) {
    return [];
  }
  return hunks.filter((raw): raw is ListedHunk => {
    const h = raw as Record<string, unknown> | null;
    return (
      !!h &&
      typeof h.hunk_id === "string" &&
      typeof h.uri === "string" &&
      Number.isInteger(h.start_line) &&
      Number.isInteger(h.end_line) &&
      typeof h.new_text === "string"
    );
  });
}

function textLines(text: string): string[] {
  if (text === "") {
    return [];
  }
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") {
    lines.pop();
  }
  return lines;
}

/** Leading spaces and tabs as no-break spaces: the indentation of a proposed line stays visible. */
export function keepIndent(line: string): string {
  const indent = /^[ \t]*/.exec(line)?.[0] ?? "";
  return indent.replace(/\t/g, "\u00a0\u00a0\u00a0\u00a0").replace(/ /g, "\u00a0") + line.slice(indent.length);
}

/** Where one hunk's deleted lines and proposed text go in a document of `lineCount` lines. */
export function hunkMarks(hunk: Pick<ListedHunk, "start_line" | "end_line" | "new_text">, lineCount: number): HunkMarks {
  const last = Math.max(0, lineCount - 1);
  const start = Math.max(0, hunk.start_line);
  const end = Math.min(Math.max(start, hunk.end_line), lineCount);
  const proposed = textLines(hunk.new_text).map(keepIndent);
  const deleted: number[] = [];
  for (let line = start; line < end; line++) {
    deleted.push(line);
  }
  const added: HunkMarks["added"] = [];
  if (deleted.length === 0) {
    // An insertion: after the line before it (at the top of the file: on the first line).
    if (proposed.length > 0) {
      const line = hunk.start_line > 0 ? Math.min(hunk.start_line - 1, last) : 0;
      added.push({ line, text: `${INSERTED_MARK}${proposed.join(LINE_JOIN)}` });
    }
    return { deleted, added };
  }
  deleted.forEach((line, index) => {
    const isLast = index === deleted.length - 1;
    const shown = isLast ? proposed.slice(index) : proposed.slice(index, index + 1);
    if (shown.length > 0) {
      added.push({ line, text: `${REPLACED_MARK}${shown.join(LINE_JOIN)}` });
    }
  });
  return { deleted, added };
}

/** Whether a document's diagnostics hold a pending hunk. */
export function hasHunks(diagnostics: readonly HunkDiagnostic[]): boolean {
  return diagnostics.some((diagnostic) => diagnostic.source === REVIEW_SOURCE);
}

/** Draws the pending hunks of the visible editors; `list` is lich.reviewList for one file. */
export class ReviewDecorations implements vscode.Disposable {
  private readonly deletedType = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.removedLineBackground"),
    textDecoration: "line-through",
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly addedType = vscode.window.createTextEditorDecorationType({
    after: {
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"),
      margin: "0 0 0 2em",
    },
  });
  private readonly subscriptions: vscode.Disposable[];
  /** Per document: the refresh whose answer may still be drawn (a later one wins). */
  private readonly generation = new Map<string, number>();

  constructor(private readonly list: (uri: string) => Promise<unknown>) {
    this.subscriptions = [
      // Diagnostics change all the time (every linter, every keystroke): only the visible files
      // whose diagnostics changed are drawn again.
      vscode.languages.onDidChangeDiagnostics((event) => void this.refresh(event.uris.map((uri) => uri.toString()))),
      vscode.window.onDidChangeVisibleTextEditors(() => void this.refresh()),
    ];
  }

  /** Redraw the visible editors (of `uris` only, when given); a file with hunks asks for them again. */
  async refresh(uris?: readonly string[]): Promise<void> {
    const wanted = uris ? new Set(uris) : undefined;
    const editors = vscode.window.visibleTextEditors.filter((editor) => !wanted || wanted.has(editor.document.uri.toString()));
    await Promise.all(editors.map((editor) => this.draw(editor)));
  }

  private async draw(editor: vscode.TextEditor): Promise<void> {
    const uri = editor.document.uri.toString();
    const generation = (this.generation.get(uri) ?? 0) + 1;
    this.generation.set(uri, generation);
    let hunks: ListedHunk[] = [];
    if (hasHunks(vscode.languages.getDiagnostics(editor.document.uri) as readonly HunkDiagnostic[])) {
      try {
        hunks = listedHunks(await this.list(uri));
      } catch {
        hunks = []; // the server is away: its hunks went with it
      }
    }
    if (this.generation.get(uri) !== generation) {
      return; // a newer refresh of this document is under way
    }
    const deleted: vscode.Range[] = [];
    const added: vscode.DecorationOptions[] = [];
    for (const hunk of hunks) {
      const marks = hunkMarks(hunk, editor.document.lineCount);
      for (const line of marks.deleted) {
        const at = new vscode.Position(line, 0);
        deleted.push(new vscode.Range(at, at));
      }
      for (const mark of marks.added) {
        const end = editor.document.lineAt(mark.line).range.end;
        added.push({
          range: new vscode.Range(end, end),
          hoverMessage: "Proposed by the agent: Accept or Reject it with the buttons above the change",
          renderOptions: { after: { contentText: mark.text } },
        });
      }
    }
    editor.setDecorations(this.deletedType, deleted);
    editor.setDecorations(this.addedType, added);
  }

  dispose(): void {
    for (const subscription of this.subscriptions.splice(0)) {
      subscription.dispose();
    }
    this.deletedType.dispose();
    this.addedType.dispose();
  }
}
