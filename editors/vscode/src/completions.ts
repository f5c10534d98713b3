/**
 * Ghost text: the language client's inline completion feature (vscode-languageclient 9's
 * proposed `InlineCompletionItemFeature`, registered with `registerProposedFeatures`) declares
 * `textDocument.inlineCompletion` at initialize, so the server answers
 * `textDocument/inlineCompletion` and stops sending the same text as completion items; its
 * provider sends each request with VS Code's cancellation token, so a request VS Code drops (the
 * user typed on) is cancelled with `$/cancelRequest` and the server closes its model stream.
 *
 * The middleware here decides whether to ask at all: not when `lich.completions.enabled` is
 * false, not when the server's `lich.status` says it has no completion model (`completion.model`
 * null; asked again now and then, since the user config may gain one).
 *
 * It also keeps the ghost-text status item honest: a failed completion is an empty answer from
 * the server (it never breaks the editor), so after an empty or failed answer lich.status is read
 * again (at most every FAILURE_RECHECK_MS) for its `completion.last_error`, and after an answer
 * with text while a failure is shown, once more to clear it.
 */
import type { CancellationToken, InlineCompletionContext, InlineCompletionItem, InlineCompletionList, Position, ProviderResult, TextDocument } from "vscode";

export const COMPLETIONS_ENABLED_SETTING = "completions.enabled";
/** How often a server without a completion model is asked again (lich.status) while typing. */
export const MODEL_RECHECK_MS = 30_000;
/** How often an empty or failed answer reads lich.status again for the last failure. */
export const FAILURE_RECHECK_MS = 5_000;

/** `lich.status`'s `completion.model`: a description, null (completions off) or undefined (unknown). */
export function completionModel(status: unknown): string | null | undefined {
  if (!status || typeof status !== "object") {
    return undefined;
  }
  const completion = (status as Record<string, unknown>).completion;
  if (completion === undefined) {
    return undefined; // a server from before completions: let it answer
  }
  if (!completion || typeof completion !== "object") {
    return null;
  }
  const model = (completion as Record<string, unknown>).model;
  return typeof model === "string" && model ? model : null;
}

export interface CompletionGate {
  /** `lich.completions.enabled` (default true). */
  enabled(): boolean;
  /** The server's completion model as last read from lich.status (undefined: not read yet). */
  model(): string | null | undefined;
  /** Read lich.status again (the server's config may have gained a model). */
  recheck(): void;
  /** Whether the status item shows a failed completion (lich.status `completion.last_error`). */
  failing?(): boolean;
  now?(): number;
}

/** Whether an inline completion answer has no text to show (what the server answers on a failure). */
export function emptyAnswer(result: unknown): boolean {
  if (!result) {
    return true;
  }
  const items = Array.isArray(result) ? result : (result as { items?: unknown }).items;
  if (!Array.isArray(items)) {
    return true;
  }
  return !items.some((item) => {
    const insert = (item as { insertText?: unknown } | null)?.insertText;
    const text = typeof insert === "string" ? insert : (insert as { value?: unknown } | undefined)?.value;
    return typeof text === "string" && text.trim() !== "";
  });
}

type InlineResult = ProviderResult<InlineCompletionItem[] | InlineCompletionList>;
type Provide = (document: TextDocument, position: Position, context: InlineCompletionContext, token: CancellationToken) => InlineResult;

/** The `provideInlineCompletionItems` middleware: ask the server only when it can answer. */
export function inlineCompletionMiddleware(
  gate: CompletionGate,
): (document: TextDocument, position: Position, context: InlineCompletionContext, token: CancellationToken, next: Provide) => InlineResult {
  let lastRecheck = Number.NEGATIVE_INFINITY;
  let lastFailureRecheck = Number.NEGATIVE_INFINITY;
  const now = (): number => gate.now?.() ?? Date.now();
  /** After an answer VS Code still wanted: read the last failure again when it may have changed. */
  const answered = (result: unknown, failed: boolean): void => {
    if (failed || emptyAnswer(result)) {
      const at = now();
      if (at - lastFailureRecheck >= FAILURE_RECHECK_MS) {
        lastFailureRecheck = at;
        gate.recheck();
      }
    } else if (gate.failing?.()) {
      gate.recheck(); // a success clears the server's last failure: show that at once
    }
  };
  return (document, position, context, token, next) => {
    if (!gate.enabled()) {
      return null;
    }
    if (gate.model() === null) {
      const at = now();
      if (at - lastRecheck >= MODEL_RECHECK_MS) {
        lastRecheck = at;
        gate.recheck();
      }
      return null;
    }
    return Promise.resolve(next(document, position, context, token)).then(
      (result) => {
        if (!token.isCancellationRequested) {
          answered(result, false);
        }
        return result;
      },
      (err: unknown) => {
        if (!token.isCancellationRequested) {
          answered(undefined, true);
        }
        throw err;
      },
    );
  };
}
