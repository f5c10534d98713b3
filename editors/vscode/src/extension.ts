/**
 * The VS Code client for lich-lsp. Speaks only the LSP surface of DESIGN.md: server-advertised
 * `lich.*` commands (registered by the language client), `lich/event` notifications and the
 * `lich/saveDocuments` request. Palette commands live under `lichClient.*` so they never clash
 * with the server's command ids.
 */
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from "vscode-languageclient/node";
import { showMessageRequest, SHOW_MESSAGE_REQUEST_METHOD, type MessageActionItem, type ShowMessageRequestParams } from "./approvalRequest";
import { CHAT_VIEW_ID, OPEN_CHAT_COMMAND } from "./chatProtocol";
import { COMPLETIONS_ENABLED_SETTING, completionModel } from "./completions";
import { ChatSession, ChatViewProvider } from "./chatView";
import { CONFIG_TEMPLATE, userConfigPath } from "./configTemplate";
import { ASK_COMMAND, createMiddleware, trackedAsk, type AskArgs } from "./middleware";
import { canImportLichLsp, findOnPath, pythonExtensionInterpreter } from "./nodeResolveDeps";
import { createVscodeNextEdits, nextEditModel, type NextEditController } from "./nextEdit";
import { choosePatch } from "./patchSource";
import { askForPrompt, PromptHistory } from "./prompt";
import { SAVE_DOCUMENTS_METHOD, SaveDocumentsCapability, saveDocuments, type SaveDocumentsParams } from "./saveDocuments";
import { askForFilter, LAST_FILTER_KEY, PROBLEMS_COMMAND, RUN_TESTS_COMMAND, runTestsCommand, type RunTestsArgs, type RunTestsResult } from "./runTests";
import {
  ACCEPT_ALL_COMMAND,
  ACCEPT_HUNK_COMMAND,
  REJECT_ALL_COMMAND,
  REJECT_HUNK_COMMAND,
  REVIEW_COMMANDS,
  REVIEW_SOURCE,
  ReviewCodeLensProvider,
  ReviewHunksCapability,
  reviewHunkIds,
  reviewOutcome,
  type ReviewAnswer,
} from "./review";
import { resolveServer, serverMissingMessage, type ServerSpec } from "./serverResolve";
import { providerFromSettings, RESTART_SETTINGS, SECTION, serverSettings, type ServerSettings } from "./settings";
import { ReviewDecorations, REVIEW_LIST_COMMAND } from "./reviewDecorations";
import { completionInfo, completionView, mcpServers, providerInfo, SERVER_LOG_COMMAND, statusView, type CompletionInfo, type McpServerInfo, type ProviderInfo } from "./status";
import { OPEN_CHAT_ACTION, TaskNotificationsCapability, taskNotice, TaskTracker, toastError } from "./tasks";
import { DEMO_COMMAND, DEMO_TERMINAL_NAME, demoCommand, demoShellLine, DOCS_COMMAND, NO_MODEL_CONTEXT, runModelSetup, SETUP_COMMAND, WELCOME_VIEW_ID } from "./welcome";
import { UNDO_COMMAND, undoTaskCommand, type UndoResult } from "./undo";
import { MANAGE_TRUST_COMMAND, runTrustCommand, TRUST_COMMAND, type TrustArgs, type TrustResult } from "./trust";
import { askTranscript, EVENT_METHOD, eventTaskId, OPEN_TRANSCRIPT_COMMAND, TRANSCRIPT_CHANNEL, TranscriptRenderer, type LichEvent } from "./transcript";

export const CLIENT_ID = "lich";
export const CLIENT_NAME = "Lich Language Server";
export const COMMANDS = {
  askAgent: "lichClient.askAgent",
  askAboutSelection: "lichClient.askAboutSelection",
  cancelTask: "lichClient.cancelTask",
  applyPatch: "lichClient.applyPatch",
  showTranscript: "lichClient.showTranscript",
  openTranscript: OPEN_TRANSCRIPT_COMMAND,
  showTools: "lichClient.showTools",
  restartServer: "lichClient.restartServer",
  openConfig: "lichClient.openConfig",
  trustWorkspaceConfig: "lichClient.trustWorkspaceConfig",
  revokeWorkspaceConfigTrust: "lichClient.revokeWorkspaceConfigTrust",
  runTests: "lichClient.runTests",
  runTestsMatching: "lichClient.runTestsMatching",
  undoTask: "lichClient.undoTask",
  openChat: OPEN_CHAT_COMMAND,
  setUpModel: SETUP_COMMAND,
  tryDemo: DEMO_COMMAND,
  openSetupDocs: DOCS_COMMAND,
  showServerLog: SERVER_LOG_COMMAND,
} as const;
const ACTION_RESTART = "Restart Server";
const ACTION_SETTINGS = "Open Settings";
const MAX_CRASH_RESTARTS = 3;

type ServerState = "starting" | "running" | "stopped" | "missing";

interface ServerTask {
  id?: string;
  title: string;
}

export class LichController implements vscode.Disposable {
  readonly transcript: vscode.OutputChannel;
  readonly serverOutput: vscode.OutputChannel;
  readonly tasks = new TaskTracker();
  readonly history: PromptHistory;
  client: LanguageClient | undefined;
  serverSpec: ServerSpec | undefined;
  private state: ServerState = "stopped";
  private provider: ProviderInfo = {};
  /** lich.status's completion model: null when completions are off, undefined before it answered. */
  private completionModel: string | null | undefined;
  /** lich.status's next-edit model (./nextEdit): null when next edits are off, undefined before it answered. */
  private nextEditModel: string | null | undefined;
  readonly nextEdits: NextEditController;
  /** lich.status's completion model and its last failure, for the ghost-text status item. */
  private completion: CompletionInfo = { model: undefined };
  private mcp: McpServerInfo[] = [];
  private readonly statusItem: vscode.StatusBarItem;
  private readonly completionItem: vscode.StatusBarItem;
  /** The last value of the welcome view's context key (set only when it changes). */
  private noModel: boolean | undefined;
  private readonly extensionUri: vscode.Uri;
  private readonly renderer = new TranscriptRenderer();
  private readonly disposables: vscode.Disposable[] = [];
  private crashes = 0;
  private readonly workspaceState: vscode.Memento;
  readonly chat: ChatSession;
  readonly chatView: ChatViewProvider;
  /** The transcript file of the last finished task this window asked for (lich.ask's `transcript`). */
  private lastTranscript: string | undefined;

  constructor(context: vscode.ExtensionContext) {
    this.workspaceState = context.workspaceState;
    this.extensionUri = context.extensionUri;
    this.transcript = vscode.window.createOutputChannel(TRANSCRIPT_CHANNEL);
    this.serverOutput = vscode.window.createOutputChannel(CLIENT_NAME);
    this.history = new PromptHistory(context.workspaceState);
    this.chat = new ChatSession({
      request: (command, args) => this.chatRequest(command, args),
      history: this.history,
      tasks: this.tasks,
      state: context.workspaceState,
      openFile: (uri, line) => void this.openFileUri(uri, line),
      onAskResult: (result) => {
        this.rememberTranscript(result);
        void this.revealFirstPendingHunk(result);
      },
      openTranscript: (uri) => void vscode.commands.executeCommand(COMMANDS.openTranscript, uri),
      // Only http(s) reaches here (src/chatLinks.ts); openExternal asks before opening an untrusted site.
      openExternal: (url) => void vscode.env.openExternal(vscode.Uri.parse(url, true)),
      inform: (text) => void vscode.window.showInformationMessage(text),
      copyText: (text) => vscode.env.clipboard.writeText(text),
      // A normal editor edit at the cursor (Ctrl+Z takes it back); false when no editor is open.
      insertText: async (text) => {
        const editor = vscode.window.activeTextEditor;
        return editor ? editor.edit((edit) => edit.replace(editor.selection, text)) : false;
      },
      configureModels: () => void vscode.commands.executeCommand(COMMANDS.openConfig),
      setUpModel: () => void vscode.commands.executeCommand(COMMANDS.setUpModel),
    });
    this.chatView = new ChatViewProvider(context.extensionUri, this.chat);
    this.statusItem = vscode.window.createStatusBarItem("lich.status", vscode.StatusBarAlignment.Left, 10);
    this.statusItem.name = "Lich";
    this.completionItem = vscode.window.createStatusBarItem("lich.completion", vscode.StatusBarAlignment.Right, 100);
    this.completionItem.name = "Lich Ghost Text";
    this.disposables.push(this.transcript, this.serverOutput, this.statusItem, this.completionItem);
    const nextEdits = createVscodeNextEdits(SECTION, {
      gutterIcon: () => vscode.Uri.joinPath(context.extensionUri, "media", "next-edit.svg"),
      sendRequest: () => (this.client?.state === State.Running ? (method, params, token) => this.client!.sendRequest(method, params, token) : undefined),
      model: () => this.nextEditModel,
      recheck: () => void this.refreshStatus(),
      log: (message) => this.serverOutput.appendLine(message),
    });
    this.nextEdits = nextEdits.controller;
    this.disposables.push(...nextEdits.disposables);
    this.disposables.push(this.tasks.onDidChange(() => this.updateStatus()));
    this.updateStatus();
    this.statusItem.show();
  }

  registerCommands(): void {
    const register = (id: string, run: (...args: unknown[]) => unknown): void => {
      this.disposables.push(vscode.commands.registerCommand(id, run));
    };
    register(COMMANDS.askAgent, () => this.askAgent(false));
    register(COMMANDS.askAboutSelection, () => this.askAgent(true));
    register(COMMANDS.cancelTask, () => this.cancelTask());
    register(COMMANDS.applyPatch, () => this.applyPatch());
    register(COMMANDS.showTranscript, () => this.transcript.show(true));
    register(COMMANDS.openTranscript, (uri) => this.openTranscript(typeof uri === "string" ? uri : undefined));
    register(COMMANDS.showTools, () => this.showTools());
    register(COMMANDS.restartServer, () => this.restart());
    register(COMMANDS.openConfig, () => this.openConfig());
    register(COMMANDS.trustWorkspaceConfig, () => this.trustWorkspaceConfig(false));
    register(COMMANDS.revokeWorkspaceConfigTrust, () => this.trustWorkspaceConfig(true));
    register(COMMANDS.runTests, () => this.runTests(false));
    register(COMMANDS.runTestsMatching, () => this.runTests(true));
    register(COMMANDS.openChat, () => this.chatView.open());
    register(COMMANDS.setUpModel, () => this.setUpModel());
    register(COMMANDS.tryDemo, () => this.tryDemo());
    register(COMMANDS.openSetupDocs, () => this.openSetupDocs());
    register(COMMANDS.showServerLog, () => this.serverOutput.show(true));
    // The welcome view (./welcome): an empty tree, so VS Code shows its viewsWelcome content.
    this.disposables.push(
      vscode.window.createTreeView(WELCOME_VIEW_ID, { treeDataProvider: { getChildren: () => [], getTreeItem: (item: vscode.TreeItem) => item } }),
    );
    this.disposables.push(
      this.chatView,
      vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this.chatView, { webviewOptions: { retainContextWhenHidden: true } }),
    );
    register(COMMANDS.undoTask, (taskId) => this.undoTask(typeof taskId === "string" ? taskId : undefined));
    // Review per hunk: the lenses' buttons and the palette's Accept All / Reject All (./review).
    register(REVIEW_COMMANDS.acceptHunk, (args) => this.reviewCommand(ACCEPT_HUNK_COMMAND, args));
    register(REVIEW_COMMANDS.rejectHunk, (args) => this.reviewCommand(REJECT_HUNK_COMMAND, args));
    register(REVIEW_COMMANDS.acceptAll, () => this.reviewCommand(ACCEPT_ALL_COMMAND, {}));
    register(REVIEW_COMMANDS.rejectAll, () => this.reviewCommand(REJECT_ALL_COMMAND, {}));
    const lenses = new ReviewCodeLensProvider();
    this.disposables.push(lenses, vscode.languages.registerCodeLensProvider({ scheme: "file" }, lenses));
    // The proposed text of each pending hunk, drawn in the editor (./reviewDecorations).
    this.disposables.push(new ReviewDecorations((uri) => this.chatRequest(REVIEW_LIST_COMMAND, { uri })));
    // The chat's Accept / Reject follow the server's hunks: a hunk decided in the editor (its
    // lens, Accept All) or dropped by the user's typing greys out in the chat too.
    let hunkIds = "";
    this.disposables.push(
      vscode.languages.onDidChangeDiagnostics(() => {
        const ids = reviewHunkIds(vscode.languages.getDiagnostics());
        if (ids !== hunkIds) {
          hunkIds = ids;
          void this.chat.refreshHunks();
        }
      }),
    );
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        // Trust widens the capabilities sent at initialize, so the server must start again.
        void this.restart();
      }),
    );
  }

  currentSettings(): ServerSettings {
    return serverSettings(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted);
  }

  async start(): Promise<void> {
    this.setState("starting");
    const config = vscode.workspace.getConfiguration(SECTION);
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const spec = await resolveServer({
      configuredCommand: config.get<string>("server.command"),
      configuredArgs: config.get<string[]>("server.args"),
      pythonInterpreter: () => pythonExtensionInterpreter(resource),
      canImportLichLsp,
      findOnPath: (name) => findOnPath(name),
    });
    this.serverSpec = spec;
    if (!spec) {
      this.reportMissing(undefined);
      return;
    }
    if (!(await commandExists(spec.command))) {
      this.reportMissing(spec, "not found");
      return;
    }
    this.serverOutput.appendLine(`Starting ${[spec.command, ...spec.args].join(" ")} (from ${spec.source})`);
    const client = this.createClient(spec);
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      this.client = undefined;
      this.reportMissing(spec, err instanceof Error ? err.message : String(err));
      return;
    }
    this.crashes = 0;
    this.setState("running");
    void this.refreshStatus();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.tasks.clear();
    if (client && client.state !== State.Stopped) {
      try {
        await client.stop(5000);
      } catch {
        // The process may already be gone; dispose below kills what is left.
      }
    }
    if (client) {
      await client.dispose().catch(() => undefined);
    }
    this.setState("stopped");
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  private createClient(spec: ServerSpec): LanguageClient {
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const serverOptions: ServerOptions = { command: spec.command, args: spec.args, options: { cwd, env: { ...process.env } } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      initializationOptions: this.currentSettings(),
      outputChannel: this.serverOutput,
      middleware: this.withNextEdits(createMiddleware({
        askPrompt: async (args) => {
          const prompt = await askForPrompt(vscode.window, this.history, { title: args.range ? "Lich: Ask Agent About Selection" : "Lich: Ask Agent" });
          if (prompt !== undefined) {
            this.transcript.appendLine(`» ${prompt}`);
          }
          return prompt;
        },
        tasks: this.tasks,
        routeAsk: (args) => this.routeAskToChat(args),
        settings: () => this.currentSettings(),
        completions: {
          enabled: () => this.completionsEnabled(),
          model: () => this.completionModel,
          recheck: () => void this.refreshStatus(),
          failing: () => this.completion.lastError !== undefined,
        },
        onAskResult: (result, args) => {
          this.notifyTaskEnd(result, args.prompt);
          this.rememberTranscript(result);
          void this.refreshStatus();
          void this.revealFirstPendingHunk(result);
        },
      })),
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          this.tasks.clear();
          this.crashes += 1;
          if (this.crashes <= MAX_CRASH_RESTARTS) {
            return { action: CloseAction.Restart, handled: true };
          }
          this.reportMissing(this.serverSpec, "the server exited repeatedly; see the Lich Language Server output");
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    // vscode-languageclient 9's proposed features are exactly its inline completion support:
    // it declares textDocument.inlineCompletion and registers VS Code's ghost-text provider.
    client.registerProposedFeatures();
    client.registerFeature(new SaveDocumentsCapability());
    client.registerFeature(new ReviewHunksCapability());
    // End-of-task notifications are ours (./tasks): none for a chat turn, one with "Open chat" otherwise.
    client.registerFeature(new TaskNotificationsCapability());
    client.onNotification(EVENT_METHOD, (event: LichEvent) => this.onEvent(event));
    // Back after a crash (the client restarts the server by itself) or a restart: the chat
    // reads its thread again, so it shows what the server has.
    client.onDidChangeState((change) => {
      if (change.newState === State.Running) {
        void this.chat.reload().then(() => this.chat.listThreads());
      }
    });
    // Tool approvals show in the chat, and in the notification unless the chat is on screen (./approvalRequest).
    client.onRequest(SHOW_MESSAGE_REQUEST_METHOD, (params: ShowMessageRequestParams, token?: vscode.CancellationToken) =>
      showMessageRequest(params, token, {
        dialog: (question) => showMessage(question),
        chat: (message, actions) => this.chat.askApproval(message, actions),
        hideDialog: () => void vscode.commands.executeCommand("notifications.hideToasts"),
        chatVisible: () => this.chatView.visible,
      }),
    );
    client.onRequest(SAVE_DOCUMENTS_METHOD, (params: SaveDocumentsParams) =>
      saveDocuments(params, vscode.workspace.textDocuments, (uri) => vscode.Uri.parse(uri).toString()),
    );
    return client;
  }

  /** The language client's didChange also tells the next-edit controller (./nextEdit) to ask. */
  private withNextEdits(middleware: Middleware): Middleware {
    return {
      ...middleware,
      didChange: (event, next) => {
        if (event.contentChanges.length > 0) {
          this.nextEdits.onDidChange(event.document.uri.toString());
        }
        return next(event);
      },
    };
  }

  private onEvent(event: LichEvent): void {
    this.chat.onEvent(event);
    const text = this.renderer.render(event);
    if (text) {
      this.transcript.append(text);
    }
    const id = eventTaskId(event);
    if (id && event.type === "run_start") {
      // Events carry no prompt or title (docs/lich-event.schema.json): a task started elsewhere
      // is shown by its id; one of ours keeps the title it was given.
      this.tasks.serverStarted(id, id);
    } else if (id && event.type === "run_end") {
      this.tasks.serverEnded(id);
    }
  }

  private reportMissing(spec: ServerSpec | undefined, detail?: string): void {
    this.setState("missing");
    const message = serverMissingMessage(spec, detail);
    this.serverOutput.appendLine(message);
    void vscode.window.showErrorMessage(message, ACTION_RESTART, ACTION_SETTINGS).then((choice) => {
      if (choice === ACTION_RESTART) {
        void this.restart();
      } else if (choice === ACTION_SETTINGS) {
        void vscode.commands.executeCommand("workbench.action.openSettings", "lich.server");
      }
    });
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.updateStatus();
  }

  private updateStatus(): void {
    const view = statusView(this.state, this.tasks.list(), this.provider, this.mcp, this.completionModel);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.command = view.command;
    const ghost = this.state === "running" ? completionView(this.completion, this.completionsEnabled()) : undefined;
    if (ghost) {
      this.completionItem.text = ghost.text;
      this.completionItem.tooltip = ghost.tooltip;
      this.completionItem.command = ghost.command;
      this.completionItem.show();
    } else {
      this.completionItem.hide();
    }
    // The welcome view shows while the server says no model is set up.
    const noModel = this.state === "running" && this.provider.configured === false;
    if (noModel !== this.noModel) {
      this.noModel = noModel;
      void vscode.commands.executeCommand("setContext", NO_MODEL_CONTEXT, noModel);
    }
  }

  private completionsEnabled(): boolean {
    return vscode.workspace.getConfiguration(SECTION).get<boolean>(COMPLETIONS_ENABLED_SETTING, true) !== false;
  }

  /** Send one server command; undefined (after telling the user) when the server is not running. */
  async serverCommand<T = unknown>(command: string, args: Record<string, unknown> = {}): Promise<T | undefined> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      this.reportMissing(this.serverSpec, this.state === "missing" ? undefined : "the server is not running");
      return undefined;
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] })) as T;
  }

  private async refreshStatus(): Promise<void> {
    if (!this.client || this.client.state !== State.Running) {
      return;
    }
    try {
      const status = await this.client.sendRequest(ExecuteCommandRequest.type, { command: "lich.status", arguments: [{}] });
      this.provider = providerInfo(status);
      this.mcp = mcpServers(status);
      this.completionModel = completionModel(status);
      this.nextEditModel = nextEditModel(status);
      this.nextEdits.onModelKnown();
      this.completion = completionInfo(status);
      this.updateStatus();
    } catch (err) {
      this.serverOutput.appendLine(`lich.status failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async askAgent(aboutSelection: boolean): Promise<unknown> {
    const editor = vscode.window.activeTextEditor;
    if (aboutSelection && (!editor || editor.selection.isEmpty)) {
      void vscode.window.showWarningMessage("Lich: select the code to ask about first.");
      return undefined;
    }
    if (this.chatView.visible) {
      // The chat is open: the question goes there, on its thread, with the selection attached.
      const attachment: AskArgs = {};
      if (editor && !editor.document.isUntitled) {
        attachment.uri = editor.document.uri.toString();
        if (aboutSelection && this.client) {
          attachment.range = this.client.code2ProtocolConverter.asRange(editor.selection);
        }
      }
      await this.routeAskToChat(attachment);
      return undefined;
    }
    const prompt = await askForPrompt(vscode.window, this.history, {
      title: aboutSelection ? "Lich: Ask Agent About Selection" : "Lich: Ask Agent",
    });
    if (prompt === undefined) {
      return undefined;
    }
    const args: AskArgs = { prompt };
    if (editor && !editor.document.isUntitled) {
      args.uri = editor.document.uri.toString();
    }
    if (editor && !editor.selection.isEmpty && this.client) {
      args.range = this.client.code2ProtocolConverter.asRange(editor.selection);
    }
    const client = this.client;
    if (!client || client.state !== State.Running) {
      this.reportMissing(this.serverSpec, this.state === "missing" ? undefined : "the server is not running");
      return undefined;
    }
    this.transcript.appendLine(`» ${prompt}`);
    try {
      const result = await trackedAsk(this.tasks, args, (sent) =>
        client.sendRequest(ExecuteCommandRequest.type, { command: ASK_COMMAND, arguments: [sent] }),
      );
      this.notifyTaskEnd(result, prompt);
      this.rememberTranscript(result);
      void this.revealFirstPendingHunk(result);
      return result;
    } catch (err) {
      void vscode.window.showErrorMessage(`Lich: the task failed: ${toastError(err)}`);
      return undefined;
    } finally {
      void this.refreshStatus();
    }
  }

  /**
   * A lich.ask for the chat when its view is open: without a prompt (Ask Agent, the "Ask agent…"
   * code action) the view takes the question with the file or selection attached; with one (a
   * code action's own prompt) it runs as the next turn of the view's thread. Undefined when the
   * view is closed: the caller asks as before.
   */
  routeAskToChat(args: AskArgs): Promise<unknown> | undefined {
    if (!this.chatView.visible) {
      return undefined;
    }
    const { prompt, ...rest } = args;
    if (typeof prompt === "string" && prompt.trim()) {
      return this.chat.send(prompt, rest);
    }
    if (typeof args.uri === "string") {
      this.chat.setAttachment({ uri: args.uri, range: args.range, label: attachmentLabel(args.uri, args.range) });
    }
    return this.chatView.open().then(() => undefined);
  }

  /**
   * After a task in review mode its answer is in the chat (or a notification), and the changes
   * wait as hunks: show the first one, so the file whose Accept / Reject is pending is in front.
   */
  async revealFirstPendingHunk(result: unknown): Promise<void> {
    if (!result || typeof result !== "object" || typeof (result as { task_id?: unknown }).task_id !== "string") {
      return;
    }
    for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
      const hunk = diagnostics.find((diagnostic) => diagnostic.source === REVIEW_SOURCE);
      if (hunk) {
        await vscode.window.showTextDocument(uri, { selection: hunk.range, preview: false });
        return;
      }
    }
  }

  /**
   * The one notification for a task that did not start in the chat (the palette, a code action):
   * the server sends none (taskNotifications); "Open chat" shows the task's thread in the chat.
   */
  private notifyTaskEnd(result: unknown, prompt: string | undefined): void {
    const notice = taskNotice(result, prompt ?? "agent task");
    if (!notice) {
      return;
    }
    const show = notice.level === "error" ? vscode.window.showErrorMessage : notice.level === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const actions = notice.thread ? [OPEN_CHAT_ACTION] : [];
    void Promise.resolve(show(notice.message, ...actions)).then(async (choice) => {
      if (choice === OPEN_CHAT_ACTION && notice.thread) {
        await this.chat.pickThread(notice.thread);
        await this.chatView.open();
      }
    });
  }

  /** "Set Up a Model" (the welcome view, the "no model" status item): written to the user config. */
  async setUpModel(): Promise<void> {
    const configPath = userConfigPath(process.env, os.homedir());
    await runModelSetup({
      ui: vscode.window,
      configPath,
      readFile: async (file) => {
        try {
          return await fs.readFile(file, "utf8");
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOENT") {
            return undefined;
          }
          throw err;
        }
      },
      writeFile: async (file, text) => {
        await fs.mkdir(path.dirname(file), { recursive: true });
        await fs.writeFile(file, text, "utf8");
      },
      env: process.env,
      openFile: (file) => void vscode.window.showTextDocument(vscode.Uri.file(file)),
      // The server checks its config files before each command: lich.status reads the new one.
      written: () => this.refreshStatus(),
      settingsProvider: () => providerFromSettings(vscode.workspace.getConfiguration(SECTION)) !== undefined,
    });
  }

  /** "Try the Demo": `lich demo` (a recorded conversation, no key, no network) in a terminal. */
  tryDemo(): void {
    const demo = demoCommand(this.serverSpec);
    if (!demo) {
      void vscode.window.showWarningMessage("Lich: run `lich demo` in a terminal (the server command set in lich.server.command is not one this can derive it from).");
      return;
    }
    // In the user's shell, not as the terminal's process: the output stays after the demo ends.
    const terminal = vscode.window.createTerminal({ name: DEMO_TERMINAL_NAME });
    terminal.show();
    terminal.sendText(demoShellLine(demo));
  }

  /** "Read the Docs": the extension's README (setting up a model, commands, settings). */
  async openSetupDocs(): Promise<void> {
    await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.joinPath(this.extensionUri, "README.md"));
  }

  private rememberTranscript(result: unknown): void {
    // A task whose transcript could not be written leaves the previous one openable.
    this.lastTranscript = askTranscript(result) ?? this.lastTranscript;
  }

  /**
   * Lich: Open Task Transcript: the markdown transcript of `uri` (a chat turn's link) or of the
   * last task that finished in this window, in an editor tab. The server no longer puts it in
   * front of the user's file by itself (its `show_transcript` is off by default).
   */
  async openTranscript(uri?: string): Promise<void> {
    const target = uri ?? this.lastTranscript;
    if (!target) {
      void vscode.window.showInformationMessage("Lich: no task has finished in this session yet, so there is no transcript to open.");
      return;
    }
    try {
      await vscode.window.showTextDocument(vscode.Uri.parse(target), { preview: true });
    } catch (err) {
      void vscode.window.showErrorMessage(`Lich: cannot open the transcript ${target}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** A server command for the chat: rejects (the chat says so inline) instead of a pop-up. */
  private async chatRequest<T>(command: string, args: Record<string, unknown>): Promise<T> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new Error(this.state === "starting" ? "the language server is still starting" : "the language server is not running (Lich: Restart Server starts it)");
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] })) as T;
  }

  /** The chat's Open file / links: a file URI the chat session already decided on (a checked link, a reported edit). */
  private async openFileUri(file: string, line?: number): Promise<void> {
    const uri = vscode.Uri.parse(file, true);
    if (uri.scheme !== "file") {
      void vscode.window.showInformationMessage(`Lich: ${file} was not opened: only files open from the chat.`);
      return;
    }
    try {
      const at = line !== undefined ? new vscode.Position(Math.max(0, line), 0) : undefined;
      await vscode.window.showTextDocument(uri, { preview: false, selection: at ? new vscode.Range(at, at) : undefined });
    } catch (err) {
      void vscode.window.showErrorMessage(`Lich: cannot open ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async runningServerTasks(): Promise<ServerTask[]> {
    const found: ServerTask[] = [];
    try {
      const status = await this.serverCommand<{ tasks?: unknown }>("lich.status");
      const tasks = Array.isArray(status?.tasks) ? status!.tasks : [];
      for (const task of tasks as Record<string, unknown>[]) {
        if (typeof task.state === "string" && task.state !== "running") {
          continue; // the server also lists finished tasks
        }
        // lich.status tasks: {task_id, title, state, mode, turns, tool_calls, elapsed_s}.
        const id = typeof task.task_id === "string" ? task.task_id : undefined;
        const title = typeof task.title === "string" ? task.title : id ?? "task";
        found.push({ id, title });
      }
    } catch {
      // fall back to what the client tracked
    }
    for (const task of this.tasks.list()) {
      if (!task.taskId || !found.some((known) => known.id === task.taskId)) {
        found.push({ id: task.taskId, title: task.title });
      }
    }
    return found;
  }

  async cancelTask(): Promise<void> {
    const running = await this.runningServerTasks();
    if (running.length === 0) {
      void vscode.window.showInformationMessage("Lich: no task is running.");
      return;
    }
    let targets: ServerTask[] = running;
    if (running.length > 1) {
      const items = [
        { label: "All tasks", task: undefined as ServerTask | undefined },
        ...running.map((task) => ({ label: task.title, description: task.id, task })),
      ];
      const choice = await vscode.window.showQuickPick(items, { title: "Lich: Cancel Task", placeHolder: "Which task?" });
      if (!choice) {
        return;
      }
      targets = choice.task ? [choice.task] : running;
    }
    for (const task of targets) {
      await this.serverCommand("lich.cancel", task.id ? { task_id: task.id } : {});
    }
    this.transcript.appendLine(`■ cancel requested for ${targets.map((task) => task.id ?? task.title).join(", ")}`);
  }

  async applyPatch(): Promise<unknown> {
    const editor = vscode.window.activeTextEditor;
    const chosen = await choosePatch({
      selectionText: editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : undefined,
      documentText: editor?.document.getText(),
      readClipboard: () => vscode.env.clipboard.readText(),
    });
    if (!chosen) {
      void vscode.window.showWarningMessage(
        "Lich: no hashline patch found. Copy a patch (starting with `@@ PATH`) to the clipboard, or open or select it in an editor.",
      );
      return undefined;
    }
    try {
      const result = await this.serverCommand<{ ok?: boolean; output?: string; error?: string | null }>("lich.applyPatch", { patch: chosen.patch });
      if (!result) {
        return undefined;
      }
      if (result.ok === false) {
        void vscode.window.showErrorMessage(`Lich: patch rejected: ${result.error ?? "unknown error"}`);
      } else {
        const summary = (result.output ?? "").split("\n").filter((line) => line.startsWith("Edited ")).join("; ");
        void vscode.window.showInformationMessage(`Lich: ${summary || "patch applied"} (from ${chosen.origin})`);
      }
      return result;
    } catch (err) {
      void vscode.window.showErrorMessage(`Lich: applying the patch failed: ${toastError(err)}`);
      return undefined;
    }
  }

  async showTools(): Promise<void> {
    const result = await this.serverCommand<unknown>("lich.tools");
    if (result === undefined) {
      return;
    }
    const list = Array.isArray(result) ? result : Array.isArray((result as { tools?: unknown }).tools) ? (result as { tools: unknown[] }).tools : [];
    const items = (list as Record<string, unknown>[]).map((tool) => ({
      label: `${tool.enabled === false ? "$(circle-slash)" : "$(tools)"} ${String(tool.name ?? "?")}`,
      description: [tool.capability, tool.enabled === false ? "disabled" : ""].filter(Boolean).join(" · "),
      detail: typeof tool.description === "string" ? tool.description.split("\n")[0] : undefined,
    }));
    await vscode.window.showQuickPick(items, { title: `Lich: ${items.length} tools`, matchOnDetail: true });
  }

  async openConfig(): Promise<void> {
    const folder = (vscode.window.activeTextEditor && vscode.workspace.getWorkspaceFolder(vscode.window.activeTextEditor.document.uri)) ?? vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      void vscode.window.showWarningMessage("Lich: open a folder first; the config lives in <folder>/.lich/config.json.");
      return;
    }
    const uri = vscode.Uri.joinPath(folder.uri, ".lich", "config.json");
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(folder.uri, ".lich"));
      await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(CONFIG_TEMPLATE));
    }
    await vscode.window.showTextDocument(uri);
  }

  /** "Trust Workspace Config" / "Revoke Workspace Config Trust": the server's lich.trustWorkspace. */
  async trustWorkspaceConfig(revoke: boolean): Promise<TrustResult | undefined> {
    const result = await runTrustCommand(
      {
        workspaceTrusted: vscode.workspace.isTrusted,
        send: (args: TrustArgs) => this.serverCommand<TrustResult>(TRUST_COMMAND, { ...args }),
        ui: vscode.window,
        manageTrust: () => void vscode.commands.executeCommand(MANAGE_TRUST_COMMAND),
      },
      revoke,
    );
    if (result) {
      // The server rebuilt its config; the provider (a trusted key) may have changed with it.
      void this.refreshStatus();
    }
    return result;
  }

  /**
   * "Run Tests" / "Run Tests Matching…": the server's lich.runTests. Failures arrive as
   * diagnostics (source `lich tests`) in the Problems view; the outcome is a notification.
   */
  async runTests(askFilter: boolean): Promise<RunTestsResult | undefined> {
    let filter: string | undefined;
    if (askFilter) {
      filter = await askForFilter(vscode.window, this.workspaceState.get<string>(LAST_FILTER_KEY));
      if (filter === undefined) {
        return undefined; // dismissed
      }
      await this.workspaceState.update(LAST_FILTER_KEY, filter.trim());
    }
    return runTestsCommand(
      {
        send: (args: RunTestsArgs) => this.serverCommand<RunTestsResult>(RUN_TESTS_COMMAND, { ...args }),
        ui: vscode.window,
        showProblems: () => void vscode.commands.executeCommand(PROBLEMS_COMMAND),
      },
      filter,
    );
  }

  /** One review command (a lens button, Accept All, Reject All); failures are shown. */
  async reviewCommand(command: string, args: unknown): Promise<ReviewAnswer | undefined> {
    const sent = args && typeof args === "object" ? (args as Record<string, unknown>) : {};
    let answer: ReviewAnswer | undefined;
    try {
      answer = await this.serverCommand<ReviewAnswer>(command, sent);
    } catch (err) {
      answer = { ok: false, error: toastError(err) };
    }
    const outcome = reviewOutcome(command, answer);
    if (outcome?.level === "error") {
      void vscode.window.showErrorMessage(outcome.message);
    } else if (outcome) {
      void vscode.window.showInformationMessage(outcome.message);
    }
    return answer;
  }

  /**
   * "Lich: Undo Task": the server's lich.undoTask for `taskId`, or for the task picked from the
   * recent ones. The server shows the outcome itself (window/showMessage).
   */
  async undoTask(taskId?: string): Promise<UndoResult | undefined> {
    return undoTaskCommand(
      {
        status: () => this.serverCommand("lich.status"),
        send: (args) => this.serverCommand<UndoResult>(UNDO_COMMAND, { ...args }),
        ui: vscode.window,
      },
      taskId,
    );
  }

  private onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(key))) {
      void this.restart();
      return;
    }
    if (event.affectsConfiguration(SECTION) && this.client?.state === State.Running) {
      void this.client
        .sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: this.currentSettings() } })
        .then(() => this.refreshStatus());
    }
  }

  dispose(): void {
    void this.stop();
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }
}

/** A server question shown as the language client would: a notification of its message type. */
function showMessage(params: ShowMessageRequestParams): Thenable<MessageActionItem | undefined> {
  const actions = params.actions ?? [];
  switch (params.type) {
    case 1:
      return vscode.window.showErrorMessage(params.message, ...actions);
    case 2:
      return vscode.window.showWarningMessage(params.message, ...actions);
    default:
      return vscode.window.showInformationMessage(params.message, ...actions);
  }
}

/** "hello.py" or "hello.py:3-7" (LSP lines are 0-based, people count from 1). */
export function attachmentLabel(uri: string, range: unknown): string {
  let name = uri;
  try {
    name = vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
  } catch {
    // keep the URI
  }
  const r = range as { start?: { line?: unknown }; end?: { line?: unknown; character?: unknown } } | undefined;
  if (r && typeof r.start?.line === "number" && typeof r.end?.line === "number") {
    const first = r.start.line + 1;
    // A selection ending at column 0 does not include that line.
    const last = r.end.character === 0 && r.end.line > r.start.line ? r.end.line : r.end.line + 1;
    return first === last ? `${name}:${first}` : `${name}:${first}-${last}`;
  }
  return name;
}

/** Whether `command` names an executable: a path that exists, or a bare name found on PATH. */
export async function commandExists(command: string): Promise<boolean> {
  if (path.isAbsolute(command) || command.includes("/") || command.includes("\\")) {
    try {
      await vscode.workspace.fs.stat(vscode.Uri.file(path.resolve(command)));
      return true;
    } catch {
      return false;
    }
  }
  return (await findOnPath(command)) !== undefined;
}

let controller: LichController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<LichController> {
  controller = new LichController(context);
  context.subscriptions.push(controller);
  controller.registerCommands();
  await controller.start();
  return controller;
}

export async function deactivate(): Promise<void> {
  const current = controller;
  controller = undefined;
  await current?.stop();
}
