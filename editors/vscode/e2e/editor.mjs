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
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..", "..");
const CACHE = process.env.LICH_VSCODE_CACHE || path.join(REPO, ".ci", "cache", "vscode");
const CS_ENTRY = path.join(CACHE, "code-server", "node_modules", "code-server", "out", "node", "entry.js");
const TOOLS_PKG = path.join(CACHE, "tools", "package.json");
const VSIX = process.env.LICH_VSIX || path.join(REPO, "editors", "vscode", "dist", "lich-lsp.vsix");
const PYTHON = process.env.LICH_PYTHON || "python3";
const ARTIFACTS = process.env.LICH_ARTIFACTS_DIR || path.join(REPO, "test-artifacts");
const CHROMIUM = process.env.LICH_CHROMIUM || "/usr/bin/chromium";
const DOCS_DIR = process.env.LICH_DOCS_DIR || path.join(ARTIFACTS, "docs-screenshots");
const ONLY = (process.env.LICH_E2E_ONLY || "").split(",").map((name) => name.trim()).filter(Boolean);
const FAKE_KEY_ENV = "LICH_E2E_FAKE_KEY";
const SCENARIOS = ["welcome", "notify", "review", "ghost_status"];
const STEP_TIMEOUT_MS = 60_000;
const SERVER_START_TIMEOUT_MS = 60_000;
const POLL_MS = 200;

const started = Date.now();
const children = [];
const result = { ok: false, scenarios: {}, screenshots: [], errors: [], timings_ms: {} };

function log(message) {
  process.stderr.write(`[vscode-editor-e2e +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `fn` until it returns something truthy (the event); a hang fails at the deadline. */
async function waitFor(what, fn, timeoutMs = STEP_TIMEOUT_MS) {
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
    await sleep(POLL_MS);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? ` (${last.message})` : ""}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Start a child in its own process group so the whole tree can be killed at the end. */
function startGroup(command, args, options) {
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

async function stopAll() {
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

async function startFakeProvider(scriptFile, env, logFile) {
  const child = startGroup(PYTHON, ["-m", "tests.support.fake_provider", "--port", "0", "--script", scriptFile], { cwd: REPO, env });
  const url = await new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error("fake provider did not print LISTENING")), 30_000);
    child.stdout.on("data", (chunk) => {
      buffer += chunk.toString();
      const match = /LISTENING (http:\/\/\S+)/.exec(buffer);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`fake provider exited with ${code}`)));
  });
  const out = fs.createWriteStream(logFile);
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  return url;
}

// --- browser helpers (as run.mjs) ---------------------------------------------------------------

async function quickInputVisible(page) {
  return page.evaluate(() => {
    const widget = document.querySelector(".quick-input-widget");
    return !!widget && widget.style.display !== "none" && getComputedStyle(widget).display !== "none";
  });
}

async function quickInputTitle(page) {
  return page.evaluate(() => document.querySelector(".quick-input-widget .quick-input-title")?.textContent || "");
}

/** Click the row of the visible quick pick whose label is exactly `label`. */
async function pickRow(page, label) {
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

async function runCommand(page, title) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await waitFor("the command palette", () => quickInputVisible(page), 15_000);
  await page.keyboard.type(title, { delay: 5 });
  return pickRow(page, title);
}

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

async function openFile(page, name) {
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
    page.evaluate((wanted) => {
      const active = document.querySelector(".tabs-container .tab.active .label-name, .tabs-container .tab.active .monaco-icon-label");
      return !!active && active.textContent.includes(wanted);
    }, name),
  );
}

/** The active editor's text: Monaco recycles line elements, so sort them by their top offset. */
async function editorText(page) {
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

async function statusTexts(page) {
  return page.evaluate(() => [...document.querySelectorAll(".statusbar-item")].map((el) => el.textContent.replace(/\s+/g, " ").trim()).filter(Boolean));
}

async function lichStatus(page) {
  return (await statusTexts(page)).find((text) => /^Lich\b/.test(text)) || "";
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
  const file = path.join(ARTIFACTS, `vscode-editor-${name}.png`);
  await page.screenshot({ path: file });
  result.screenshots.push(file);
  return file;
}

async function docsScreenshot(page, name) {
  fs.mkdirSync(DOCS_DIR, { recursive: true });
  const file = path.join(DOCS_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  result.screenshots.push(file);
  return file;
}

/** The chat view's document: the webview is an iframe in the workbench with the page in an inner frame. */
function chatFrame(page) {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
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
  for (const name of fs.readdirSync(ARTIFACTS)) {
    if (name.startsWith("vscode-editor-") && name.endsWith(".png")) {
      fs.rmSync(path.join(ARTIFACTS, name), { force: true });
    }
  }
  for (const [what, file] of [
    ["code-server (run .ci/vscode/install.sh)", CS_ENTRY],
    ["playwright-core (run .ci/vscode/install.sh)", TOOLS_PKG],
    ["chromium (apt-get install chromium)", CHROMIUM],
    ["the packaged extension (run .ci/vscode/build.sh)", VSIX],
  ]) {
    if (!fs.existsSync(file)) {
      throw Object.assign(new Error(`missing ${what}: ${file}`), { setup: true });
    }
  }
  const { chromium } = createRequire(TOOLS_PKG)("playwright-core");
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "lich-vscode-editor-e2e-"));
  result.scratch = scratch;
  const home = path.join(scratch, "home");
  const userData = path.join(scratch, "user-data");
  const extensionsDir = path.join(scratch, "extensions");
  for (const dir of [home, path.join(userData, "User"), extensionsDir]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  const plan = JSON.parse(
    (() => {
      const run = spawnSync(PYTHON, [path.join(HERE, "editor_turns.py"), scratch], { cwd: REPO, encoding: "utf8" });
      if (run.status !== 0) {
        throw Object.assign(new Error(`editor_turns.py failed: ${run.stderr}`), { setup: true });
      }
      return run.stdout;
    })(),
  );
  const configHome = path.join(home, ".config");
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: configHome,
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local", "state"),
    PYTHONPATH: [REPO, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
    [FAKE_KEY_ENV]: "sk-fake-e2e",
  };
  // No model set up: nothing in the environment may name one.
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LICH_PROVIDER_KIND", "LICH_BASE_URL", "LICH_MODEL", "LICH_API_KEY"]) {
    delete env[key];
  }

  // The welcome's own model (what the setup points at), and one per folder.
  const welcomeUrl = await startFakeProvider(plan.notify.turns_file, env, path.join(scratch, "welcome-provider.log"));
  const welcomeFolder = folderWith(scratch, "welcome-project", { "hello.py": plan.notify.files["hello.py"] });
  const notifyUrl = await startFakeProvider(plan.notify.turns_file, env, path.join(scratch, "notify-provider.log"));
  const notifyFolder = folderWith(scratch, "notify-project", plan.notify.files, providerSettings(notifyUrl));
  const reviewUrl = await startFakeProvider(plan.review.turns_file, env, path.join(scratch, "review-provider.log"));
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
    // The DOM renderer: the terminal's text is then in the page (the demo's output is read there).
    "terminal.integrated.gpuAcceleration": "off",
    "lich.server.command": PYTHON,
    "lich.server.args": ["-m", "lich_lsp"],
    "lich.approval": { "file/edit": "allow", "file/write": "allow" },
  };
  fs.writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify(settings, null, 2));
  // code-server reads machine-scoped settings (lich.server.*) from the remote machine's settings.
  fs.mkdirSync(path.join(userData, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(userData, "Machine", "settings.json"), JSON.stringify({ "lich.server.command": PYTHON, "lich.server.args": ["-m", "lich_lsp"] }, null, 2));

  const csArgs = ["--user-data-dir", userData, "--extensions-dir", extensionsDir];
  const install = spawnSync(process.execPath, [CS_ENTRY, ...csArgs, "--install-extension", VSIX, "--force"], { env, encoding: "utf8", timeout: 120_000 });
  if (install.status !== 0 || !/successfully installed/i.test(install.stdout + install.stderr)) {
    throw Object.assign(new Error(`installing the .vsix failed: ${install.stdout}\n${install.stderr}`), { setup: true });
  }
  const port = await freePort();
  const codeServer = startGroup(
    process.execPath,
    [CS_ENTRY, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", ...csArgs, welcomeFolder],
    { env, cwd: scratch },
  );
  const csLog = fs.createWriteStream(path.join(scratch, "code-server.log"));
  codeServer.stdout.pipe(csLog);
  codeServer.stderr.pipe(csLog);
  const base = `http://127.0.0.1:${port}`;
  await waitFor("code-server /healthz", async () => (await fetch(`${base}/healthz`)).ok, SERVER_START_TIMEOUT_MS);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
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
  process.stdout.write(`E2E_RESULT ${JSON.stringify(result)}\n`);
  process.exit(exitCode);
}
