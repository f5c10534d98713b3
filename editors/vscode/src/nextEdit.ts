/**
 * Next edit suggestions (issue #47): after the user edits a document, the client asks the lich
 * server's `textDocument/copilotInlineEdit` (Copilot's shape: params `{textDocument: {uri,
 * version}, position}`, result `{edits: [{range, text, textDocument: {uri, version}, command?}]}`)
 * for the edits the user is about to make, near the cursor or away from it.
 *
 * A suggestion that inserts at the cursor shows as ghost text there; one elsewhere shows as an
 * inline diff at its place (the text it replaces struck through, the text it inserts after it,
 * a gutter marker). Tab jumps to the suggestion, Tab again accepts it; Escape dismisses. The
 * keybindings are scoped by the `lichClient.nextEditVisible` context key, so Tab and Escape keep their
 * usual meaning whenever nothing is shown.
 *
 * Requests wait for a pause in typing (`lich.nextEdit.debounceMs`), and each new one cancels the
 * one before (`$/cancelRequest`: the server closes its model stream). An answer for an older
 * version of the document than the one in the editor is dropped, and any change to the document
 * clears what is shown (its ranges are for the text as it was). Nothing is asked while
 * `lich.nextEdit.enabled` is false or the server has no next-edit model (lich.status
 * `next_edit.model`).
 *
 * The controller and the planning functions know no `vscode` API (tested with a fake host); the
 * `VscodeNextEditView` at the end draws with editor decorations.
 */
import * as vscode from "vscode";

export const NEXT_EDIT_METHOD = "textDocument/copilotInlineEdit";
export const NEXT_EDIT_CONTEXT = "lichClient.nextEditVisible";
export const NEXT_EDIT_COMMANDS = {
  acceptOrJump: "lichClient.nextEdit.acceptOrJump",
  dismiss: "lichClient.nextEdit.dismiss",
} as const;
export const NEXT_EDIT_ENABLED_SETTING = "nextEdit.enabled";
export const NEXT_EDIT_DEBOUNCE_SETTING = "nextEdit.debounceMs";
export const DEFAULT_DEBOUNCE_MS = 75;
/** How often a server without a next-edit model is asked again (lich.status) while typing. */
export const MODEL_RECHECK_MS = 30_000;

export interface Pos {
  line: number;
  character: number;
}
export interface Span {
  start: Pos;
  end: Pos;
}
/** One edit of an answer, in LSP positions (UTF-16, as VS Code's). */
export interface Suggestion {
  range: Span;
  text: string;
}
export interface NextEditParams {
  textDocument: { uri: string; version: number };
  position: Pos;
}

/** `lich.status`'s `next_edit.model`: a description, null (off) or undefined (not known). */
export function nextEditModel(status: unknown): string | null | undefined {
  if (!status || typeof status !== "object") {
    return undefined;
  }
  const nextEdit = (status as Record<string, unknown>).next_edit;
  if (nextEdit === undefined) {
    return null; // a server from before next edits answers nothing: do not ask it
  }
  if (!nextEdit || typeof nextEdit !== "object") {
    return null;
  }
  const model = (nextEdit as Record<string, unknown>).model;
  return typeof model === "string" && model ? model : null;
}

function isPos(value: unknown): value is Pos {
  const p = value as Pos | undefined;
  return !!p && Number.isInteger(p.line) && Number.isInteger(p.character) && p.line >= 0 && p.character >= 0;
}

export function comparePos(a: Pos, b: Pos): number {
  return a.line !== b.line ? a.line - b.line : a.character - b.character;
}

/**
 * The edits of an answer that apply to `uri` at `version`, in document order. An edit for
 * another document or another version, or of the wrong shape, is left out; so is all of an
 * answer that is not `{edits: [...]}`.
 */
export function parseEdits(result: unknown, uri: string, version: number): Suggestion[] {
  const edits = result && typeof result === "object" ? (result as { edits?: unknown }).edits : undefined;
  if (!Array.isArray(edits)) {
    return [];
  }
  const found: Suggestion[] = [];
  for (const edit of edits as Record<string, unknown>[]) {
    const range = edit?.range as Span | undefined;
    const doc = edit?.textDocument as { uri?: unknown; version?: unknown } | undefined;
    if (!range || !isPos(range.start) || !isPos(range.end) || comparePos(range.start, range.end) > 0 || typeof edit.text !== "string") {
      continue;
    }
    if (doc && ((doc.uri !== undefined && doc.uri !== uri) || (typeof doc.version === "number" && doc.version !== version))) {
      continue;
    }
    found.push({ range: { start: range.start, end: range.end }, text: edit.text });
  }
  return found.sort((a, b) => comparePos(a.range.start, b.range.start));
}

/** Whether `suggestion` only inserts text right at `cursor` (shown as ghost text). */
export function isAtCursor(suggestion: Suggestion, cursor: Pos): boolean {
  return comparePos(suggestion.range.start, suggestion.range.end) === 0 && comparePos(suggestion.range.start, cursor) === 0;
}

/** Whether `cursor` lies on the suggestion's range (its ends included). */
export function isOn(suggestion: Suggestion, cursor: Pos): boolean {
  return comparePos(suggestion.range.start, cursor) <= 0 && comparePos(cursor, suggestion.range.end) <= 0;
}

/** The suggestion Tab goes to: the first that ends at or after the cursor, else the first. */
export function targetIndex(suggestions: Suggestion[], cursor: Pos): number {
  const index = suggestions.findIndex((s) => comparePos(s.range.end, cursor) >= 0);
  return index < 0 ? 0 : index;
}

export type TabAction = { kind: "jump"; index: number; to: Pos } | { kind: "accept"; index: number };

/** What Tab does: accept the target when the cursor is on it, else jump to its start. */
export function tabAction(suggestions: Suggestion[], cursor: Pos): TabAction | undefined {
  if (suggestions.length === 0) {
    return undefined;
  }
  const index = targetIndex(suggestions, cursor);
  const target = suggestions[index];
  return isOn(target, cursor) ? { kind: "accept", index } : { kind: "jump", index, to: target.range.start };
}

/** A cancellable request token, as vscode.CancellationTokenSource makes them. */
export interface TokenSource {
  token: unknown;
  cancel(): void;
}

/** What the controller needs from VS Code and the language client. */
export interface NextEditHost {
  /** `lich.nextEdit.enabled` (default true). */
  enabled(): boolean;
  /** The server's next-edit model as last read from lich.status (undefined: not read yet). */
  model(): string | null | undefined;
  /** Read lich.status again (the server's config may have gained a model). */
  recheck(): void;
  debounceMs(): number;
  /** The cursor in `uri`'s editor when it is the active one; undefined otherwise. */
  cursor(uri: string): Pos | undefined;
  /** The document's version in the editor now (undefined: not open). */
  version(uri: string): number | undefined;
  /** Send the request (the language client's sendRequest with the token). */
  request(params: NextEditParams, token: unknown): Promise<unknown>;
  tokenSource(): TokenSource;
  /** Draw `suggestions` in `uri`'s editors (replacing what was drawn); an empty list clears. */
  draw(uri: string, suggestions: Suggestion[], cursor: Pos): void;
  setVisible(visible: boolean): void;
  moveCursor(uri: string, to: Pos): void;
  /** Apply one suggestion to `uri` at `version`; false when the editor refused it. */
  apply(uri: string, version: number, suggestion: Suggestion): Promise<boolean>;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
  now?(): number;
  log?(message: string): void;
}

interface Shown {
  uri: string;
  version: number;
  suggestions: Suggestion[];
}

export class NextEditController {
  private timer: unknown;
  private inFlight: TokenSource | undefined;
  private shown: Shown | undefined;
  private lastRecheck = Number.NEGATIVE_INFINITY;
  /** A document edited before lich.status answered: asked about once the model is known. */
  private askWhenKnown: string | undefined;
  /** Counters for the tests and the curious: requests sent, answers shown, edits accepted. */
  readonly stats = { requests: 0, shown: 0, accepted: 0 };

  constructor(private readonly host: NextEditHost) {}

  /** The suggestions shown now (undefined: none). */
  current(): Readonly<Shown> | undefined {
    return this.shown;
  }

  /** A document changed (the language client's didChange): clear, then ask after a pause. */
  onDidChange(uri: string): void {
    if (this.shown?.uri === uri) {
      this.clear();
    }
    this.cancel();
    if (!this.host.enabled()) {
      return;
    }
    if (this.host.model() === null) {
      const now = this.host.now?.() ?? Date.now();
      if (now - this.lastRecheck >= MODEL_RECHECK_MS) {
        this.lastRecheck = now;
        this.host.recheck();
      }
      return;
    }
    this.timer = this.host.setTimer(() => {
      this.timer = undefined;
      void this.requestNow(uri);
    }, Math.max(0, this.host.debounceMs()));
  }

  /** Ask now for `uri` at its editor's cursor; resolves once the answer is handled. */
  async requestNow(uri: string): Promise<void> {
    this.cancel();
    const cursor = this.host.cursor(uri);
    const version = this.host.version(uri);
    if (this.host.model() === undefined) {
      this.askWhenKnown = uri;
    }
    if (!cursor || version === undefined || !this.host.enabled() || !this.host.model()) {
      return;
    }
    const source = this.host.tokenSource();
    this.inFlight = source;
    this.stats.requests += 1;
    let result: unknown;
    try {
      result = await this.host.request({ textDocument: { uri, version }, position: cursor }, source.token);
    } catch (err) {
      if (this.inFlight === source) {
        this.inFlight = undefined;
        this.host.log?.(`next edit request failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      return;
    }
    // Superseded (a newer request, a change, a dismiss) meanwhile: drop the answer.
    if (this.inFlight !== source) {
      return;
    }
    this.inFlight = undefined;
    if (this.host.version(uri) !== version) {
      return;
    }
    const now = this.host.cursor(uri);
    const suggestions = parseEdits(result, uri, version);
    if (!now || suggestions.length === 0) {
      return;
    }
    this.shown = { uri, version, suggestions };
    this.stats.shown += 1;
    this.host.draw(uri, suggestions, now);
    this.host.setVisible(true);
  }

  /** lich.status answered: an edit made before it is asked about now (when there is a model). */
  onModelKnown(): void {
    const uri = this.askWhenKnown;
    this.askWhenKnown = undefined;
    if (uri && this.host.model() && !this.shown) {
      void this.requestNow(uri);
    }
  }

  /** Tab: jump to the suggestion, or accept it when the cursor is on it. False: none shown here. */
  async acceptOrJump(): Promise<boolean> {
    const shown = this.shown;
    const cursor = shown && this.host.cursor(shown.uri);
    if (!shown || !cursor || this.host.version(shown.uri) !== shown.version) {
      this.clear();
      return false;
    }
    const action = tabAction(shown.suggestions, cursor);
    if (!action) {
      return false;
    }
    if (action.kind === "jump") {
      this.host.moveCursor(shown.uri, action.to);
      return true;
    }
    const suggestion = shown.suggestions[action.index];
    // The change this makes clears what is shown and asks again (onDidChange): the server
    // answers the rest for the new text.
    this.clear();
    const applied = await this.host.apply(shown.uri, shown.version, suggestion);
    if (applied) {
      this.stats.accepted += 1;
      // To the end of the accepted text, unless the user moved on while the edit was applied
      // (the cursor elsewhere, or text typed): their cursor is theirs.
      const now = this.host.cursor(shown.uri);
      const untouched = now !== undefined && (samePos(now, suggestion.range.start) || samePos(now, endOf(suggestion)));
      if (untouched && this.host.version(shown.uri) === shown.version + 1) {
        this.host.moveCursor(shown.uri, endOf(suggestion));
      }
    }
    return applied;
  }

  /** Escape: drop what is shown and the request in flight. */
  dismiss(): void {
    this.cancel();
    this.clear();
  }

  dispose(): void {
    this.dismiss();
  }

  private cancel(): void {
    if (this.timer !== undefined) {
      this.host.clearTimer(this.timer);
      this.timer = undefined;
    }
    const source = this.inFlight;
    this.inFlight = undefined;
    source?.cancel();
  }

  private clear(): void {
    const shown = this.shown;
    this.shown = undefined;
    if (shown) {
      this.host.draw(shown.uri, [], { line: 0, character: 0 });
      this.host.setVisible(false);
    }
  }
}

function samePos(a: Pos, b: Pos): boolean {
  return a.line === b.line && a.character === b.character;
}

/** Where the cursor goes after accepting: the end of the inserted text. */
export function endOf(suggestion: Suggestion): Pos {
  const lines = suggestion.text.split(/\r\n|\n/);
  const start = suggestion.range.start;
  if (lines.length === 1) {
    return { line: start.line, character: start.character + lines[0].length };
  }
  return { line: start.line + lines.length - 1, character: lines[lines.length - 1].length };
}

/**
 * The decorations of one drawing: `ghost` for insertions at the cursor (ghost text after it),
 * `deleted` for the text a suggestion replaces, `inserted` for what it inserts (after the
 * replaced text), `gutter` for the marker on the suggestion's first line.
 */
export interface DrawPlan {
  ghost: { at: Pos; text: string }[];
  deleted: Span[];
  inserted: { at: Pos; text: string }[];
  gutter: number[];
}

/** How `suggestions` are drawn with the cursor at `cursor`. Multi-line text shows as one line. */
export function drawPlan(suggestions: Suggestion[], cursor: Pos): DrawPlan {
  const plan: DrawPlan = { ghost: [], deleted: [], inserted: [], gutter: [] };
  for (const suggestion of suggestions) {
    const shownText = suggestion.text.replace(/\r?\n/g, " ⏎ ");
    if (isAtCursor(suggestion, cursor)) {
      plan.ghost.push({ at: suggestion.range.start, text: shownText });
      continue;
    }
    if (comparePos(suggestion.range.start, suggestion.range.end) !== 0) {
      plan.deleted.push(suggestion.range);
    }
    if (shownText) {
      plan.inserted.push({ at: suggestion.range.end, text: shownText });
    }
    if (!plan.gutter.includes(suggestion.range.start.line)) {
      plan.gutter.push(suggestion.range.start.line);
    }
  }
  return plan;
}

// --- VS Code ----------------------------------------------------------------------------------

function toPosition(p: Pos): vscode.Position {
  return new vscode.Position(p.line, p.character);
}

function toRange(span: Span): vscode.Range {
  return new vscode.Range(toPosition(span.start), toPosition(span.end));
}

/** Draws a DrawPlan with editor decorations (created on first use, disposed with the view). */
export class VscodeNextEditView implements vscode.Disposable {
  private types: { ghost: vscode.TextEditorDecorationType; deleted: vscode.TextEditorDecorationType; inserted: vscode.TextEditorDecorationType; gutter: vscode.TextEditorDecorationType } | undefined;

  constructor(private readonly gutterIcon: () => vscode.Uri) {}

  private decorationTypes() {
    this.types ??= {
      ghost: vscode.window.createTextEditorDecorationType({
        after: { color: new vscode.ThemeColor("editorGhostText.foreground"), fontStyle: "italic" },
      }),
      deleted: vscode.window.createTextEditorDecorationType({
        backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
        textDecoration: "line-through",
      }),
      inserted: vscode.window.createTextEditorDecorationType({
        after: { backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"), margin: "0 0 0 0.2em" },
      }),
      gutter: vscode.window.createTextEditorDecorationType({
        gutterIconPath: this.gutterIcon(),
        gutterIconSize: "contain",
        overviewRulerColor: new vscode.ThemeColor("editorGutter.addedBackground"),
        overviewRulerLane: vscode.OverviewRulerLane.Right,
      }),
    };
    return this.types;
  }

  draw(uri: string, suggestions: Suggestion[], cursor: Pos): void {
    const editors = vscode.window.visibleTextEditors.filter((editor) => editor.document.uri.toString() === uri);
    if (editors.length === 0 || (suggestions.length === 0 && !this.types)) {
      return;
    }
    const types = this.decorationTypes();
    const plan = drawPlan(suggestions, cursor);
    for (const editor of editors) {
      editor.setDecorations(
        types.ghost,
        plan.ghost.map((g) => ({ range: toRange({ start: g.at, end: g.at }), renderOptions: { after: { contentText: g.text } } })),
      );
      editor.setDecorations(types.deleted, plan.deleted.map(toRange));
      editor.setDecorations(
        types.inserted,
        plan.inserted.map((i) => ({ range: toRange({ start: i.at, end: i.at }), renderOptions: { after: { contentText: i.text } } })),
      );
      editor.setDecorations(types.gutter, plan.gutter.map((line) => toRange({ start: { line, character: 0 }, end: { line, character: 0 } })));
    }
  }

  dispose(): void {
    if (this.types) {
      for (const type of Object.values(this.types)) {
        type.dispose();
      }
      this.types = undefined;
    }
  }
}

/** The active editor's cursor when it shows `uri`. */
export function activeCursor(uri: string): Pos | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.toString() !== uri) {
    return undefined;
  }
  const active = editor.selection.active;
  return { line: active.line, character: active.character };
}

/** The open document's version in the editor. */
export function documentVersion(uri: string): number | undefined {
  return vscode.workspace.textDocuments.find((document) => document.uri.toString() === uri)?.version;
}

/** Move the active editor's cursor (it shows `uri`) to `to` and reveal it. */
export function moveCursor(uri: string, to: Pos): void {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.toString() !== uri) {
    return;
  }
  const position = toPosition(to);
  editor.selection = new vscode.Selection(position, position);
  editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

/** Apply one suggestion as the user's own edit (one undo step) when the document is still at `version`. */
export async function applySuggestion(uri: string, version: number, suggestion: Suggestion): Promise<boolean> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.toString() !== uri || editor.document.version !== version) {
    return false;
  }
  return editor.edit((builder) => builder.replace(toRange(suggestion.range), suggestion.text));
}

/** What the extension gives the next-edit wiring. */
export interface NextEditDeps {
  /** The gutter marker's icon (media/next-edit.svg), asked for when first drawn. */
  gutterIcon: () => vscode.Uri;
  /** The running language client's sendRequest, or undefined when it is not running. */
  sendRequest(): ((method: string, params: NextEditParams, token: vscode.CancellationToken) => Promise<unknown>) | undefined;
  model(): string | null | undefined;
  recheck(): void;
  log(message: string): void;
}

/**
 * The controller over VS Code: settings under `lich.nextEdit`, decorations, the context key and
 * the two keybinding commands. Returns the controller (its onDidChange goes in the language
 * client's didChange middleware) and what to dispose.
 */
export function createVscodeNextEdits(section: string, deps: NextEditDeps): { controller: NextEditController; disposables: vscode.Disposable[] } {
  const view = new VscodeNextEditView(deps.gutterIcon);
  let visible = false;
  const setting = <T>(key: string, fallback: T): T => vscode.workspace.getConfiguration(section).get<T>(key, fallback) ?? fallback;
  const controller = new NextEditController({
    enabled: () => setting<boolean>(NEXT_EDIT_ENABLED_SETTING, true) !== false,
    model: deps.model,
    recheck: deps.recheck,
    debounceMs: () => {
      const ms = setting<number>(NEXT_EDIT_DEBOUNCE_SETTING, DEFAULT_DEBOUNCE_MS);
      return typeof ms === "number" && Number.isFinite(ms) ? ms : DEFAULT_DEBOUNCE_MS;
    },
    cursor: activeCursor,
    version: documentVersion,
    request: (params, token) => {
      const send = deps.sendRequest();
      return send ? send(NEXT_EDIT_METHOD, params, token as vscode.CancellationToken) : Promise.resolve(null);
    },
    tokenSource: () => new vscode.CancellationTokenSource(),
    draw: (uri, suggestions, cursor) => view.draw(uri, suggestions, cursor),
    setVisible: (value) => {
      if (value !== visible) {
        visible = value;
        void vscode.commands.executeCommand("setContext", NEXT_EDIT_CONTEXT, value);
      }
    },
    moveCursor,
    apply: applySuggestion,
    setTimer: (fn, ms) => setTimeout(fn, ms),
    clearTimer: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
    log: deps.log,
  });
  const disposables: vscode.Disposable[] = [
    vscode.commands.registerCommand(NEXT_EDIT_COMMANDS.acceptOrJump, async () => {
      // Nothing to jump to or accept here (another editor is active): Tab does what it does.
      if (!(await controller.acceptOrJump())) {
        await vscode.commands.executeCommand("tab");
      }
    }),
    vscode.commands.registerCommand(NEXT_EDIT_COMMANDS.dismiss, () => controller.dismiss()),
    { dispose: () => controller.dispose() },
    view,
  ];
  return { controller, disposables };
}
