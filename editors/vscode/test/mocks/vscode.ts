/**
 * A fake of the parts of the `vscode` API the extension uses. Tests arrange `mock.*` and read
 * back what the extension did (messages shown, commands registered, ...).
 */
type Listener<T> = (value: T) => void;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>): { dispose(): void } => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      listener(value);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", p);
  }
  static parse(value: string): Uri {
    const match = /^([a-z][a-z0-9+.-]*):(?:\/\/)?(.*)$/i.exec(value);
    if (!match) {
      throw new Error(`invalid URI ${value}`);
    }
    // Normalise percent-encoding the way VS Code prints URIs (e.g. %3A vs :).
    return new Uri(match[1].toLowerCase(), decodeURIComponent(match[2]));
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join("/"));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class Disposable {
  constructor(private readonly fn: () => void) {}
  dispose(): void {
    this.fn();
  }
}

export interface FakeQuickPick {
  title: string | undefined;
  placeholder: string | undefined;
  value: string;
  items: { label: string; description?: string }[];
  selectedItems: { label: string }[];
  activeItems: { label: string }[];
  ignoreFocusOut: boolean;
  matchOnDescription: boolean;
  shown: boolean;
  disposed: boolean;
  onDidChangeValue: (l: Listener<string>) => void;
  onDidAccept: (l: Listener<void>) => void;
  onDidHide: (l: Listener<void>) => void;
  show(): void;
  hide(): void;
  dispose(): void;
  /** Test helpers: act like a user. */
  type(text: string): void;
  accept(): void;
}

function makeQuickPick(): FakeQuickPick {
  const changed = new EventEmitter<string>();
  const accepted = new EventEmitter<void>();
  const hidden = new EventEmitter<void>();
  const pick: FakeQuickPick = {
    title: undefined,
    placeholder: undefined,
    value: "",
    items: [],
    selectedItems: [],
    activeItems: [],
    ignoreFocusOut: false,
    matchOnDescription: true,
    shown: false,
    disposed: false,
    onDidChangeValue: (l) => changed.event(l),
    onDidAccept: (l) => accepted.event(l),
    onDidHide: (l) => hidden.event(l),
    show() {
      pick.shown = true;
      mock.onQuickPickShown?.(pick);
    },
    hide() {
      hidden.fire();
    },
    dispose() {
      pick.disposed = true;
    },
    type(text: string) {
      pick.value = text;
      changed.fire(text);
      // VS Code makes the first visible item active.
      pick.activeItems = pick.items.slice(0, 1);
      pick.selectedItems = [];
    },
    accept() {
      if (pick.selectedItems.length === 0) {
        pick.selectedItems = pick.activeItems;
      }
      accepted.fire();
    },
  };
  return pick;
}

export interface FakeConfigValues {
  [key: string]: { global?: unknown; workspace?: unknown; default?: unknown };
}

export const mock = {
  config: {} as FakeConfigValues,
  isTrusted: true,
  workspaceFolders: [{ uri: Uri.file("/ws"), name: "ws", index: 0 }] as { uri: Uri; name: string; index: number }[] | undefined,
  textDocuments: [] as unknown[],
  extensions: {} as Record<string, unknown>,
  clipboard: "",
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  executed: [] as { command: string; args: unknown[] }[],
  errors: [] as { message: string; actions: string[] }[],
  infos: [] as string[],
  warnings: [] as string[],
  /** Every warning with the actions it offered (mock.warnings keeps the bare texts). */
  warningPrompts: [] as { message: string; actions: string[] }[],
  warningChoice: undefined as string | undefined,
  /** Every information message with the actions it offered, and the action the "user" picks. */
  infoPrompts: [] as { message: string; actions: string[] }[],
  infoChoice: undefined as string | undefined,
  errorChoice: undefined as string | undefined,
  /** Input boxes shown, and what the "user" answers (undefined: dismissed). */
  inputBoxes: [] as Record<string, unknown>[],
  inputBoxAnswer: undefined as string | undefined,
  outputs: new Map<string, string[]>(),
  statusItems: [] as { text: string; tooltip?: string; command?: string; visible?: boolean }[],
  /** Tree views created (by view id), terminals created, decorations set per editor. */
  treeViews: [] as string[],
  terminals: [] as Record<string, unknown>[],
  /** The context keys set with the setContext command. */
  contextKeys: new Map<string, unknown>(),
  quickPicks: [] as FakeQuickPick[],
  onQuickPickShown: undefined as ((pick: FakeQuickPick) => void) | undefined,
  files: new Map<string, string>(),
  /** vscode.languages: diagnostics per URI string, and the CodeLens providers registered. */
  diagnostics: new Map<string, unknown[]>(),
  codeLensProviders: [] as { selector: unknown; provider: unknown }[],
  /** Webview view providers registered, by view id; and the URIs opened outside the editor. */
  webviewViewProviders: new Map<string, { provider: unknown; options: unknown }>(),
  external: [] as string[],
  shownDocuments: [] as { uri: string; options: unknown }[],
  /** Test helper: set a document's diagnostics and fire onDidChangeDiagnostics, as VS Code does. */
  setDiagnostics(uri: string, diagnostics: unknown[]): void {
    mock.diagnostics.set(uri, diagnostics);
    diagnosticsChanged.fire({ uris: [Uri.parse(uri)] });
  },
  reset(): void {
    mock.config = {};
    mock.isTrusted = true;
    mock.workspaceFolders = [{ uri: Uri.file("/ws"), name: "ws", index: 0 }];
    mock.textDocuments = [];
    mock.extensions = {};
    mock.clipboard = "";
    mock.commands = new Map();
    mock.executed = [];
    mock.errors = [];
    mock.infos = [];
    mock.warnings = [];
    mock.warningPrompts = [];
    mock.warningChoice = undefined;
    mock.infoPrompts = [];
    mock.infoChoice = undefined;
    mock.errorChoice = undefined;
    mock.inputBoxes = [];
    mock.inputBoxAnswer = undefined;
    mock.outputs = new Map();
    mock.statusItems = [];
    mock.quickPicks = [];
    mock.onQuickPickShown = undefined;
    mock.files = new Map();
    mock.diagnostics = new Map();
    mock.codeLensProviders = [];
    mock.webviewViewProviders = new Map();
    mock.external = [];
    mock.shownDocuments = [];
    mock.treeViews = [];
    mock.terminals = [];
    mock.contextKeys = new Map();
  },
};

const diagnosticsChanged = new EventEmitter<{ uris: Uri[] }>();

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum OverviewRulerLane {
  Left = 1,
  Center = 2,
  Right = 4,
  Full = 7,
}

export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; arguments?: unknown[]; tooltip?: string },
  ) {}
}

export const languages = {
  getDiagnostics: ((uri?: Uri) =>
    uri === undefined ? [...mock.diagnostics.entries()].map(([key, list]) => [Uri.parse(key), list]) : (mock.diagnostics.get(uri.toString()) ?? [])) as {
    (uri: Uri): unknown[];
    (): [Uri, unknown[]][];
  },
  onDidChangeDiagnostics: diagnosticsChanged.event,
  registerCodeLensProvider: (selector: unknown, provider: unknown) => {
    const entry = { selector, provider };
    mock.codeLensProviders.push(entry);
    return new Disposable(() => (mock.codeLensProviders = mock.codeLensProviders.filter((e) => e !== entry)));
  },
};

function configuration(section: string) {
  const full = (key: string): string => (section ? `${section}.${key}` : key);
  return {
    get<T>(key: string, fallback?: T): T | undefined {
      const entry = mock.config[full(key)];
      if (!entry) {
        return fallback;
      }
      const value = entry.workspace ?? entry.global ?? entry.default;
      return (value === undefined ? fallback : value) as T;
    },
    inspect<T>(key: string) {
      const entry = mock.config[full(key)];
      return { key: full(key), defaultValue: entry?.default as T, globalValue: entry?.global as T, workspaceValue: entry?.workspace as T };
    },
    has(key: string): boolean {
      return full(key) in mock.config;
    },
  };
}

const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
const trustGranted = new EventEmitter<void>();

export const workspace = {
  getConfiguration: (section = "") => configuration(section),
  get isTrusted() {
    return mock.isTrusted;
  },
  get workspaceFolders() {
    return mock.workspaceFolders;
  },
  get textDocuments() {
    return mock.textDocuments;
  },
  getWorkspaceFolder: () => mock.workspaceFolders?.[0],
  asRelativePath: (uri: Uri | string) => {
    const p = typeof uri === "string" ? uri : uri.path;
    const root = mock.workspaceFolders?.[0]?.uri.path;
    return root && p.startsWith(`${root}/`) ? p.slice(root.length + 1) : p;
  },
  onDidChangeConfiguration: configChanged.event,
  onDidGrantWorkspaceTrust: trustGranted.event,
  fs: {
    async stat(uri: Uri) {
      if (!mock.files.has(uri.path)) {
        throw new Error(`ENOENT ${uri.path}`);
      }
      return { type: 1 };
    },
    async createDirectory() {},
    async writeFile(uri: Uri, data: Uint8Array) {
      mock.files.set(uri.path, new TextDecoder().decode(data));
    },
  },
};

function outputChannel(name: string) {
  const lines: string[] = [];
  mock.outputs.set(name, lines);
  return {
    name,
    append: (text: string) => lines.push(text),
    appendLine: (text: string) => lines.push(`${text}\n`),
    show: () => undefined,
    dispose: () => undefined,
  };
}

const visibleEditorsChanged = new EventEmitter<unknown[]>();

export const window = {
  activeTextEditor: undefined as unknown,
  visibleTextEditors: [] as unknown[],
  onDidChangeVisibleTextEditors: visibleEditorsChanged.event,
  createTextEditorDecorationType: (options: unknown) => ({ key: `decoration-${Math.random()}`, options, dispose: () => undefined }),
  createTreeView: (id: string) => {
    mock.treeViews.push(id);
    return new Disposable(() => undefined);
  },
  createTerminal: (options: Record<string, unknown>) => {
    const terminal = { ...options, sent: [] as string[] };
    mock.terminals.push(terminal);
    return { show: () => undefined, sendText: (text: string) => void terminal.sent.push(text), dispose: () => undefined };
  },
  createOutputChannel: (name: string) => outputChannel(name),
  createStatusBarItem: () => {
    const item = { text: "", tooltip: "", command: "", name: "", visible: false, show: () => void (item.visible = true), hide: () => void (item.visible = false), dispose: () => undefined };
    mock.statusItems.push(item);
    return item;
  },
  createQuickPick: () => {
    const pick = makeQuickPick();
    mock.quickPicks.push(pick);
    return pick;
  },
  showErrorMessage: async (message: string, ...actions: string[]) => {
    mock.errors.push({ message, actions });
    return mock.errorChoice;
  },
  showInformationMessage: async (message: string, ...actions: string[]) => {
    mock.infos.push(message);
    mock.infoPrompts.push({ message, actions });
    return mock.infoChoice;
  },
  showWarningMessage: async (message: string, ...actions: string[]) => {
    mock.warnings.push(message);
    mock.warningPrompts.push({ message, actions });
    return mock.warningChoice;
  },
  showInputBox: async (options: Record<string, unknown> = {}) => {
    mock.inputBoxes.push(options);
    return mock.inputBoxAnswer;
  },
  showQuickPick: async () => undefined,
  registerWebviewViewProvider: (id: string, provider: unknown, options?: unknown) => {
    mock.webviewViewProviders.set(id, { provider, options });
    return new Disposable(() => mock.webviewViewProviders.delete(id));
  },
  showTextDocument: async (uri: unknown, options?: unknown) => {
    mock.shownDocuments.push({ uri: String(uri), options });
    return undefined;
  },
};

export const commands = {
  registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
    if (mock.commands.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    mock.commands.set(id, fn);
    return new Disposable(() => mock.commands.delete(id));
  },
  executeCommand: async (command: string, ...args: unknown[]) => {
    if (command === "setContext") {
      mock.contextKeys.set(String(args[0]), args[1]);
      return undefined;
    }
    mock.executed.push({ command, args });
    return undefined;
  },
};

export const extensions = {
  getExtension: (id: string) => mock.extensions[id],
};

export const env = {
  clipboard: {
    readText: async () => mock.clipboard,
  },
  openExternal: async (uri: Uri) => {
    mock.external.push(uri.toString());
    return true;
  },
};
