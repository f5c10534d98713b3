/** Where "Apply Hashline Patch" takes its patch from: selection, then active editor, then clipboard. */

export type PatchOrigin = "selection" | "editor" | "clipboard";

export interface PatchCandidates {
  selectionText?: string;
  documentText?: string;
  /** Read only when neither the selection nor the editor holds a patch: in a browser-hosted
   * VS Code reading the clipboard can ask the user for permission. */
  readClipboard?: () => Thenable<string> | Promise<string>;
}

/** A hashline patch has at least one `@@ PATH` section header in column 1. */
export function looksLikePatch(text: string | undefined): boolean {
  return typeof text === "string" && /^@@ \S/m.test(text);
}

export async function choosePatch(candidates: PatchCandidates): Promise<{ patch: string; origin: PatchOrigin } | undefined> {
  if (looksLikePatch(candidates.selectionText)) {
    return { patch: candidates.selectionText!, origin: "selection" };
  }
  if (looksLikePatch(candidates.documentText)) {
    return { patch: candidates.documentText!, origin: "editor" };
  }
  if (candidates.readClipboard) {
    let clipboard: string | undefined;
    try {
      clipboard = await candidates.readClipboard();
    } catch {
      clipboard = undefined;
    }
    if (looksLikePatch(clipboard)) {
      return { patch: clipboard!, origin: "clipboard" };
    }
  }
  return undefined;
}
