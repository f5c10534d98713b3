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
 */
import type { CancellationToken, InlineCompletionContext, InlineCompletionItem, InlineCompletionList, Position, ProviderResult, TextDocument } from "vscode";

export const COMPLETIONS_ENABLED_SETTING = "completions.enabled";
/** How often a server without a completion model is asked again (lich.status) while typing. */
export const MODEL_RECHECK_MS = 30_000;

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
  now?(): number;
}

type InlineResult = ProviderResult<InlineCompletionItem[] | InlineCompletionList>;
type Provide = (document: TextDocument, position: Position, context: InlineCompletionContext, token: CancellationToken) => InlineResult;

/** The `provideInlineCompletionItems` middleware: ask the server only when it can answer. */
export function inlineCompletionMiddleware(
  gate: CompletionGate,
): (document: TextDocument, position: Position, context: InlineCompletionContext, token: CancellationToken, next: Provide) => InlineResult {
  let lastRecheck = Number.NEGATIVE_INFINITY;
  return (document, position, context, token, next) => {
    if (!gate.enabled()) {
      return null;
    }
    if (gate.model() === null) {
      const now = gate.now?.() ?? Date.now();
      if (now - lastRecheck >= MODEL_RECHECK_MS) {
        lastRecheck = now;
        gate.recheck();
      }
      return null;
    }
    return next(document, position, context, token);
  };
}
