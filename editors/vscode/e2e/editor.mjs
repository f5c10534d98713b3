#!/usr/bin/env node
// End-to-end test of the extension's editor side (issue #45) in a real VS Code (code-server
// 4.100.3) driven by headless Chromium, like a person: status bar, side bar, palette, notifications,
// the editor. One code-server whose user has NO model set up (no provider in the User settings, no
// key in the environment, an empty user config dir):
// - welcome: the status item says "Lich: no model"; the Lich side bar shows the "Get Started" view
//   with Set Up a Model / Try the Demo / Read the Docs; Try the Demo opens a terminal running
//   `lich demo`; Set Up a Model (OpenAI-compatible, the fake provider's URL, its model, the key
//   variable) writes the user config file the server reads; the status item then names the model
//   and the view goes.
// - notify: in a folder with its own model, the "Ask agent…" code action's task ends in ONE
//   notification (`Lich: <prompt>: <first answer line>`) with an "Open chat" button, and nothing
//   from the server; Open chat shows that task's thread in the chat; a turn sent from the chat ends
//   in the chat with no notification (checked after a later notification, which shows in order).
// - review: in a review-mode folder, Ask Agent's patch waits as a hunk: the editor shows the old
//   line marked deleted and the proposed line drawn after it (decorations read from the DOM), with
//   the Accept | Reject CodeLens; Accept puts the new line in the editor and the marks go.
// - ghost_status: in a folder whose completion model is a closed port, typing asks for ghost text,
//   the completion fails, and the ghost-text status item says it is failing, its tooltip says why.
//
// Environment as run.mjs: LICH_PYTHON, LICH_VSCODE_CACHE, LICH_VSIX, LICH_ARTIFACTS_DIR,
// LICH_CHROMIUM, LICH_E2E_KEEP=1, LICH_E2E_ONLY=a,b; LICH_DOCS_DIR is where the ghost-text
// screenshot (vscode-completion-status.png) goes. Prints one line `E2E_RESULT {json}`; exits 0 when
// every scenario passed, 1 otherwise, 2 when the setup failed.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ARTIFACTS,
  BASE_SETTINGS,
  FAKE_KEY_ENV,
  HERE,
  ONLY,
  PYTHON,
  REPO,
  chatFrame,
  clearScreenshots,
  codeServerArgs,
  configure,
  fakeProviderArgs,
  freePort,
  installVsix,
  isolatedEnv,
  launchChromium,
  lichStatus,
  log,
  makeScratch,
  newContext,
  openFile,
  pickRow,
  printResult,
  quickInputTitle,
  quickInputVisible,
  requireTools,
  runCommand,
  screenshotTo,
  setupError,
  startCodeServer,
  startFakeModel,
  started,
  statusTexts,
  stopAll,
  waitFor,
  writeSettings,
} from "./harness.mjs";

configure({ tag: "vscode-editor-e2e" });

const DOCS_DIR = process.env.LICH_DOCS_DIR || path.join(ARTIFACTS, "docs-screenshots");
const SCENARIOS = ["welcome", "notify", "review", "ghost_status"];
const SERVER_START_TIMEOUT_MS = 60_000;

const result = { ok: false, scenarios: {}, screenshots: [], errors: [], timings_ms: {} };

// --- browser helpers (as run.mjs) ---------------------------------------------------------------

/** Answer an input box whose title contains `titlePart`: its value replaced by `text`, then Enter. */
async function answerInputBox(page, titlePart, text) {
  await waitFor(`the input box "${titlePart}"`, async () => (await quickInputVisible(page)) && (await quickInputTitle(page)).includes(titlePart));
  const input = page.locator(".quick-input-widget input.input").first();
  await input.fill(text);
  await waitFor(`the input box to hold "${text}"`, () => input.evaluate((el, wanted) => el.value === wanted, text));
  await page.keyboard.press("Enter");
  // The next step's box (or none) replaces this one: wait until this title is gone.
  await waitFor(`the input box "${titlePart}" to close`, async () => !(await quickInputVisible(page)) || !(await quickInputTitle(page)).includes(titlePart), 15_000);
}

async function typeIntoQuickInput(page, expectedTitle, text) {
  await waitFor(`input box "${expectedTitle}"`, async () => (await quickInputVisible(page)) && (await quickInputTitle(page)).includes(expectedTitle));
  const input = page.locator(".quick-input-widget input.input").first();
  await input.fill(text);
  await waitFor(`the typed prompt as the first item`, () =>
    page.evaluate((wanted) => {
      const first = document.querySelector(".quick-input-list .monaco-list-row .label-name");
      return !!first && first.textContent.replace(/\u00a0/g, " ").trim() === wanted;
    }, text),
  );
  await page.keyboard.press("Enter");
}

/** Every notification (toasts and the notification center): message and buttons. */
async function notificationItems(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll(".notification-list-item")].map((item) => ({
      message: (item.querySelector(".notification-list-item-message")?.textContent || "").replace(/\u00a0/g, " ").trim(),
      buttons: [...item.querySelectorAll(".notification-list-item-buttons-container .monaco-button")].map((b) => b.textContent.trim()),
    })),
  );
}

async function clearNotifications(page) {
  await runCommand(page, "Notifications: Clear All Notifications");
  await waitFor("the notifications to clear", async () => (await notificationItems(page)).length === 0, 10_000);
}

async function screenshot(page, name) {
  return screenshotTo(page, path.join(ARTIFACTS, `vscode-editor-${name}.png`), result);
}

async function docsScreenshot(page, name) {
  fs.mkdirSync(DOCS_DIR, { recursive: true });
  return screenshotTo(page, path.join(DOCS_DIR, `${name}.png`), result);
}

async function chatTurns(chat) {
  return chat.locator("section.turn").evaluateAll((sections) =>
    sections.map((s) => ({
      prompt: s.querySelector(".prompt-text")?.textContent || "",
      answer: [...s.querySelectorAll(".markdown")].map((m) => m.textContent).join("\n"),
      live: s.classList.contains("live"),
    })),
  );
}

/** Open a folder in a new tab; ready once the Lich status item matches `ready`. */
async function openWorkspacePage(context, base, folder, ready, onPage) {
  const page = await context.newPage();
  onPage(page);
  await page.goto(`${base}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: SERVER_START_TIMEOUT_MS });
  try {
    return { page, status: await waitFor(`the Lich status item ${ready}`, async () => { const text = await lichStatus(page); return ready.test(text) ? text : false; }, SERVER_START_TIMEOUT_MS) };
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : err}; status bar: ${JSON.stringify(await statusTexts(page).catch(() => "?"))}`);
  }
}

async function scenario(name, fn, pageOf) {
  if (ONLY.length > 0 && !ONLY.includes(name)) {
    return;
  }
  const t0 = Date.now();
  log(`scenario ${name}`);
  try {
    const details = await fn();
    result.scenarios[name] = { ok: true, ms: Date.now() - t0, ...(details || {}) };
  } catch (err) {
    result.scenarios[name] = { ok: false, ms: Date.now() - t0, error: err instanceof Error ? err.message : String(err) };
    const page = pageOf();
    if (page) {
      result.scenarios[name].notifications = await notificationItems(page).catch(() => []);
      await screenshot(page, `failed-${name}`).catch(() => undefined);
    }
    log(`scenario ${name} FAILED: ${err instanceof Error ? err.stack : err}`);
  }
}

function folderWith(root, name, files, settings) {
  const folder = path.join(root, name);
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
    fs.writeFileSync(path.join(folder, file), text);
  }
  if (settings) {
    fs.mkdirSync(path.join(folder, ".vscode"), { recursive: true });
    fs.writeFileSync(path.join(folder, ".vscode", "settings.json"), JSON.stringify(settings, null, 2));
  }
  return folder;
}

function providerSettings(url) {
  return { "lich.provider.kind": "openai_compat", "lich.baseUrl": `${url}/v1`, "lich.model": "fake-model", "lich.apiKeyEnv": FAKE_KEY_ENV };
}

// --- scenarios ---------------------------------------------------------------------------------

/** The welcome view's text and buttons, once it shows in the side bar. */
async function welcomeView(page) {
  return page.evaluate(() => {
    for (const pane of document.querySelectorAll(".pane")) {
      const title = (pane.querySelector(".pane-header .title")?.textContent || "").trim();
      const content = pane.querySelector(".welcome-view-content");
      if (!content || !/get started/i.test(title)) {
        continue;
      }
      return {
        title,
        text: content.textContent.replace(/\s+/g, " ").trim(),
        buttons: [...content.querySelectorAll(".monaco-button")].map((b) => b.textContent.trim()),
      };
    }
    return false;
  });
}

async function welcomeScenario(context, base, folder, configFile, fakeUrl, onPage) {
  const { page, status } = await openWorkspacePage(context, base, folder, /^Lich: no model$/, onPage);
  await runCommand(page, "Lich: Open Chat");
  const view = await waitFor("the Get Started view in the Lich side bar", () => welcomeView(page));
  await screenshot(page, "welcome");
  // Try the Demo: a terminal named "Lich demo" running the recorded conversation.
  await page.locator(".welcome-view-content .monaco-button", { hasText: /^Try the Demo$/ }).click();
  const terminal = await waitFor("the Lich demo terminal", () =>
    page.evaluate(() => {
      const names = [...document.querySelectorAll(".terminal-tabs-entry, .single-terminal-tab, .terminal-tab, .tabs-list .monaco-list-row")].map((el) => el.textContent.replace(/\s+/g, " ").trim());
      const title = (document.querySelector(".panel .title-label, .panel .composite.title")?.textContent || "").trim();
      const rows = [...document.querySelectorAll(".xterm-rows > div")].map((el) => el.textContent.replace(/\u00a0/g, " ")).join("\n");
      const found = names.some((name) => name.includes("Lich demo")) || title.includes("Lich demo");
      // Once the shell has echoed the command the extension typed.
      return found && rows.includes("lich_cli demo") ? { names, rows: rows.slice(0, 2000) } : false;
    }),
  );
  // The demo prints its steps as it plays: wait for its closing lines in the terminal.
  const demoText = await waitFor("the demo's closing lines in the terminal", () =>
    page.evaluate(() => {
      const rows = [...document.querySelectorAll(".xterm-rows > div")].map((el) => el.textContent.replace(/\u00a0/g, " ")).join("\n");
      return /a real provider/.test(rows) ? rows : false;
    }),
    90_000,
  );
  await screenshot(page, "demo");
  // Read the Docs: the extension's README in a markdown preview.
  await page.locator(".welcome-view-content .monaco-button", { hasText: /^Read the Docs$/ }).click();
  const docsTab = await waitFor("the README preview tab", () =>
    page.evaluate(() => {
      const tab = [...document.querySelectorAll(".tabs-container .tab")].map((t) => (t.textContent || "").replace(/\s+/g, " ").trim()).find((t) => /README/.test(t));
      return tab || false;
    }),
  );
  // Set Up a Model: kind, URL, model, key variable.
  await page.locator(".welcome-view-content .monaco-button", { hasText: /^Set Up a Model$/ }).click();
  await waitFor("the provider kind pick", async () => (await quickInputVisible(page)) && (await quickInputTitle(page)).includes("Lich: Set Up a Model"));
  await pickRow(page, "OpenAI-compatible");
  await answerInputBox(page, "URL", `${fakeUrl}/v1`);
  await answerInputBox(page, "model", "fake-model");
  await answerInputBox(page, "API key", FAKE_KEY_ENV);
  const written = await waitFor("the user config file", () => (fs.existsSync(configFile) ? fs.readFileSync(configFile, "utf8") : false));
  const after = await waitFor("the status item to name the model", async () => {
    const text = await lichStatus(page);
    return /^Lich: openai_compat\/fake-model$/.test(text) ? text : false;
  });
  const saved = await waitFor("the saved notification", async () => (await notificationItems(page)).find((n) => n.message.startsWith("Lich: OpenAI-compatible fake-model")));
  const viewGone = await waitFor("the Get Started view to go", async () => !(await welcomeView(page)), 15_000).catch(() => false);
  await screenshot(page, "welcome-done");
  return { status_before: status, view, terminal, demo_text: demoText.slice(-2000), docs_tab: docsTab, config: JSON.parse(written), status_after: after, saved, view_gone: viewGone };
}

async function notifyScenario(context, base, folder, plan, onPage) {
  const { page } = await openWorkspacePage(context, base, folder, /^Lich: openai_compat\/fake-model$/, onPage);
  await openFile(page, "hello.py");
  await clearNotifications(page);
  // The server's "Ask agent…" code action on a selection: the middleware asks for the prompt.
  await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("Shift+End");
  await runCommand(page, "Refactor...");
  await waitFor("the Ask agent code action", () =>
    page.evaluate(() => {
      const row = [...document.querySelectorAll(".action-widget .monaco-list-row")].find((r) => r.textContent.includes("Ask agent"));
      if (!row) {
        return false;
      }
      row.click();
      return true;
    }),
  );
  const prompt = "Explain this line";
  await typeIntoQuickInput(page, "Lich: Ask Agent About Selection", prompt);
  const notice = await waitFor("the task's notification", async () => (await notificationItems(page)).find((n) => n.message.includes(plan.answer)), 90_000);
  await waitFor("the status bar to drop the task", async () => !/task/.test(await lichStatus(page)), 30_000);
  const afterTask = await notificationItems(page);
  await screenshot(page, "task-notification");
  // Open chat: the chat view with that task's thread.
  await page.locator(".notification-list-item").filter({ hasText: plan.answer }).first().locator(".monaco-button", { hasText: /^Open chat$/ }).click();
  const chat = chatFrame(page);
  const opened = await waitFor("the task's thread in the chat", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 1 && turns[0].answer.includes(plan.answer) ? turns : false;
  });
  await clearNotifications(page);
  // A turn from the chat: its answer in the chat, no notification.
  const input = chat.locator("textarea.input");
  await input.click();
  await page.keyboard.type("Is that all?", { delay: 5 });
  await page.keyboard.press("Enter");
  const chatTurnsAfter = await waitFor("the chat turn's answer", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 2 && !turns[1].live && turns[1].answer.includes(plan.chat_answer) ? turns : false;
  }, 90_000);
  // Notifications show in order: once a later one is there, one for the chat turn would be too.
  await runCommand(page, "Lich: Cancel Task");
  await waitFor("the later notification", async () => (await notificationItems(page)).some((n) => n.message === "Lich: no task is running."), 30_000);
  const afterChat = await notificationItems(page);
  return { notice, after_task: afterTask, opened_turns: opened, chat_turns: chatTurnsAfter, after_chat: afterChat };
}

/**
 * What the editor draws for the review decorations, per line: its text, the text of `after`
 * decorations (CSS ::after content, or injected spans), whether it is struck through; and the lenses.
 */
async function reviewMarks(page) {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-group-container.active .monaco-editor");
    if (!editor) {
      return { lines: [], struck: [], after: [], lenses: [] };
    }
    const unquote = (content) =>
      content
        .replace(/^"|"$/g, "")
        .replace(/\\(.)/g, "$1")
        .replace(/\u00a0/g, " ");
    const lines = [...editor.querySelectorAll(".view-lines .view-line")].map((el) => {
      const spans = [...el.querySelectorAll("span")];
      const after = spans
        .map((s) => getComputedStyle(s, "::after").content)
        .filter((c) => c && c !== "none" && c !== "normal" && c !== '""')
        .map(unquote);
      const struck = spans.some((s) => getComputedStyle(s).textDecorationLine.includes("line-through"));
      return { top: parseFloat(el.style.top || "0"), text: el.textContent.replace(/\u00a0/g, " "), after, struck };
    });
    lines.sort((a, b) => a.top - b.top);
    return {
      lines: lines.map((l) => l.text),
      struck: lines.filter((l) => l.struck).map((l) => l.text),
      after: lines.flatMap((l) => l.after),
      lenses: [...editor.querySelectorAll(".codelens-decoration a")].map((a) => a.textContent.trim()),
    };
  });
}

async function reviewScenario(context, base, folder, plan, onPage) {
  const { page } = await openWorkspacePage(context, base, folder, /^Lich: openai_compat\/fake-model$/, onPage);
  await openFile(page, "hello.py");
  await runCommand(page, "Lich: Ask Agent");
  await typeIntoQuickInput(page, "Lich: Ask Agent", "Use an f-string in greet()");
  let last;
  const shown = await waitFor("the proposed line drawn in the editor", async () => {
    const marks = (last = await reviewMarks(page));
    const drawn = [...marks.lines, ...marks.after].join("\n");
    return drawn.includes(plan.new_line.trim()) && marks.struck.length > 0 && marks.lenses.includes("Accept") ? marks : false;
  }, 90_000).catch((err) => {
    throw new Error(`${err.message}; drawn: ${JSON.stringify(last)}`);
  });
  const diskBefore = fs.readFileSync(path.join(folder, "hello.py"), "utf8");
  await screenshot(page, "review-decorations");
  await page.locator(".editor-group-container.active .codelens-decoration a", { hasText: /^Accept$/ }).first().click();
  const accepted = await waitFor("the accepted line in the editor, the marks gone", async () => {
    const marks = await reviewMarks(page);
    const text = marks.lines.join("\n");
    return text.includes(plan.new_line) && !text.includes(plan.old_line) && marks.struck.length === 0 && marks.after.length === 0 && marks.lenses.length === 0 ? marks : false;
  });
  return { shown, disk_before: diskBefore, accepted };
}

async function ghostStatusScenario(context, base, folder, onPage) {
  const { page } = await openWorkspacePage(context, base, folder, /^Lich: openai_compat\/fake-model$/, onPage);
  await openFile(page, "calc.py");
  const ghostItem = () => page.evaluate(() => {
    const item = [...document.querySelectorAll(".statusbar-item")].find((el) => /Ghost text/.test(el.textContent));
    return item ? { text: item.textContent.replace(/\s+/g, " ").trim(), label: item.getAttribute("aria-label") || "" } : false;
  });
  const before = await waitFor("the ghost-text status item", ghostItem);
  await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("    return ", { delay: 20 });
  const failing = await waitFor("the ghost-text item to say it fails", async () => {
    const item = await ghostItem();
    return item && /failing/.test(item.text) ? item : false;
  });
  await page.locator(".statusbar-item", { hasText: "Ghost text" }).first().hover();
  const tooltip = await waitFor("the item's tooltip", () =>
    page.evaluate(() => {
      // The status bar's hover: the innermost element of a hover widget that holds the tooltip.
      const hovers = [...document.querySelectorAll("[class*='hover']")].filter((el) => !el.closest(".statusbar") && /Ghost text from/.test(el.textContent || ""));
      const text = hovers.at(-1)?.textContent?.replace(/\s+/g, " ").trim();
      return text || false;
    }),
    15_000,
  );
  const shot = await docsScreenshot(page, "vscode-completion-status");
  return { before, failing, tooltip, screenshot: shot };
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  clearScreenshots("vscode-editor-");
  const chromium = requireTools();
  const { scratch, home, userData, extensionsDir } = makeScratch("lich-vscode-editor-e2e-");
  result.scratch = scratch;
  const plan = JSON.parse(
    (() => {
      const run = spawnSync(PYTHON, [path.join(HERE, "editor_turns.py"), scratch], { cwd: REPO, encoding: "utf8" });
      if (run.status !== 0) {
        throw setupError(`editor_turns.py failed: ${run.stderr}`);
      }
      return run.stdout;
    })(),
  );
  const configHome = path.join(home, ".config");
  const env = isolatedEnv(home, { [FAKE_KEY_ENV]: "sk-fake-e2e" });
  // No model set up: nothing in the environment may name one.
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LICH_PROVIDER_KIND", "LICH_BASE_URL", "LICH_MODEL", "LICH_API_KEY"]) {
    delete env[key];
  }

  // The welcome's own model (what the setup points at), and one per folder.
  const welcomeUrl = await startFakeModel(fakeProviderArgs(plan.notify.turns_file), env, path.join(scratch, "welcome-provider.log"));
  const welcomeFolder = folderWith(scratch, "welcome-project", { "hello.py": plan.notify.files["hello.py"] });
  const notifyUrl = await startFakeModel(fakeProviderArgs(plan.notify.turns_file), env, path.join(scratch, "notify-provider.log"));
  const notifyFolder = folderWith(scratch, "notify-project", plan.notify.files, providerSettings(notifyUrl));
  const reviewUrl = await startFakeModel(fakeProviderArgs(plan.review.turns_file), env, path.join(scratch, "review-provider.log"));
  const reviewFolder = folderWith(scratch, "review-project", plan.review.files, {
    ...providerSettings(reviewUrl),
    "lich.editMode": "review",
    "lich.reviewStyle": "hunks",
  });
  // A completion model on a port nothing listens on: every completion fails at once.
  const deadPort = await freePort();
  const ghostFolder = folderWith(scratch, "ghost-project", { "calc.py": "def add(a, b):\n" }, {
    ...providerSettings(notifyUrl),
    "lich.completions.model": { kind: "openai_compat", format: "completions", base_url: `http://127.0.0.1:${deadPort}/v1`, model: "fim" },
  });

  const settings = {
    ...BASE_SETTINGS,
    // The DOM renderer: the terminal's text is then in the page (the demo's output is read there).
    "terminal.integrated.gpuAcceleration": "off",
    "lich.server.command": PYTHON,
    "lich.server.args": ["-m", "lich_lsp"],
    "lich.approval": { "file/edit": "allow", "file/write": "allow" },
  };
  // code-server reads machine-scoped settings (lich.server.*) from the remote machine's settings.
  writeSettings(userData, settings);

  const csArgs = codeServerArgs(userData, extensionsDir);
  installVsix(env, csArgs);
  const base = await startCodeServer({ env, csArgs, folder: welcomeFolder, cwd: scratch, logFile: path.join(scratch, "code-server.log"), timeoutMs: SERVER_START_TIMEOUT_MS });

  const browser = await launchChromium(chromium);
  try {
    const context = await newContext(browser);
    const run = async (name, fn) => {
      let page;
      await scenario(name, () => fn((p) => (page = p)), () => page);
      await page?.close({ runBeforeUnload: false }).catch(() => undefined);
    };
    // First: the setup writes the user config every later window's server reads (the later
    // folders name their own model in their settings, which come first).
    await run("welcome", (onPage) => welcomeScenario(context, base, welcomeFolder, path.join(configHome, "lich", "config.json"), welcomeUrl, onPage));
    await run("notify", (onPage) => notifyScenario(context, base, notifyFolder, plan.notify, onPage));
    await run("review", (onPage) => reviewScenario(context, base, reviewFolder, plan.review, onPage));
    await run("ghost_status", (onPage) => ghostStatusScenario(context, base, ghostFolder, onPage));
  } finally {
    await browser.close().catch(() => undefined);
  }
  result.ok = SCENARIOS.filter((name) => ONLY.length === 0 || ONLY.includes(name)).every((name) => result.scenarios[name]?.ok === true);
}

let exitCode = 1;
try {
  await main();
  exitCode = result.ok ? 0 : 1;
} catch (err) {
  result.errors.push(err instanceof Error ? err.message : String(err));
  log(`setup failed: ${err instanceof Error ? err.stack : err}`);
  exitCode = err && err.setup ? 2 : 1;
} finally {
  await stopAll();
  result.total_ms = Date.now() - started;
  if (result.scratch) {
    const logsOut = path.join(ARTIFACTS, "vscode-editor-logs");
    fs.rmSync(logsOut, { recursive: true, force: true });
    fs.mkdirSync(logsOut, { recursive: true });
    for (const name of fs.readdirSync(result.scratch)) {
      if (name.endsWith(".log")) {
        fs.copyFileSync(path.join(result.scratch, name), path.join(logsOut, name));
      }
    }
    const userLogs = path.join(result.scratch, "user-data", "logs");
    if (fs.existsSync(userLogs)) {
      fs.cpSync(userLogs, path.join(logsOut, "user-data-logs"), { recursive: true });
    }
    if (!process.env.LICH_E2E_KEEP) {
      fs.rmSync(result.scratch, { recursive: true, force: true });
    }
  }
  fs.writeFileSync(path.join(ARTIFACTS, "vscode-editor-e2e-result.json"), JSON.stringify(result, null, 2));
  printResult(result);
  process.exit(exitCode);
}
