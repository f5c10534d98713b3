import type { PatchOrigin } from "../src/patchSource";

const PATCH = "@@ a.py\n= 1:ab..1:ab\n~y = 2\n";

export interface PatchCase {
  selectionText?: string;
  documentText?: string;
  clipboardText?: string;
}

export const patchSourceCases: [string, PatchCase, PatchOrigin | undefined][] = [
  ["selection first", { selectionText: PATCH, documentText: PATCH, clipboardText: PATCH }, "selection"],
  ["active editor when the selection is not a patch", { selectionText: "x = 1", documentText: PATCH, clipboardText: PATCH }, "editor"],
  ["clipboard when the editor holds code", { documentText: "x = 1\n", clipboardText: PATCH }, "clipboard"],
  ["nothing when no candidate is a patch", { documentText: "x = 1\n", clipboardText: "hello" }, undefined],
];
