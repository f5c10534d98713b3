/**
 * Which links in the chat the extension follows. The model's text is untrusted, and so is every
 * link target in it: the chat view (a webview) only reports the raw target of a clicked link, and
 * the extension host decides here, with the file system at hand.
 *
 * - `http:` / `https:` URLs open outside VS Code through `vscode.env.openExternal` (which asks
 *   before it opens a site the user has not trusted).
 * - A path or a `file:` URI opens in the editor only when it names a regular file inside one of the
 *   workspace folders, after resolving `..` and every symbolic link: a relative path is resolved
 *   against the workspace folder(s), an absolute path or `file:` URI must already lie inside one.
 * - Everything else is refused: other schemes (`command:`, `vscode:`, `javascript:`, `data:`,
 *   `mailto:`, ...), `file:` URIs naming another host, paths leaving the workspace, missing files,
 *   folders. The caller says so to the user; nothing is opened.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

export type LinkDecision =
  /** Open outside VS Code (a web page). */
  | { kind: "external"; url: string }
  /** Open in the editor: the file's real path (symbolic links resolved), at a 0-based line. */
  | { kind: "file"; path: string; line?: number }
  /** Not opened; `reason` finishes the sentence "… was not opened: <reason>". */
  | { kind: "refused"; reason: string };

export interface LinkFs {
  realpath(p: string): Promise<string>;
  stat(p: string): Promise<{ isFile(): boolean; isDirectory(): boolean }>;
}

const NODE_FS: LinkFs = { realpath: (p) => fs.promises.realpath(p), stat: (p) => fs.promises.stat(p) };

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
const WINDOWS_DRIVE = /^[a-zA-Z]:[\\/]/;
// Control characters (NUL, newlines, bidi overrides ...) have no place in a link target.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/;
const LINE_FRAGMENT = /^L(\d+)(?:-L?\d+)?$/;

/** Whether `child` lies strictly inside `parent` (both absolute and normalised). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/** `#L12` (also `#L12-L20`) as a 0-based line; other fragments are ignored. */
function fragmentLine(fragment: string): number | undefined {
  const match = LINE_FRAGMENT.exec(fragment);
  if (!match) {
    return undefined;
  }
  const line = Number(match[1]);
  return Number.isSafeInteger(line) && line >= 1 ? line - 1 : undefined;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Decide what a clicked link in the chat opens. `roots` are the workspace folders' file system
 * paths (the first one is the server's root); with none, no file opens.
 */
export async function resolveChatLink(href: string, roots: readonly string[], files: LinkFs = NODE_FS): Promise<LinkDecision> {
  const text = href.trim();
  if (!text) {
    return { kind: "refused", reason: "the link is empty" };
  }
  if (CONTROL.test(text)) {
    return { kind: "refused", reason: "the link contains control characters" };
  }
  const scheme = process.platform === "win32" && WINDOWS_DRIVE.test(text) ? undefined : SCHEME.exec(text)?.[1].toLowerCase();
  let target: string;
  let line: number | undefined;
  if (scheme === "http" || scheme === "https") {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return { kind: "refused", reason: "it is not a valid web address" };
    }
    if (!url.hostname || !/^https?:\/\/[^/\\]/i.test(text)) {
      return { kind: "refused", reason: "it is not a valid web address" };
    }
    return { kind: "external", url: url.href };
  } else if (scheme === "file") {
    let url: URL;
    try {
      url = new URL(text);
      if (url.hostname && url.hostname !== "localhost") {
        return { kind: "refused", reason: `it names a file on another machine (${url.hostname})` };
      }
      target = fileURLToPath(url);
    } catch {
      return { kind: "refused", reason: "it is not a valid file URI" };
    }
    line = fragmentLine(url.hash.slice(1));
  } else if (scheme !== undefined) {
    return { kind: "refused", reason: `links with the scheme "${scheme}:" are never opened from the chat (only web pages and workspace files)` };
  } else {
    const hash = text.indexOf("#");
    const rawPath = hash >= 0 ? text.slice(0, hash) : text;
    line = hash >= 0 ? fragmentLine(text.slice(hash + 1)) : undefined;
    target = decoded(rawPath);
    if (!target) {
      return { kind: "refused", reason: "it points into the answer, not at a file" };
    }
  }
  if (target.includes("\0") || CONTROL.test(target)) {
    return { kind: "refused", reason: "the path contains control characters" };
  }
  if (roots.length === 0) {
    return { kind: "refused", reason: "no workspace folder is open, and only workspace files open from the chat" };
  }
  const absolute = path.isAbsolute(target);
  let lastRefusal = "there is no such file in the workspace";
  for (const root of roots) {
    const base = path.resolve(root);
    const lexical = absolute ? path.normalize(target) : path.resolve(base, target);
    if (!isInside(base, lexical)) {
      // Outside this folder; with several folders another may hold it (absolute paths) — a
      // relative path that climbs out of the folder it is resolved against is refused outright.
      if (!absolute) {
        return { kind: "refused", reason: "it leads out of the workspace folder" };
      }
      lastRefusal = "it is outside the workspace folders";
      continue;
    }
    let real: string;
    let realBase: string;
    try {
      realBase = await files.realpath(base);
      real = await files.realpath(lexical);
    } catch {
      lastRefusal = "there is no such file in the workspace";
      continue;
    }
    if (!isInside(realBase, real)) {
      return { kind: "refused", reason: "it goes through a symbolic link that leads out of the workspace" };
    }
    let stat: { isFile(): boolean; isDirectory(): boolean };
    try {
      stat = await files.stat(real);
    } catch {
      lastRefusal = "there is no such file in the workspace";
      continue;
    }
    if (!stat.isFile()) {
      return { kind: "refused", reason: stat.isDirectory() ? "it is a folder, not a file" : "it is not a regular file" };
    }
    return line !== undefined ? { kind: "file", path: real, line } : { kind: "file", path: real };
  }
  return { kind: "refused", reason: lastRefusal };
}
