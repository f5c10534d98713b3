/**
 * Review per hunk in VS Code: CodeLens **Accept** / **Reject** above each pending hunk, and the
 * palette commands "Lich: Accept All" / "Lich: Reject All".
 *
 * The server keeps the hunks and publishes each as a diagnostic (source `lich review`, code = the
 * hunk id, docs/edit-model.md); the lenses are drawn from those diagnostics, so they move and
 * disappear exactly when the server's do, and every button is one server command
 * (`lich.acceptHunk`, `lich.rejectHunk`, `lich.acceptAll`, `lich.rejectAll`). The extension
 * declares `experimental.lich.reviewHunks`, which makes `review_style: "auto"` choose hunks here
 * instead of the refactor preview's batch.
 */
import * as vscode from "vscode";

export const REVIEW_SOURCE = "lich review";
export const ACCEPT_HUNK_COMMAND = "lich.acceptHunk";
export const REJECT_HUNK_COMMAND = "lich.rejectHunk";
export const ACCEPT_ALL_COMMAND = "lich.acceptAll";
export const REJECT_ALL_COMMAND = "lich.rejectAll";
/** The client commands behind the lenses and the palette entries. */
export const REVIEW_COMMANDS = {
  acceptHunk: "lichClient.acceptHunk",
  rejectHunk: "lichClient.rejectHunk",
  acceptAll: "lichClient.acceptAll",
  rejectAll: "lichClient.rejectAll",
} as const;

/** What a diagnostic needs for a lens (vscode.Diagnostic has it; tests pass plain objects). */
export interface HunkDiagnostic {
  source?: string;
  code?: string | number | { value: string | number };
  range: unknown;
  message?: string;
}

export interface LensSpec {
  range: unknown;
  title: string;
  command: string;
  arguments: [{ hunk_id: string }];
  tooltip: string;
}

export interface ReviewAnswer {
  ok?: boolean;
  error?: string;
  accepted?: string[];
  rejected?: string[];
  pending?: number;
}

function hunkId(diagnostic: HunkDiagnostic): string | undefined {
  const code = diagnostic.code;
  const value = typeof code === "object" && code !== null ? code.value : code;
  return value === undefined || value === "" ? undefined : String(value);
}

/** Two lenses (Accept, Reject) per `lich review` diagnostic, in the diagnostics' order. */
export function reviewLenses(diagnostics: readonly HunkDiagnostic[]): LensSpec[] {
  const lenses: LensSpec[] = [];
  for (const diagnostic of diagnostics) {
    if (diagnostic.source !== REVIEW_SOURCE) {
      continue;
    }
    const id = hunkId(diagnostic);
    if (!id) {
      continue;
    }
    const summary = (diagnostic.message ?? "").split("\n")[0];
    lenses.push(
      { range: diagnostic.range, title: "Accept", command: REVIEW_COMMANDS.acceptHunk, arguments: [{ hunk_id: id }], tooltip: summary },
      { range: diagnostic.range, title: "Reject", command: REVIEW_COMMANDS.rejectHunk, arguments: [{ hunk_id: id }], tooltip: summary },
    );
  }
  return lenses;
}

/** The user-facing line for a review command's answer, or undefined when nothing needs saying. */
export function reviewOutcome(command: string, answer: ReviewAnswer | undefined): { level: "info" | "error"; message: string } | undefined {
  if (!answer) {
    return undefined; // the server is not running (already reported)
  }
  if (answer.ok === false) {
    return { level: "error", message: `Lich: ${answer.error ?? "the review command failed"}` };
  }
  if (command === ACCEPT_ALL_COMMAND || command === REJECT_ALL_COMMAND) {
    const done = (command === ACCEPT_ALL_COMMAND ? answer.accepted : answer.rejected) ?? [];
    if (done.length === 0) {
      return { level: "info", message: "Lich: no changes are waiting for review." };
    }
    const verb = command === ACCEPT_ALL_COMMAND ? "accepted" : "rejected";
    return { level: "info", message: `Lich: ${verb} ${done.length} change${done.length === 1 ? "" : "s"}.` };
  }
  return undefined; // one hunk: its lens and diagnostic disappearing say it
}

/** The ids of every pending hunk among all documents' diagnostics, as one comparable string. */
export function reviewHunkIds(entries: readonly (readonly [unknown, readonly HunkDiagnostic[]])[]): string {
  const ids: string[] = [];
  for (const [, diagnostics] of entries) {
    for (const diagnostic of diagnostics) {
      const id = diagnostic.source === REVIEW_SOURCE ? hunkId(diagnostic) : undefined;
      if (id) {
        ids.push(id);
      }
    }
  }
  return ids.sort().join(" ");
}

/** CodeLens over the `lich review` diagnostics of a document. */
export class ReviewCodeLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor() {
    this.subscription = vscode.languages.onDidChangeDiagnostics(() => this.changed.fire());
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const diagnostics = vscode.languages.getDiagnostics(document.uri) as readonly HunkDiagnostic[];
    return reviewLenses(diagnostics).map(
      (lens) =>
        new vscode.CodeLens(lens.range as vscode.Range, {
          title: lens.title,
          command: lens.command,
          arguments: lens.arguments,
          tooltip: lens.tooltip,
        }),
    );
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/** Declares `experimental.lich.reviewHunks: true` (a StaticFeature of vscode-languageclient). */
export class ReviewHunksCapability {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    const lich = (experimental.lich ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, lich: { ...lich, reviewHunks: true } };
  }

  initialize(): void {}

  getState(): { kind: "static" } {
    return { kind: "static" };
  }

  clear(): void {}
}
