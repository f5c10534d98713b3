/** Where "Apply Hashline Patch" takes its patch from: selection, then active editor, then clipboard. */

export type PatchOrigin = "selection" | "editor" | "clipboard";

export interface PatchCandidates {
  selectionText?: string;
  documentText?: string;
  clipboardText?: string;
}

/** A hashline patch has at least one `@@ PATH` section header in column 1. */
export function looksLikePatch(text: string | undefined): boolean {
  return typeof text === "string" && /^@@ \S/m.test(text);
}

export function choosePatch(candidates: PatchCandidates): { patch: string; origin: PatchOrigin } | undefined {
  if (looksLikePatch(candidates.selectionText)) {
    return { patch: candidates.selectionText!, origin: "selection" };
  }
  if (looksLikePatch(candidates.documentText)) {
    return { patch: candidates.documentText!, origin: "editor" };
  }
  if (looksLikePatch(candidates.clipboardText)) {
    return { patch: candidates.clipboardText!, origin: "clipboard" };
  }
  return undefined;
}
