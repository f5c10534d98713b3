/**
 * First-run guidance. While the server's lich.status says no provider is configured
 * (`provider.configured: false`: the built-in default, Ollama on localhost, would be tried), the
 * context key `lich.noModel` is true and the Lich view container shows the "Get Started" view: a
 * tree view with no items whose `viewsWelcome` content (package.json) says what is missing, with
 * three buttons: "Set Up a Model" (runModelSetup: kind, URL, model, key variable, written to the
 * user config file the server reads), "Try the Demo" (`lich demo` in a terminal: a recorded
 * conversation, no key, no network) and "Read the Docs" (the extension's README).
 *
 * A tree view and not the chat's webview: VS Code draws welcome content only in tree views, and it
 * keeps this out of the chat's own files.
 */
import {
  SETUP_KINDS,
  SETUP_PROVIDER_NAME,
  UserConfigError,
  userConfigWithProvider,
  type SetupKindInfo,
  type SetupProvider,
} from "./configTemplate";

export const WELCOME_VIEW_ID = "lichClient.welcome";
/** The context key the welcome view's `when` reads. */
export const NO_MODEL_CONTEXT = "lich.noModel";
export { SETUP_MODEL_COMMAND as SETUP_COMMAND } from "./status";
export const DEMO_COMMAND = "lichClient.tryDemo";
export const DOCS_COMMAND = "lichClient.openSetupDocs";
export const SETUP_TITLE = "Lich: Set Up a Model";
export const DEMO_TERMINAL_NAME = "Lich demo";
const OPEN_FILE_ACTION = "Open Config File";

/** `lich.status`'s `provider.configured`: false only when the server says so (older servers: undefined). */
export function providerConfigured(status: unknown): boolean | undefined {
  const provider = status && typeof status === "object" ? (status as Record<string, unknown>).provider : undefined;
  if (!provider || typeof provider !== "object") {
    return undefined;
  }
  const configured = (provider as Record<string, unknown>).configured;
  return typeof configured === "boolean" ? configured : undefined;
}

export interface KindPickItem {
  label: string;
  detail: string;
  info: SetupKindInfo;
}

/** The parts of vscode.window the setup needs (tests pass fakes). */
export interface SetupUi {
  showQuickPick(items: KindPickItem[], options: { title: string; placeHolder: string; ignoreFocusOut: boolean }): Thenable<KindPickItem | undefined>;
  showInputBox(options: {
    title: string;
    prompt: string;
    value: string;
    ignoreFocusOut: boolean;
    validateInput?(value: string): string | undefined;
  }): Thenable<string | undefined>;
  showInformationMessage(message: string, ...actions: string[]): Thenable<string | undefined>;
  showWarningMessage(message: string, ...actions: string[]): Thenable<string | undefined>;
  showErrorMessage(message: string, ...actions: string[]): Thenable<string | undefined>;
}

export interface SetupDeps {
  ui: SetupUi;
  /** The user config file (userConfigPath). */
  configPath: string;
  /** Its text; undefined when it does not exist. */
  readFile(path: string): Promise<string | undefined>;
  /** Write it (creating its folder). */
  writeFile(path: string, text: string): Promise<void>;
  /** The extension host's environment: is the key variable set where the server starts? */
  env: Record<string, string | undefined>;
  /** Open the config file in an editor. */
  openFile(path: string): void;
  /** After the file is written: the server reads it again (its next command checks the file). */
  written(): Promise<void>;
  /** Whether the `lich.provider.*` settings name a provider: they come before the user config. */
  settingsProvider?(): boolean;
}

export interface SetupOutcome {
  provider: SetupProvider;
  path: string;
}

function validUrl(value: string): string | undefined {
  return /^https?:\/\/[^\s/]+/i.test(value.trim()) ? undefined : "A URL starting with http:// or https://";
}

function validEnvName(value: string): string | undefined {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(value.trim()) ? undefined : "The name of an environment variable, e.g. OPENAI_API_KEY (never the key itself)";
}

function validModel(value: string): string | undefined {
  return value.trim() ? undefined : "The model name the provider expects, e.g. gpt-4o-mini";
}

/**
 * Ask for the provider kind, its URL, its model and (except Ollama) the environment variable that
 * holds the key, then write them to the user config. Undefined when the user stopped or the file
 * could not be written (said in an error message).
 */
export async function runModelSetup(deps: SetupDeps): Promise<SetupOutcome | undefined> {
  const items = SETUP_KINDS.map((info) => ({ label: info.label, detail: info.detail, info }));
  const picked = await deps.ui.showQuickPick(items, { title: SETUP_TITLE, placeHolder: "Which kind of model provider?", ignoreFocusOut: true });
  if (!picked) {
    return undefined;
  }
  const info = picked.info;
  const baseUrl = await deps.ui.showInputBox({
    title: `${SETUP_TITLE}: ${info.label} URL`,
    prompt: "The provider's base URL",
    value: info.baseUrl,
    ignoreFocusOut: true,
    validateInput: validUrl,
  });
  if (baseUrl === undefined) {
    return undefined;
  }
  const model = await deps.ui.showInputBox({
    title: `${SETUP_TITLE}: model`,
    prompt: "The model name sent to the provider",
    value: info.model,
    ignoreFocusOut: true,
    validateInput: validModel,
  });
  if (model === undefined) {
    return undefined;
  }
  const provider: SetupProvider = { name: SETUP_PROVIDER_NAME, kind: info.kind, base_url: baseUrl.trim(), model: model.trim() };
  if (info.keyEnv) {
    const keyEnv = await deps.ui.showInputBox({
      title: `${SETUP_TITLE}: API key`,
      prompt: "The environment variable that holds the API key (the key itself is never written to the file)",
      value: info.keyEnv,
      ignoreFocusOut: true,
      validateInput: validEnvName,
    });
    if (keyEnv === undefined) {
      return undefined;
    }
    provider.api_key_env = keyEnv.trim();
  }
  let text: string;
  try {
    text = userConfigWithProvider(await deps.readFile(deps.configPath), provider);
  } catch (err) {
    const why = err instanceof UserConfigError ? err.message : err instanceof Error ? err.message : String(err);
    const choice = await deps.ui.showErrorMessage(`Lich: ${deps.configPath} was left as it is: ${why}. Add the provider there by hand.`, OPEN_FILE_ACTION);
    if (choice === OPEN_FILE_ACTION) {
      deps.openFile(deps.configPath);
    }
    return undefined;
  }
  try {
    await deps.writeFile(deps.configPath, text);
  } catch (err) {
    void deps.ui.showErrorMessage(`Lich: could not write ${deps.configPath}: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
  await deps.written();
  const where = `${info.label} ${provider.model} at ${provider.base_url}`;
  const show = (choice: string | undefined): void => {
    if (choice === OPEN_FILE_ACTION) {
      deps.openFile(deps.configPath);
    }
  };
  if (deps.settingsProvider?.()) {
    void deps.ui
      .showWarningMessage(
        `Lich: ${where} is saved in ${deps.configPath}, but the lich.provider.kind setting names a provider, and VS Code's settings come first: clear it to use this one.`,
        OPEN_FILE_ACTION,
      )
      .then(show);
  } else if (provider.api_key_env && !deps.env[provider.api_key_env]) {
    void deps.ui
      .showWarningMessage(
        `Lich: ${where} is saved in ${deps.configPath}, but ${provider.api_key_env} is not set in VS Code's environment: set it in your shell and start VS Code from there.`,
        OPEN_FILE_ACTION,
      )
      .then(show);
  } else {
    void deps.ui.showInformationMessage(`Lich: ${where} is saved in ${deps.configPath}.`, OPEN_FILE_ACTION).then(show);
  }
  return { provider, path: deps.configPath };
}

/**
 * The `lich demo` command line for the server the extension starts: the same Python with
 * `-m lich_cli demo` when the server runs as `python -m lich_lsp`, else `lich` next to `lich-lsp`
 * (the same install's scripts); undefined when neither applies (a custom server command).
 */
export function demoCommand(server: { command: string; args: readonly string[] } | undefined): { command: string; args: string[] } | undefined {
  if (!server) {
    return undefined;
  }
  const args = server.args;
  const module = args.indexOf("-m");
  if (module >= 0 && args[module + 1] === "lich_lsp") {
    return { command: server.command, args: [...args.slice(0, module), "-m", "lich_cli", "demo"] };
  }
  const match = /^(.*?)lich-lsp(\.exe)?$/.exec(server.command);
  if (match && args.length === 0) {
    return { command: `${match[1]}lich${match[2] ?? ""}`, args: ["demo"] };
  }
  return undefined;
}

/** One shell word: as it is when plain, else in single quotes (a POSIX shell reads it back as is). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** The demo as a line for the terminal's shell: the terminal stays open on the output afterwards. */
export function demoShellLine(demo: { command: string; args: readonly string[] }): string {
  return [demo.command, ...demo.args].map(shellWord).join(" ");
}
