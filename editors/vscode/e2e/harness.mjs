// The plumbing the VS Code end-to-end drivers (run.mjs, chat_daily.mjs, editor.mjs, next_edit.mjs)
// share: where code-server, playwright-core, Chromium and the .vsix are; waiting on a condition;
// child processes in their own process groups; the fake models; starting code-server and
// Chromium; the workbench helpers every driver drives VS Code with; the `E2E_RESULT {json}` line.
// Each driver keeps its scenarios, its own result shape and its own exit codes.
//
// Environment: LICH_PYTHON (interpreter with lich_lsp importable; default python3),
// LICH_VSCODE_CACHE (install.sh's cache, default <repo>/.ci/cache/vscode), LICH_VSIX (default
// editors/vscode/dist/lich-lsp.vsix), LICH_ARTIFACTS_DIR (default <repo>/test-artifacts),
// LICH_CHROMIUM (default /usr/bin/chromium), LICH_E2E_ONLY=a,b (the scenarios to run).
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, "..", "..", "..");
export const CACHE = process.env.LICH_VSCODE_CACHE || path.join(REPO, ".ci", "cache", "vscode");
export const CS_ENTRY = path.join(CACHE, "code-server", "node_modules", "code-server", "out", "node", "entry.js");
export const TOOLS_PKG = path.join(CACHE, "tools", "package.json");
export const VSIX = process.env.LICH_VSIX || path.join(REPO, "editors", "vscode", "dist", "lich-lsp.vsix");
export const PYTHON = process.env.LICH_PYTHON || "python3";
export const ARTIFACTS = process.env.LICH_ARTIFACTS_DIR || path.join(REPO, "test-artifacts");
export const CHROMIUM = process.env.LICH_CHROMIUM || "/usr/bin/chromium";
/** The environment variable the fake models' API key is read from (the settings' lich.apiKeyEnv). */
export const FAKE_KEY_ENV = "LICH_E2E_FAKE_KEY";
/** LICH_E2E_ONLY=a,b: the scenarios to run (while working on one; the tests run them all). */
export const ONLY = (process.env.LICH_E2E_ONLY || "").split(",").map((name) => name.trim()).filter(Boolean);
export const STEP_TIMEOUT_MS = 60_000;

/** User settings every driver starts from: no welcome page, tips, telemetry, updates or autosave. */
export const BASE_SETTINGS = {
  "workbench.startupEditor": "none",
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "files.autoSave": "off",
  "files.hotExit": "off",
  "window.restoreWindows": "none",
  "chat.commandCenter.enabled": false,
};

/** When the driver started (module load): the log's clock and the result's total_ms. */
export const started = Date.now();
const children = [];
let logTag = "vscode-e2e";
let pollMs = 200;
let timeoutDetail = () => "";

/**
 * Set the driver's log tag, how often waitFor looks again, and what a timed-out wait adds to its
 * error (e.g. what the editor drew last).
 */
export function configure({ tag, poll, onTimeout }) {
  logTag = tag ?? logTag;
  pollMs = poll ?? pollMs;
  timeoutDetail = onTimeout ?? timeoutDetail;
}

/** A progress line on stderr, with the seconds since the start (stdout carries only the result). */
export function log(message) {
  process.stderr.write(`[${logTag} +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `fn` until it returns something truthy (the condition is the event waited for); a hang fails at the deadline. */
export async function waitFor(what, fn, timeoutMs = STEP_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) {
        return last;
      }
    } catch (err) {
      last = err;
    }
    await sleep(pollMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? ` (${last.message})` : ""}${timeoutDetail()}`);
}

/** A TCP port nothing listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Start a child in its own process group so the whole tree (extension host, server) can be killed at the end. */
export function startGroup(command, args, options) {
  const child = spawn(command, args, { ...options, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return child;
}

function killGroup(child, signal) {
  if (!child || child.pid === undefined) {
    return;
  }
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** End every child started with startGroup: SIGTERM, up to 5 s to go, then SIGKILL. */
export async function stopAll() {
  for (const child of children) {
    killGroup(child, "SIGTERM");
  }
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && children.some((c) => c.exitCode === null && c.signalCode === null)) {
    await sleep(100);
  }
  for (const child of children) {
    killGroup(child, "SIGKILL");
  }
}

/** Write a child's stdout and stderr to `file`. */
export function logTo(file, child) {
  const out = fs.createWriteStream(file);
  child.stdout.pipe(out);
  child.stderr.pipe(out);
}

/**
 * Start a loopback fake model (`python <args>`, which prints `LISTENING <url>`) and return its
 * URL; its output goes to `logFile`. `what` names it in the errors.
 */
export async function startFakeModel(args, env, logFile, what = "fake provider") {
  const child = startGroup(PYTHON, args, { cwd: REPO, env });
  const url = await new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`${what} did not print LISTENING`)), 30_000);
    child.stdout.on("data", (chunk) => {
      buffer += chunk.toString();
      const match = /LISTENING (http:\/\/\S+)/.exec(buffer);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`${what} exited with ${code}`)));
  });
  logTo(logFile, child);
  return url;
}

/** The arguments of tests/support/fake_provider.py answering from `scriptFile` (recording to `requestsFile` if given). */
export function fakeProviderArgs(scriptFile, requestsFile) {
  const args = ["-m", "tests.support.fake_provider", "--port", "0", "--script", scriptFile];
  return requestsFile ? [...args, "--requests", requestsFile] : args;
}

/** The requests a fake model recorded (one JSON object a line); none before the file exists. */
export function requestsSent(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
}

/** An error that means the setup failed (the drivers exit 2 for it, not 1). */
export function setupError(message) {
  return Object.assign(new Error(message), { setup: true });
}

/** Check that code-server, playwright-core, Chromium and the .vsix are there; playwright-core's `chromium`. */
export function requireTools() {
  for (const [what, file] of [
    ["code-server (run .ci/vscode/install.sh)", CS_ENTRY],
    ["playwright-core (run .ci/vscode/install.sh)", TOOLS_PKG],
    ["chromium (apt-get install chromium)", CHROMIUM],
    ["the packaged extension (run .ci/vscode/build.sh)", VSIX],
  ]) {
    if (!fs.existsSync(file)) {
      throw setupError(`missing ${what}: ${file}`);
    }
  }
  return createRequire(TOOLS_PKG)("playwright-core").chromium;
}

/** Remove the screenshots an earlier run left in ARTIFACTS (`<prefix>*.png`): a failed-* one must not pass for this run's. */
export function clearScreenshots(prefix) {
  for (const name of fs.readdirSync(ARTIFACTS)) {
    if (name.startsWith(prefix) && name.endsWith(".png")) {
      fs.rmSync(path.join(ARTIFACTS, name), { force: true });
    }
  }
}

/** A fresh scratch folder under the temp dir with home/, user-data/User/ and extensions/ in it. */
export function makeScratch(prefix) {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const home = path.join(scratch, "home");
  const userData = path.join(scratch, "user-data");
  const extensionsDir = path.join(scratch, "extensions");
  for (const dir of [home, path.join(userData, "User"), extensionsDir]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  return { scratch, home, userData, extensionsDir };
}

/**
 * The environment of code-server and everything it starts: HOME and the XDG folders in the
 * scratch `home` (the server's trust records, "allow always" answers too, stay there), lich_lsp
 * importable from the checkout, no real API key. `extra` is added.
 */
export function isolatedEnv(home, extra = {}) {
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local", "state"),
    PYTHONPATH: [REPO, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
    ...extra,
  };
  delete env.OPENAI_API_KEY;
  delete env.ANTHROPIC_API_KEY;
  return env;
}

/**
 * Write the User settings, and their lich.server.* keys as the Machine settings: code-server
 * windows are remote windows, and VS Code drops machine-scoped settings (lich.server.* are
 * machine-overridable) from User settings there and reads them from the remote machine's
 * settings, <user-data>/Machine/settings.json. Whether the User copy is dropped depends on when
 * the extension's settings were registered, so without this copy a window sometimes started
 * with no server command.
 */
export function writeSettings(userData, settings) {
  fs.writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify(settings, null, 2));
  const machine = Object.fromEntries(Object.entries(settings).filter(([key]) => key.startsWith("lich.server.")));
  fs.mkdirSync(path.join(userData, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(userData, "Machine", "settings.json"), JSON.stringify(machine, null, 2));
}

/** code-server's arguments for this scratch folder's user data and extensions. */
export function codeServerArgs(userData, extensionsDir) {
  return ["--user-data-dir", userData, "--extensions-dir", extensionsDir];
}

/** Install the packaged extension (.vsix) into code-server's extensions folder. */
export function installVsix(env, csArgs) {
  const install = spawnSync(process.execPath, [CS_ENTRY, ...csArgs, "--install-extension", VSIX, "--force"], { env, encoding: "utf8", timeout: 120_000 });
  if (install.status !== 0 || !/successfully installed/i.test(install.stdout + install.stderr)) {
    throw setupError(`installing the .vsix failed: ${install.stdout}\n${install.stderr}`);
  }
}

/**
 * Start code-server on a free loopback port with `folder` open (no auth, no telemetry, no
 * update check); its output goes to `logFile`. Returns its base URL once /healthz answers.
 */
export async function startCodeServer({ env, csArgs, folder, cwd, logFile, timeoutMs }) {
  const port = await freePort();
  const codeServer = startGroup(
    process.execPath,
    [CS_ENTRY, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", ...csArgs, folder],
    { env, cwd },
  );
  logTo(logFile, codeServer);
  const base = `http://127.0.0.1:${port}`;
  await waitFor("code-server /healthz", async () => (await fetch(`${base}/healthz`)).ok, timeoutMs);
  return base;
}

/** Headless Chromium (playwright-core's `chromium`) with nothing that reaches the network. */
export function launchChromium(chromium) {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
}

/** The browser context every driver uses: one window size, so the screenshots match. */
export function newContext(browser) {
  return browser.newContext({ viewport: { width: 1400, height: 900 } });
}

/** Save a screenshot of `page` as `file` and list it in `result.screenshots`. */
export async function screenshotTo(page, file, result) {
  await page.screenshot({ path: file });
  result.screenshots.push(file);
  return file;
}

/** The one stdout line the pytest wrappers read. */
export function printResult(result) {
  process.stdout.write(`E2E_RESULT ${JSON.stringify(result)}\n`);
}

// --- the workbench ---------------------------------------------------------------------------

export async function quickInputVisible(page) {
  return page.evaluate(() => {
    const widget = document.querySelector(".quick-input-widget");
    return !!widget && widget.style.display !== "none" && getComputedStyle(widget).display !== "none";
  });
}

export async function quickInputTitle(page) {
  return page.evaluate(() => document.querySelector(".quick-input-widget .quick-input-title")?.textContent || "");
}

/** Click the row of the visible quick pick whose label is exactly `label`. */
export async function pickRow(page, label) {
  return waitFor(`the row "${label}"`, () =>
    page.evaluate((wanted) => {
      const rows = [...document.querySelectorAll(".quick-input-list .monaco-list-row")];
      const row = rows.find((r) => (r.querySelector(".label-name")?.textContent || "").replace(/\u00a0/g, " ").trim() === wanted);
      if (!row) {
        return false;
      }
      row.click();
      return true;
    }, label),
  );
}

/**
 * Run a palette command by its exact title (F1, type, click that row): "Ask Agent" must not
 * pick "Ask Agent About Selection".
 */
export async function runCommand(page, title) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await waitFor("the command palette", () => quickInputVisible(page), 15_000);
  await page.keyboard.type(title, { delay: 5 });
  return pickRow(page, title);
}

/** The active tab's label, in any editor group (`activeTab` of openFile). */
const ANY_GROUP_TAB = ".tabs-container .tab.active .label-name, .tabs-container .tab.active .monaco-icon-label";

/**
 * Open a workspace file with Quick Open (Ctrl+P): click the exact file row once the list is
 * filtered (Enter could pick a stale first row), then wait for its tab (`activeTab`: the selector
 * of the active tab's label).
 */
export async function openFile(page, name, activeTab = ANY_GROUP_TAB) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+P");
  await waitFor("quick open", () => quickInputVisible(page), 15_000);
  await page.locator(".quick-input-widget input.input").first().fill(name);
  await waitFor(`quick open result ${name}`, () =>
    page.evaluate((wanted) => {
      const input = document.querySelector(".quick-input-widget input.input");
      if (!input || input.value !== wanted) {
        return false;
      }
      const rows = [...document.querySelectorAll(".quick-input-list .monaco-list-row")];
      const row = rows.find((r) => (r.querySelector(".label-name")?.textContent || "").trim() === wanted);
      if (!row) {
        return false;
      }
      row.click();
      return true;
    }, name),
  );
  await waitFor(`editor tab ${name}`, () =>
    page.evaluate(
      ([wanted, selector]) => {
        const active = document.querySelector(selector);
        return !!active && active.textContent.includes(wanted);
      },
      [name, activeTab],
    ),
  );
}

/** The active editor's text: Monaco recycles line elements, so sort them by their top offset. */
export async function editorText(page) {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-group-container.active .monaco-editor .view-lines") || document.querySelector(".monaco-editor .view-lines");
    if (!editor) {
      return "";
    }
    const lines = [...editor.querySelectorAll(".view-line")].map((el) => ({ top: parseFloat(el.style.top || "0"), text: el.textContent.replace(/\u00a0/g, " ") }));
    lines.sort((a, b) => a.top - b.top);
    return lines.map((l) => l.text).join("\n");
  });
}

/** The status bar items' texts, white space folded. */
export async function statusTexts(page) {
  return page.evaluate(() => [...document.querySelectorAll(".statusbar-item")].map((el) => el.textContent.replace(/\s+/g, " ").trim()).filter(Boolean));
}

/** The Lich status bar item's text ("" while there is none). */
export async function lichStatus(page) {
  return (await statusTexts(page)).find((text) => /^Lich\b/.test(text)) || "";
}

/** The chat view's document: the webview is an iframe in the workbench with the page in an inner frame. */
export function chatFrame(page) {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
}
