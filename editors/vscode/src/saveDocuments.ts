/**
 * `lich/saveDocuments {uris}`: the server asks us to save exactly these documents after it
 * applied edits, so disk and buffers agree before a process tool runs. Documents that are not
 * open have nothing unsaved and count as saved; nothing else is touched.
 */

export const SAVE_DOCUMENTS_METHOD = "lich/saveDocuments";

export interface SaveDocumentsParams {
  uris?: unknown;
}

export interface SaveDocumentsResult {
  saved: string[];
  failed: { uri: string; reason: string }[];
}

/** The subset of vscode.TextDocument the handler needs. */
export interface SavableDocument {
  uri: { toString(): string };
  isDirty: boolean;
  isClosed?: boolean;
  save(): Thenable<boolean>;
}

/** Normalise a URI string the way vscode.Uri.toString() prints it (percent-encoding differs). */
export type UriNormaliser = (uri: string) => string;

export async function saveDocuments(
  params: SaveDocumentsParams | undefined,
  openDocuments: readonly SavableDocument[],
  normalise: UriNormaliser,
): Promise<SaveDocumentsResult> {
  const result: SaveDocumentsResult = { saved: [], failed: [] };
  const uris = Array.isArray(params?.uris) ? params!.uris : [];
  const byUri = new Map<string, SavableDocument>();
  for (const doc of openDocuments) {
    if (!doc.isClosed) {
      byUri.set(normalise(doc.uri.toString()), doc);
    }
  }
  for (const raw of uris) {
    if (typeof raw !== "string") {
      result.failed.push({ uri: String(raw), reason: "not a URI string" });
      continue;
    }
    let key: string;
    try {
      key = normalise(raw);
    } catch {
      result.failed.push({ uri: raw, reason: "invalid URI" });
      continue;
    }
    const doc = byUri.get(key);
    if (!doc || !doc.isDirty) {
      result.saved.push(raw);
      continue;
    }
    try {
      if (await doc.save()) {
        result.saved.push(raw);
      } else {
        result.failed.push({ uri: raw, reason: "save returned false" });
      }
    } catch (err) {
      result.failed.push({ uri: raw, reason: err instanceof Error ? err.message : String(err) });
    }
  }
  return result;
}

/**
 * A StaticFeature that declares `experimental.lich.saveDocuments: true`, so the server asks us to
 * save instead of writing behind the editor's back.
 */
export class SaveDocumentsCapability {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    const lich = (experimental.lich ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, lich: { ...lich, saveDocuments: true } };
  }

  initialize(): void {
    // Nothing to negotiate: the request handler is registered by the extension.
  }

  getState(): { kind: "static" } {
    return { kind: "static" };
  }

  clear(): void {}
}
