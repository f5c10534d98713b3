#!/usr/bin/env node
// End-to-end test of the packaged extension in a real VS Code (code-server 4.100.3 = VS Code
// 1.100.3) driven by headless Chromium, like a person would: command palette, input box, editor.
//
// Scenarios: Ask Agent (the fake model reads and patches hello.py; the edit shows in the editor
// and, after lich/saveDocuments, on disk); Apply Hashline Patch (from the active editor, on a file
// that is not open); Cancel Task on a slow task (the status bar shows the task while it runs);
// Lich: Undo Task, picking the Ask Agent task, puts hello.py back in the editor and on disk.
// Workspace trust, in two more folders whose .lich/config.json lists a plugin that writes a
// marker file PWNED when imported: the server's trust question is answered "Not now" (Show Tools
// builds the tool runtime, no marker), then Lich: Trust Workspace Config loads it (marker) and
// Lich: Revoke Workspace Config Trust takes it back; in the second folder "Trust" is clicked.
// Lich: Run Tests in a small pytest project: Run Tests Matching… runs the passing test only, Run
// Tests warns about the failing one (Show Problems opens the Problems view, which lists it with
// source "lich tests"), and after fixing the code in the editor (unsaved) Run Tests is green, the
// file is saved and the problem is gone.
// The Lich chat view, in its own folder with its own scripted model (the fake provider's --requests
// file records the requests): Lich: Open Chat, a prompt and Enter in the view (a webview: frames inside the
// workbench), the answer in the view; a follow-up that edits greet.py (its request carries the
// first answer); screenshots of the view in the dark and the light theme (docs/editors/); Rewind
// to here on the second turn puts greet.py back in the editor. Then, in a review-mode folder:
// a chat turn whose terminal call asks approval (answered with the chat's Allow once while the
// notification shows it too) and whose patch waits as a hunk, drawn in the turn with its diff;
// Accept in the chat puts the change in the editor.
// Links in the chat (issue #43), in a folder of their own: an answer whose links lead out of the
// workspace (`../../etc/passwd`, `file:///etc/passwd`, a sibling file) or use another scheme
// (`command:workbench.action.quit`) opens no editor and says why in a notification; a
// workspace-relative link opens that file; after the model writes to `file:///etc/passwd` (the
// tool writes <root>/file:/etc/passwd), the edit's Open file opens the file that was written.
// Inline completions, in a folder whose lich.completions.model points at a fake FIM server
// (the fake provider records its /v1/completions requests): typing in a Python file shows ghost
// text, Tab accepts it, and the saved file has it.
//
// Environment: LICH_PYTHON (interpreter with lich_lsp importable; default python3),
// LICH_VSCODE_CACHE (install.sh's cache, default <repo>/.ci/cache/vscode), LICH_VSIX (default
// editors/vscode/dist/lich-lsp.vsix), LICH_ARTIFACTS_DIR (default <repo>/test-artifacts),
// LICH_E2E_KEEP=1 keeps the scratch folder, LICH_E2E_ONLY=a,b runs only those scenarios (while
// working on one; the test runs them all), LICH_DOCS_DIR is where the chat screenshots go
// (default <repo>/docs/editors). Prints one line `E2E_RESULT {json}` and exits 0 when
// every scenario passed, 1 otherwise, 2 when the setup itself failed.
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
  STEP_TIMEOUT_MS,
  chatFrame,
  clearScreenshots,
  codeServerArgs,
  configure,
  editorText,
  fakeProviderArgs,
  installVsix,
  isolatedEnv,
  launchChromium,
  lichStatus,
  log,
  makeScratch,
  newContext,
  openFile,
  printResult,
  quickInputTitle,
  quickInputVisible,
  requestsSent,
  requireTools,
  runCommand,
  screenshotTo,
  sleep,
  startCodeServer,
  startFakeModel,
  started,
  stopAll,
  waitFor,
  writeSettings,
} from "./harness.mjs";

configure({ tag: "vscode-e2e" });

const DOCS_DIR = process.env.LICH_DOCS_DIR || path.join(REPO, "docs", "editors");

const SERVER_START_TIMEOUT_MS = 60_000;
// Well under the slow turn's 120 s, so a pass proves the cancel, with room for a loaded machine.
const CANCEL_DEADLINE_MS = 45_000;
// The idle status bar text: provider kind and model exactly as the server reports them in
// lich.status (the extension does not fall back to its settings, so this proves the round trip).
const IDLE_STATUS = /^Lich: openai_compat\/fake-model$/;
// The server's question when .lich/config.json has keys it ignores until trusted.
const TRUST_QUESTION = "lich: this workspace's .lich/config.json";
const TRUST_CONFIG = { plugins: [".lich/plugins/evil.py"] };
const MARKER = "PWNED";
// Module code runs at import: the marker proves the plugin was loaded, whatever its export does.
const EVIL_PLUGIN = `"""E2E fixture: importing this module leaves ${MARKER} in the workspace root."""
from pathlib import Path

(Path(__file__).resolve().parents[2] / "${MARKER}").write_text("imported\\n", encoding="utf-8")

from lich_core.plugins import Plugin

plugin = Plugin(name="evil")
`;
const SCENARIOS = ["ask_agent", "apply_patch", "code_action_prompt", "cancel_task", "undo_task", "trust_not_now", "trust_command", "trust_question_trust", "run_tests", "chat_view", "chat_review", "chat_links", "inline_completion"];
// A small pytest project for Lich: Run Tests: test_add fails until calc.add is fixed.
const TESTS_PROJECT = {
  "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
  "calc.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
  "tests/test_calc.py": "from calc import add, sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
};
const TESTS_FIXED_LINE = "    return a + b";

const result = { ok: false, scenarios: {}, screenshots: [], errors: [], timings_ms: {}, uses: null };

// --- browser helpers -----------------------------------------------------------------------

async function typeIntoQuickInput(page, expectedTitle, text) {
  await waitFor(`input box "${expectedTitle}"`, async () => (await quickInputVisible(page)) && (await quickInputTitle(page)).includes(expectedTitle));
  const input = page.locator(".quick-input-widget input.input").first();
  await input.fill(text);
  // The extension puts the typed text in as the first item (earlier prompts follow); Enter only
  // once that item is there, or an earlier prompt could be picked instead.
  await waitFor(`the typed prompt as the first item`, () =>
    page.evaluate((wanted) => {
      const first = document.querySelector(".quick-input-list .monaco-list-row .label-name");
      return !!first && first.textContent.replace(/\u00a0/g, " ").trim() === wanted;
    }, text),
  );
  await page.keyboard.press("Enter");
}

async function activeTabDirty(page) {
  return page.evaluate(() => !!document.querySelector(".tabs-container .tab.active.dirty"));
}

async function notifications(page) {
  return page.evaluate(() => [...document.querySelectorAll(".notifications-toasts .notification-list-item-message, .notification-toast .notification-list-item-message")].map((el) => el.textContent.trim()));
}

/** The notification (toast or notification center) whose message starts with `prefix`: {message, buttons}. */
async function findNotification(page, prefix) {
  return page.evaluate((wanted) => {
    for (const item of document.querySelectorAll(".notification-list-item")) {
      const message = (item.querySelector(".notification-list-item-message")?.textContent || "").replace(/\u00a0/g, " ").trim();
      if (message.toLowerCase().startsWith(wanted.toLowerCase())) {
        const buttons = [...item.querySelectorAll(".notification-list-item-buttons-container .monaco-button")].map((b) => b.textContent.trim());
        return { message, buttons };
      }
    }
    return false;
  }, prefix);
}

/** Wait until the toast starting with `prefix` has slid in and its button `label` is on screen. */
async function waitForToastButton(page, prefix, label) {
  return waitFor(`the "${label}" button of the notification "${prefix}"`, () =>
    page.evaluate(
      ([wanted, button]) => {
        for (const toast of document.querySelectorAll(".notification-toast.notification-fade-in-done")) {
          const message = (toast.querySelector(".notification-list-item-message")?.textContent || "").replace(/\u00a0/g, " ").trim();
          if (!message.toLowerCase().startsWith(wanted.toLowerCase())) {
            continue;
          }
          const found = [...toast.querySelectorAll(".notification-list-item-buttons-container .monaco-button")].find((b) => b.textContent.trim() === button);
          const box = found?.getBoundingClientRect();
          return !!box && box.height > 0 && box.top >= 0 && box.bottom <= window.innerHeight;
        }
        return false;
      },
      [prefix, label],
    ),
  );
}

/** Click the button `label` of the notification starting with `prefix` (a real pointer click). */
async function clickNotificationButton(page, prefix, label) {
  const item = page.locator(".notification-list-item").filter({ has: page.locator(".notification-list-item-message", { hasText: prefix }) });
  await item.first().locator(".notification-list-item-buttons-container .monaco-button", { hasText: new RegExp(`^${label}$`) }).first().click({ timeout: 15_000 });
  await waitFor(`the notification "${prefix}" to close`, async () => !(await findNotification(page, prefix)), 15_000);
}

/** Open a folder in a fresh tab of the same VS Code (`onPage` gets the tab at once, for failure screenshots). */
async function openWorkspacePage(context, base, folder, onPage) {
  const page = await context.newPage();
  onPage(page);
  await page.goto(`${base}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: SERVER_START_TIMEOUT_MS });
  // Ready once the extension's server answered lich.status (the status item names the model).
  try {
    await waitFor("the Lich status bar item", async () => IDLE_STATUS.test(await lichStatus(page)), SERVER_START_TIMEOUT_MS);
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : err}; status bar: ${JSON.stringify(await lichStatus(page).catch(() => "?"))}`);
  }
  return page;
}

/** Lich: Show Tools (the server's lich.tools builds the tool runtime, plugins included); its quick pick title. */
async function showTools(page) {
  await runCommand(page, "Lich: Show Tools");
  const title = await waitFor("the tools quick pick", async () => {
    const text = (await quickInputVisible(page)) && (await quickInputTitle(page));
    return typeof text === "string" && /^Lich: \d+ tools$/.test(text) ? text : false;
  });
  await page.keyboard.press("Escape");
  return title;
}

/** Run a palette command and wait for a new notification matching `pattern` (e.g. the command's result). */
async function commandNotification(page, title, pattern) {
  const before = new Set(await notifications(page));
  await runCommand(page, title);
  return waitFor(`a notification matching ${pattern} after "${title}"`, async () =>
    (await notifications(page)).find((m) => !before.has(m) && pattern.test(m) && !m.toLowerCase().startsWith(TRUST_QUESTION.toLowerCase())),
  30_000);
}

async function screenshot(page, name) {
  return screenshotTo(page, path.join(ARTIFACTS, `vscode-${name}.png`), result);
}

function transcriptLog(userData) {
  // Output channels are written under <user-data>/logs/<session>/exthost1/output_logging_*/N-<name>.log
  const found = [];
  const worklist = [path.join(userData, "logs")];
  while (worklist.length) {
    const dir = worklist.pop();
    let entries = [];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        worklist.push(full);
      } else if (entry.name.endsWith("Lich Transcript.log")) {
        found.push(full);
      }
    }
  }
  return found.map((file) => fs.readFileSync(file, "utf8")).join("\n");
}

// --- scenarios -------------------------------------------------------------------------------

/** Run one scenario; `pageOf` is the page (or a function returning it) to screenshot on failure. */
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
    const page = typeof pageOf === "function" ? pageOf() : pageOf;
    if (page) {
      result.scenarios[name].notifications = await notifications(page).catch(() => []);
      await screenshot(page, `failed-${name}`).catch(() => undefined);
    }
    log(`scenario ${name} FAILED: ${err instanceof Error ? err.stack : err}`);
  }
}

// --- the chat view ---------------------------------------------------------------------------

/** The turns the view shows: prompt, answer text, whether it is still running, its Rewind turn. */
async function chatTurns(chat) {
  return chat.locator("section.turn").evaluateAll((sections) =>
    sections.map((s) => ({
      prompt: s.querySelector(".prompt-text")?.textContent || "",
      answer: [...s.querySelectorAll(".markdown")].map((m) => m.textContent).join("\n"),
      tools: [...s.querySelectorAll("details.tool summary")].map((t) => t.textContent),
      live: s.classList.contains("live"),
      discarded: s.classList.contains("discarded"),
      rewind: s.querySelector("button.rewind")?.dataset.turn || null,
    })),
  );
}

async function workbenchTheme(page) {
  return page.evaluate(() => {
    const bench = document.querySelector(".monaco-workbench");
    return bench?.classList.contains("vs-dark") ? "dark" : bench?.classList.contains("vs") ? "light" : "other";
  });
}

async function setColorTheme(page, label, wanted) {
  await runCommand(page, "Preferences: Color Theme");
  await waitFor("the color theme pick", () => quickInputVisible(page), 15_000);
  await page.locator(".quick-input-widget input.input").first().fill(label);
  await waitFor(`the theme "${label}" in the pick`, () =>
    page.evaluate((wantedLabel) => {
      const rows = [...document.querySelectorAll(".quick-input-list .monaco-list-row")];
      const row = rows.find((r) => (r.querySelector(".label-name")?.textContent || "").replace(/\u00a0/g, " ").trim() === wantedLabel);
      if (!row) {
        return false;
      }
      row.click();
      return true;
    }, label),
  );
  await waitFor(`the ${wanted} theme`, async () => (await workbenchTheme(page)) === wanted, 15_000);
}

/** Screenshot for the docs page (and a copy among the artifacts). */
async function docsScreenshot(page, name) {
  fs.mkdirSync(DOCS_DIR, { recursive: true });
  const file = await screenshotTo(page, path.join(DOCS_DIR, `${name}.png`), result);
  fs.copyFileSync(file, path.join(ARTIFACTS, `vscode-${name}.png`));
  return file;
}

async function chatScenario(context, base, folder, requestsFile, chatPlan, onPage) {
  const page = await openWorkspacePage(context, base, folder, onPage);
  await openFile(page, "greet.py");
  await runCommand(page, "Lich: Open Chat");
  const chat = chatFrame(page);
  const input = chat.locator("textarea.input");
  await input.waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  // Lich: Open Chat puts the cursor in the view's input: type without clicking into it.
  const focused = await waitFor("the chat input to have the focus", () => input.evaluate((el) => el === document.activeElement && document.hasFocus()), 15_000).catch(() => false);
  if (!focused) {
    await input.click();
  }
  const firstPrompt = "How does greet() build its text?";
  await page.keyboard.type(firstPrompt, { delay: 5 });
  await page.keyboard.press("Enter");
  const first = await waitFor("the first answer in the chat", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 1 && !turns[0].live && turns[0].answer.includes(chatPlan.first_answer) && turns[0].rewind === "1" ? turns : false;
  });

  // The follow-up edits greet.py, open in the editor.
  const followUp = "Use an f-string in greet()";
  await input.click();
  await page.keyboard.type(followUp, { delay: 5 });
  await page.keyboard.press("Enter");
  const second = await waitFor("the follow-up's answer in the chat", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 2 && !turns[1].live && turns[1].answer.includes(chatPlan.second_answer) && turns[1].rewind === "2" ? turns : false;
  }, 90_000);
  const edited = await waitFor("the follow-up's edit in the editor", async () => {
    const text = await editorText(page);
    return text.includes(chatPlan.new_line) ? text : false;
  });
  const requests = requestsSent(requestsFile);
  const sentText = (request) => JSON.stringify(request?.messages ?? request ?? "");

  // The view in the dark theme, then in the light one, with the patch call opened to show its
  // arguments and result.
  await chat.locator("section.turn").nth(1).locator("details.tool summary").nth(1).click();
  const toolOpened = await chat.locator("section.turn").nth(1).locator("details.tool").nth(1).evaluate((el) => el.open);
  const startTheme = await workbenchTheme(page);
  if (startTheme !== "dark") {
    await setColorTheme(page, "Dark Modern", "dark");
  }
  await page.keyboard.press("Escape");
  const darkShot = await docsScreenshot(page, "vscode-chat-dark");
  await setColorTheme(page, "Light Modern", "light");
  await page.keyboard.press("Escape");
  const lightShot = await docsScreenshot(page, "vscode-chat-light");
  const chatColors = await chat.locator("body").evaluate((body) => getComputedStyle(body).backgroundColor);

  // Rewind to here on the second turn: its edit goes back in the editor.
  const secondTurn = chat.locator("section.turn").nth(1);
  await secondTurn.hover();
  await secondTurn.locator("button.rewind").click();
  // Rewind asks first (issue #45): confirm it.
  await secondTurn.locator("button.rewind-confirm").click();
  const restored = await waitFor("greet.py restored in the editor after Rewind to here", async () => {
    const text = await editorText(page);
    return text.includes(chatPlan.old_line) && !text.includes(chatPlan.new_line) ? text : false;
  });
  const afterRewind = await waitFor("the view to show the rewound turn", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 2 && turns[1].discarded ? turns : false;
  });
  const rewindNotice = await chat.locator("p.notice, p.error").last().textContent().catch(() => "");
  await screenshot(page, "chat-rewound");
  return {
    input_focused_by_open_chat: focused,
    tool_details_open: toolOpened,
    first_turns: first,
    second_turns: second,
    editor_after_follow_up: edited,
    requests: requests.length,
    first_request_has_answer: sentText(requests[0]).includes(chatPlan.first_answer),
    second_request_has_answer: sentText(requests[1]).includes(chatPlan.first_answer),
    second_request_has_first_prompt: sentText(requests[1]).includes(firstPrompt),
    start_theme: startTheme,
    light_background: chatColors,
    screenshots: [darkShot, lightShot],
    editor_after_rewind: restored,
    turns_after_rewind: afterRewind,
    rewind_notice: rewindNotice,
  };
}

async function chatReviewScenario(context, base, folder, chatPlan, onPage) {
  const page = await openWorkspacePage(context, base, folder, onPage);
  await openFile(page, "greet.py");
  await runCommand(page, "Lich: Open Chat");
  const chat = chatFrame(page);
  const input = chat.locator("textarea.input");
  await input.waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await input.click();
  await page.keyboard.type("Use an f-string in greet(), after a check", { delay: 5 });
  await page.keyboard.press("Enter");

  // The terminal call asks approval: in the chat's turn and in the notification.
  const approval = chat.locator("section.turn .approval").first();
  await approval.waitFor({ state: "visible", timeout: 90_000 });
  const question = (await approval.locator(".approval-question").textContent()) || "";
  // Drawn from the server's `approval` event: the command and where it runs.
  const approvalCommand = (await approval.locator(".approval-command").textContent().catch(() => "")) || "";
  const approvalCwd = (await approval.locator(".approval-cwd").textContent().catch(() => "")) || "";
  const buttons = await approval.locator("button").allTextContents();
  // The chat is on screen: the question is asked there only, no duplicate toast (issue #45).
  const toast = await findNotification(page, "lich wants to run terminal");
  await approval.locator("button", { hasText: /^Allow once$/ }).click();
  const answered = await waitFor("the chat's approval marked answered", async () => {
    const text = await approval.locator(".approval-answer").textContent().catch(() => "");
    return text || false;
  });
  // Answered in the chat: the notification's toast goes out of sight.
  const toastHidden = await waitFor("the approval toast to hide", () =>
    page.evaluate(() => ![...document.querySelectorAll(".notification-toast")].some((t) => (t.textContent || "").includes("lich wants to run terminal"))),
    15_000,
  ).catch(() => false);

  // Review mode: the patch waits as a hunk in the turn, the editor still has the old line.
  const turn = chat.locator("section.turn").first();
  const hunk = turn.locator(".hunk").first();
  await waitFor("the pending hunk in the chat", async () => {
    const ended = await turn.evaluate((s) => !s.classList.contains("live"));
    return ended && (await hunk.locator("button.hunk-accept").count()) === 1;
  }, 90_000);
  const terminalTool = await turn.locator("details.tool summary").first().textContent();
  const toolDiff = await turn.locator(".answer > .diff .diff-body").first().textContent();
  const hunkDiff = await hunk.locator(".diff-body").textContent();
  const editorBefore = await editorText(page);
  await screenshot(page, "chat-review");
  await hunk.locator("button.hunk-accept").click();
  const editorAfter = await waitFor("the accepted hunk in the editor", async () => {
    const text = await editorText(page);
    return text.includes(chatPlan.new_line) ? text : false;
  });
  const decided = await waitFor("the hunk marked accepted in the chat", async () => {
    const summary = await hunk.locator(".hunk-summary").textContent();
    return summary === "Accepted" ? summary : false;
  });
  return {
    question,
    approval_command: approvalCommand,
    approval_cwd: approvalCwd,
    buttons,
    toast,
    answered,
    toast_hidden_after_answer: toastHidden,
    terminal_tool: terminalTool,
    tool_diff: toolDiff,
    hunk_diff: hunkDiff,
    editor_before_accept: editorBefore,
    editor_after_accept: editorAfter,
    hunk_after_accept: decided,
  };
}

/** The editor tabs of the window: label, description (its folder), whether active. */
async function editorTabs(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll(".tabs-container .tab")].map((tab) => ({
      label: (tab.querySelector(".label-name")?.textContent || "").replace(/\u00a0/g, " ").trim(),
      description: (tab.querySelector(".label-description")?.textContent || "").replace(/\u00a0/g, " ").trim(),
      title: tab.getAttribute("aria-label") || tab.getAttribute("title") || "",
      active: tab.classList.contains("active"),
    })),
  );
}

async function clearNotifications(page) {
  await runCommand(page, "Notifications: Clear All Notifications");
  await waitFor("the notifications to clear", async () => (await notifications(page)).length === 0, 10_000).catch(() => undefined);
}

/** The link labelled `label` in the model's text of turn `turn` (found by what the user sees). */
function chatLink(chat, turn, label) {
  return chat.locator("section.turn").nth(turn).locator(".markdown a").filter({ hasText: new RegExp(`^${label}$`) });
}

/**
 * Click a link that must open nothing: the notification it gave (null: none), the editor tabs and
 * the active editor's text after it. `link: false` when the view did not even show a link.
 */
async function clickRefusedLink(page, chat, turn, label) {
  await clearNotifications(page);
  const link = chatLink(chat, turn, label);
  if ((await link.count()) === 0) {
    return { link: false, message: null, tabs: await editorTabs(page) };
  }
  await link.first().click();
  const message = await waitFor(`the notification that link ${label} was not opened`, async () => (await notifications(page)).find((m) => m.includes("was not opened")), 15_000).catch(() => null);
  // Give an editor that would open (it must not) the time to show.
  await sleep(1500);
  return { link: true, message, tabs: await editorTabs(page), editor_text: (await editorText(page)).slice(0, 200) };
}

async function chatLinksScenario(context, base, folder, plan, onPage) {
  const page = await openWorkspacePage(context, base, folder, onPage);
  await openFile(page, "greet.py");
  await runCommand(page, "Lich: Open Chat");
  const chat = chatFrame(page);
  const input = chat.locator("textarea.input");
  await input.waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await input.click();
  await page.keyboard.type("Where are the notes?", { delay: 5 });
  await page.keyboard.press("Enter");
  await waitFor("the answer with the links", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 1 && !turns[0].live && turns[0].answer.startsWith(plan.first_answer_start) ? turns : false;
  }, 90_000);
  const tabsBefore = await editorTabs(page);
  const refused = {};
  for (const label of plan.refused) {
    refused[label] = await clickRefusedLink(page, chat, 0, label);
  }
  const workbenchAlive = await page.locator(".monaco-workbench").count();

  // A workspace-relative link opens that file.
  await chatLink(chat, 0, "notes").first().click();
  await waitFor("notes.md opened from the link", async () => (await editorTabs(page)).some((tab) => tab.active && tab.label === "notes.md"));
  const notesText = await waitFor("notes.md in the editor", async () => {
    const text = await editorText(page);
    return text.includes("workspace notes") ? text : false;
  });

  // The model writes to the path `file:///etc/passwd`: the tool writes <root>/file:/etc/passwd.
  await input.click();
  await page.keyboard.type("Write the file", { delay: 5 });
  await page.keyboard.press("Enter");
  await waitFor("the write turn to end", async () => {
    const turns = await chatTurns(chat);
    return turns.length === 2 && !turns[1].live ? turns : false;
  }, 90_000);
  const written = path.join(folder, "file:", "etc", "passwd");
  const diskText = await waitFor("the written file on disk", () => (fs.existsSync(written) ? fs.readFileSync(written, "utf8") : false), 30_000).catch(() => null);
  const secondTurn = chat.locator("section.turn").nth(1);
  const diffPath = await secondTurn.locator(".diff .diff-path").first().textContent();
  const changed = await secondTurn.locator(".files").textContent().catch(() => "");
  // Another editor in front, then the edit's Open file.
  await openFile(page, "greet.py");
  await secondTurn.locator(".diff a.open-file").first().click();
  const openedTab = await waitFor("the edited file opened by Open file", async () => (await editorTabs(page)).find((tab) => tab.active && tab.label === "passwd"), 30_000).catch(async () => ({ missing: true, tabs: await editorTabs(page) }));
  const openedText = await waitFor("the written text in the editor", async () => {
    const text = await editorText(page);
    return text.includes(plan.written.trim()) ? text : false;
  }, 15_000).catch(() => editorText(page));
  // The answer's own link to file:///etc/passwd is refused like the others.
  const answerLink = await clickRefusedLink(page, chat, 1, "the file");
  await screenshot(page, "chat-links");
  return {
    tabs_before: tabsBefore,
    refused,
    workbench_alive: workbenchAlive,
    notes_text: notesText,
    disk_text: diskText,
    diff_path: diffPath,
    changed,
    opened_tab: openedTab,
    opened_text: openedText,
    answer_link: answerLink,
  };
}

async function inlineCompletionScenario(context, base, folder, fim, requestsFile, onPage) {
  const page = await openWorkspacePage(context, base, folder, onPage);
  await openFile(page, fim.file);
  await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type(fim.typed, { delay: 20 });
  const ghost = await waitFor("the ghost text in the editor", () =>
    page.evaluate((wanted) => {
      const shown = [...document.querySelectorAll(".monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text")].map((el) => el.textContent.replace(/\u00a0/g, " ")).join("");
      return shown.includes(wanted) ? shown : false;
    }, fim.suggestion),
  );
  const shot = await docsScreenshot(page, "vscode-completion");
  await page.keyboard.press("Tab");
  const line = `${fim.typed}${fim.suggestion}`;
  const accepted = await waitFor("the suggestion in the buffer after Tab", async () => {
    const text = await editorText(page);
    return text.includes(line) ? text : false;
  });
  await page.keyboard.press("Control+S");
  const disk = await waitFor("the saved file", () => {
    const text = fs.readFileSync(path.join(folder, fim.file), "utf8");
    return text.includes(line) ? text : false;
  });
  const requests = requestsSent(requestsFile);
  // The request the ghost text answered: its prompt ends where the typing stopped.
  const asked = requests.find((r) => typeof r.prompt === "string" && r.prompt.endsWith(`${fim.text}${fim.typed}`)) || {};
  return {
    ghost,
    screenshot: shot,
    editor_after_tab: accepted,
    disk_text: disk,
    fim_requests: requests.length,
    asked_prompt_tail: typeof asked.prompt === "string" ? asked.prompt.slice(-40) : null,
    asked_prompt_has_path: typeof asked.prompt === "string" && asked.prompt.includes(`Path: ${fim.file}`),
    asked_suffix: asked.suffix ?? null,
    asked_stream: asked.stream ?? null,
  };
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  clearScreenshots("vscode-");
  const chromium = requireTools();

  const { scratch, home, userData, extensionsDir } = makeScratch("lich-vscode-e2e-");
  result.scratch = scratch;
  const workspace = path.join(scratch, "workspace");
  fs.mkdirSync(workspace, { recursive: true });

  // The scripted model and the workspace files it expects.
  const turnsFile = path.join(scratch, "turns.json");
  const chatTurnsFile = path.join(scratch, "chat-turns.json");
  const chatReviewTurnsFile = path.join(scratch, "chat-review-turns.json");
  const fimTurnsFile = path.join(scratch, "fim-turns.json");
  const chatLinksTurnsFile = path.join(scratch, "chat-links-turns.json");
  const planRun = spawnSync(
    PYTHON,
    [path.join(HERE, "script_turns.py"), "--out", turnsFile, "--chat-out", chatTurnsFile, "--chat-review-out", chatReviewTurnsFile, "--fim-out", fimTurnsFile, "--chat-links-out", chatLinksTurnsFile],
    { cwd: REPO, encoding: "utf8" },
  );
  if (planRun.status !== 0) {
    throw Object.assign(new Error(`script_turns.py failed: ${planRun.stderr}`), { setup: true });
  }
  const plan = JSON.parse(planRun.stdout);
  result.uses = plan.uses;
  for (const [name, text] of Object.entries(plan.files)) {
    fs.writeFileSync(path.join(workspace, name), text);
  }
  fs.writeFileSync(path.join(workspace, "fix.hashline"), plan.user_patch);
  // Two folders with an untrusted config that loads a plugin: one per way of trusting it.
  const trustFolders = { palette: path.join(scratch, "trust-palette"), question: path.join(scratch, "trust-question") };
  for (const folder of Object.values(trustFolders)) {
    fs.mkdirSync(path.join(folder, ".lich", "plugins"), { recursive: true });
    fs.writeFileSync(path.join(folder, ".lich", "config.json"), JSON.stringify(TRUST_CONFIG, null, 2));
    fs.writeFileSync(path.join(folder, ".lich", "plugins", "evil.py"), EVIL_PLUGIN);
    fs.writeFileSync(path.join(folder, "main.py"), "print('hello')\n");
  }

  const testsFolder = path.join(scratch, "tests-project");
  for (const [name, text] of Object.entries(TESTS_PROJECT)) {
    fs.mkdirSync(path.dirname(path.join(testsFolder, name)), { recursive: true });
    fs.writeFileSync(path.join(testsFolder, name), text);
  }

  // The server's trust records ("allow always" answers too) must stay in the scratch folder.
  const env = isolatedEnv(home, { [FAKE_KEY_ENV]: "sk-fake-e2e" });

  const providerUrl = await startFakeModel(fakeProviderArgs(turnsFile), env, path.join(scratch, "fake-provider.log"));
  // The chat folder has its own model, which records its requests; the folder's settings point
  // the extension at it.
  const chatFolder = path.join(scratch, "chat-project");
  const chatRequests = path.join(scratch, "chat-requests.jsonl");
  fs.mkdirSync(path.join(chatFolder, ".vscode"), { recursive: true });
  for (const [name, text] of Object.entries(plan.chat.files)) {
    fs.writeFileSync(path.join(chatFolder, name), text);
  }
  const chatProviderUrl = await startFakeModel(fakeProviderArgs(chatTurnsFile, chatRequests), env, path.join(scratch, "chat-provider.log"));
  fs.writeFileSync(path.join(chatFolder, ".vscode", "settings.json"), JSON.stringify({ "lich.baseUrl": `${chatProviderUrl}/v1` }, null, 2));
  // The review-mode chat: its own folder and model, edits wait as hunks.
  const chatReviewFolder = path.join(scratch, "chat-review-project");
  fs.mkdirSync(path.join(chatReviewFolder, ".vscode"), { recursive: true });
  for (const [name, text] of Object.entries(plan.chat.files)) {
    fs.writeFileSync(path.join(chatReviewFolder, name), text);
  }
  const chatReviewUrl = await startFakeModel(fakeProviderArgs(chatReviewTurnsFile), env, path.join(scratch, "chat-review-provider.log"));
  fs.writeFileSync(
    path.join(chatReviewFolder, ".vscode", "settings.json"),
    JSON.stringify({ "lich.baseUrl": `${chatReviewUrl}/v1`, "lich.editMode": "review" }, null, 2),
  );
  // Links in the chat: its own folder and model, and a file next to the folder.
  const chatLinksFolder = path.join(scratch, "chat-links-project");
  for (const [name, text] of Object.entries(plan.chat_links.files)) {
    fs.mkdirSync(path.dirname(path.join(chatLinksFolder, name)), { recursive: true });
    fs.writeFileSync(path.join(chatLinksFolder, name), text);
  }
  fs.writeFileSync(path.join(scratch, plan.chat_links.outside), plan.chat_links.outside_text);
  fs.mkdirSync(path.join(chatLinksFolder, ".vscode"), { recursive: true });
  const chatLinksUrl = await startFakeModel(fakeProviderArgs(chatLinksTurnsFile), env, path.join(scratch, "chat-links-provider.log"));
  fs.writeFileSync(path.join(chatLinksFolder, ".vscode", "settings.json"), JSON.stringify({ "lich.baseUrl": `${chatLinksUrl}/v1` }, null, 2));
  // Inline completions: a folder whose completion model is a fake FIM server recording requests.
  const fimFolder = path.join(scratch, "completion-project");
  const fimRequests = path.join(scratch, "fim-requests.jsonl");
  fs.mkdirSync(path.join(fimFolder, ".vscode"), { recursive: true });
  fs.writeFileSync(path.join(fimFolder, plan.fim.file), plan.fim.text);
  const fimUrl = await startFakeModel(fakeProviderArgs(fimTurnsFile, fimRequests), env, path.join(scratch, "fim-provider.log"));
  fs.writeFileSync(
    path.join(fimFolder, ".vscode", "settings.json"),
    JSON.stringify({ "lich.completions.model": { kind: "openai_compat", format: "completions", base_url: `${fimUrl}/v1`, model: "fim" } }, null, 2),
  );
  log(`fake provider at ${providerUrl} (model uses ${plan.uses})`);

  const settings = {
    ...BASE_SETTINGS,
    "lich.server.command": PYTHON,
    "lich.server.args": ["-m", "lich_lsp"],
    "lich.provider.kind": "openai_compat",
    "lich.baseUrl": `${providerUrl}/v1`,
    "lich.model": "fake-model",
    "lich.apiKeyEnv": FAKE_KEY_ENV,
    "lich.approval": { "file/edit": "allow", "file/write": "allow" },
  };
  writeSettings(userData, settings);

  const csArgs = codeServerArgs(userData, extensionsDir);
  let t0 = Date.now();
  installVsix(env, csArgs);
  result.timings_ms.install_vsix = Date.now() - t0;

  t0 = Date.now();
  const base = await startCodeServer({ env, csArgs, folder: workspace, cwd: workspace, logFile: path.join(scratch, "code-server.log"), timeoutMs: SERVER_START_TIMEOUT_MS });
  result.timings_ms.code_server_ready = Date.now() - t0;

  const browser = await launchChromium(chromium);
  try {
    const context = await newContext(browser);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const page = await context.newPage();
    t0 = Date.now();
    await page.goto(`${base}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: SERVER_START_TIMEOUT_MS });
    result.timings_ms.workbench = Date.now() - t0;

    await openFile(page, "hello.py");
    // The extension activates on startup; its status item shows the model once the server answered.
    t0 = Date.now();
    const ready = await waitFor("the Lich status bar item", async () => {
      // Ready = the server answered lich.status: the item then names its provider and model.
      const text = await lichStatus(page);
      return IDLE_STATUS.test(text) ? text : false;
    }, SERVER_START_TIMEOUT_MS);
    result.timings_ms.extension_ready = Date.now() - t0;
    result.status_idle = ready;
    log(`status bar: ${ready}`);

    await scenario("ask_agent", async () => {
      const before = await editorText(page);
      if (!before.includes('return "Hello, " + name')) {
        throw new Error(`hello.py is not showing in the editor: ${JSON.stringify(before)}`);
      }
      const t = Date.now();
      await runCommand(page, "Lich: Ask Agent");
      await typeIntoQuickInput(page, "Lich: Ask Agent", "Use an f-string in greet()");
      const shown = await waitFor("the agent's edit in the editor", async () => {
        const text = await editorText(page);
        return text.includes(plan.expected["hello.py"]) ? text : false;
      });
      const editMs = Date.now() - t;
      const diskFile = path.join(workspace, "hello.py");
      const disk = await waitFor("the edit on disk (lich/saveDocuments)", () => {
        const text = fs.readFileSync(diskFile, "utf8");
        return text.includes(plan.expected["hello.py"]) ? text : false;
      });
      await waitFor("the editor tab to be clean after the save", async () => !(await activeTabDirty(page)), 15_000);
      const idle = await waitFor("the status bar to drop the finished task", async () => {
        const text = await lichStatus(page);
        return IDLE_STATUS.test(text) ? text : false;
      }, 30_000);
      if (!disk.includes("def greet(name):") || disk.includes('"Hello, " + name')) {
        throw new Error(`unexpected file on disk: ${JSON.stringify(disk)}`);
      }
      // The server may have opened the task's transcript; show the edited file instead.
      await openFile(page, "hello.py");
      await screenshot(page, "ask-agent");
      return { edit_visible_ms: editMs, editor_text: shown, disk_text: disk, status_after: idle };
    }, page);

    await scenario("apply_patch", async () => {
      if (!plan.has_apply_patch) {
        return { skipped: "the apply_patch tool is not installed in this tree" };
      }
      await openFile(page, "fix.hashline");
      await runCommand(page, "Lich: Apply Hashline Patch");
      const diskFile = path.join(workspace, "patch_me.py");
      const disk = await waitFor("the patched file on disk", () => {
        const text = fs.readFileSync(diskFile, "utf8");
        return text.includes(plan.expected["patch_me.py"]) ? text : false;
      });
      if (disk !== plan.files["patch_me.py"].replace("y = 2", plan.expected["patch_me.py"])) {
        throw new Error(`unexpected patched file: ${JSON.stringify(disk)}`);
      }
      const toast = await waitFor("the patch notification", async () => (await notifications(page)).find((m) => m.includes("Edited")), 15_000);
      await screenshot(page, "apply-patch");

      // Same command, patch from the clipboard (the active editor then holds ordinary code).
      await openFile(page, "hello.py");
      await page.evaluate((text) => navigator.clipboard.writeText(text), plan.clipboard_patch);
      await runCommand(page, "Lich: Apply Hashline Patch");
      const wanted = plan.files["patch_me.py"].replace("y = 2", plan.expected["patch_me.py"]).replace("z = 3", plan.expected["patch_me.py@clipboard"]);
      const disk2 = await waitFor("the clipboard patch on disk", () => {
        const text = fs.readFileSync(diskFile, "utf8");
        return text === wanted ? text : false;
      });
      return { disk_text: disk, notification: toast, clipboard_disk_text: disk2 };
    }, page);

    await scenario("code_action_prompt", async () => {
      // The server's "Ask agent…" code action runs lich.ask without a prompt; the extension's
      // middleware must ask for one in an input box (not the server's quick-prompt list).
      await openFile(page, "hello.py");
      await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+Home");
      await page.keyboard.press("Shift+End");
      await runCommand(page, "Refactor...");
      const picked = await waitFor("the Ask agent code action", () =>
        page.evaluate(() => {
          const rows = [...document.querySelectorAll(".action-widget .monaco-list-row")];
          const row = rows.find((r) => r.textContent.includes("Ask agent"));
          if (!row) {
            return false;
          }
          row.click();
          return row.textContent.trim();
        }),
      );
      await typeIntoQuickInput(page, "Lich: Ask Agent About Selection", "Explain this line");
      const transcript = await waitFor("the code action task to finish", () => {
        const text = transcriptLog(userData);
        return text.includes(plan.code_action_answer) && (text.match(/task ended: final/g) || []).length >= 2 ? text : false;
      });
      const idle = await waitFor("the status bar to drop the task", async () => {
        const text = await lichStatus(page);
        return IDLE_STATUS.test(text) ? text : false;
      }, 30_000);
      return { code_action: picked, status_after: idle, transcript_has_answer: transcript.includes(plan.code_action_answer) };
    }, page);

    await scenario("cancel_task", async () => {
      await openFile(page, "hello.py");
      await runCommand(page, "Lich: Ask Agent");
      await typeIntoQuickInput(page, "Lich: Ask Agent", "Take your time with this one");
      const running = await waitFor("the status bar to show the running task", async () => {
        const text = await lichStatus(page);
        return /1 task/.test(text) ? text : false;
      }, 30_000);
      await screenshot(page, "task-running");
      const t = Date.now();
      await runCommand(page, "Lich: Cancel Task");
      const idle = await waitFor("the task to stop", async () => {
        const text = await lichStatus(page);
        return /^Lich\b/.test(text) && !/task/.test(text) ? text : false;
      }, CANCEL_DEADLINE_MS);
      const cancelMs = Date.now() - t;
      const transcript = await waitFor("the transcript to record the cancelled task", () => {
        const text = transcriptLog(userData);
        return /task ended: (aborted|cancelled)/.test(text) ? text : false;
      }, 15_000).catch(() => transcriptLog(userData));
      if (!/task ended: (aborted|cancelled)/.test(transcript)) {
        throw new Error(`the transcript does not show an aborted task:\n${transcript.slice(-2000)}`);
      }
      const disk = fs.readFileSync(path.join(workspace, "hello.py"), "utf8");
      return { status_while_running: running, status_after: idle, cancel_ms: cancelMs, file_unchanged_by_cancel: disk.includes(plan.expected["hello.py"]) };
    }, page);

    await scenario("undo_task", async () => {
      // The Ask Agent task changed hello.py (the other tasks changed nothing): Lich: Undo Task
      // offers it, and the server's one inverse edit restores the file in the editor and on disk.
      await openFile(page, "hello.py");
      const before = new Set(await notifications(page));
      await runCommand(page, "Lich: Undo Task");
      await waitFor("the Undo Task pick", async () => (await quickInputVisible(page)) && (await quickInputTitle(page)).includes("Lich: Undo Task"));
      const picked = await waitFor("the Ask Agent task in the pick", () =>
        page.evaluate(() => {
          const rows = [...document.querySelectorAll(".quick-input-list .monaco-list-row")];
          const row = rows.find((r) => (r.querySelector(".label-name")?.textContent || "").replace(/\u00a0/g, " ").trim() === "Use an f-string in greet()");
          if (!row) {
            return false;
          }
          const text = row.textContent.replace(/\u00a0/g, " ").trim();
          row.click();
          return { text, rows: rows.length };
        }),
      );
      const original = plan.files["hello.py"];
      const shown = await waitFor("hello.py restored in the editor", async () => {
        const text = await editorText(page);
        return text.includes('return "Hello, " + name') && !text.includes(plan.expected["hello.py"]) ? text : false;
      });
      const diskFile = path.join(workspace, "hello.py");
      const disk = await waitFor("hello.py restored on disk (lich/saveDocuments)", () => {
        const text = fs.readFileSync(diskFile, "utf8");
        return text === original ? text : false;
      });
      await waitFor("the editor tab to be clean after the save", async () => !(await activeTabDirty(page)), 15_000);
      const message = await waitFor("the server's undo message", async () =>
        (await notifications(page)).find((m) => !before.has(m) && m.startsWith("lich: undo ")),
      30_000);
      await screenshot(page, "undo-task");
      return { picked, editor_text: shown, disk_text: disk, message };
    }, page);

    await screenshot(page, "final");
    result.transcript_tail = transcriptLog(userData).slice(-1500);
    // The first folder is done; its window would only compete for the CPU.
    await page.close({ runBeforeUnload: false }).catch(() => undefined);

    let trustPage;
    await scenario("trust_not_now", async () => {
      const folder = trustFolders.palette;
      const marker = path.join(folder, MARKER);
      await openWorkspacePage(context, base, folder, (p) => (trustPage = p));
      const question = await waitFor("the trust question", () => findNotification(trustPage, TRUST_QUESTION));
      const markerBeforeAnswer = fs.existsSync(marker);
      await waitForToastButton(trustPage, TRUST_QUESTION, "Not now");
      await screenshot(trustPage, "trust-question");
      await clickNotificationButton(trustPage, TRUST_QUESTION, "Not now");
      // lich.tools builds the tool runtime, which loads the config's plugins if they count.
      const tools = await showTools(trustPage);
      return { question, marker_before_answer: markerBeforeAnswer, tools_title: tools, marker_after_tools: fs.existsSync(marker) };
    }, () => trustPage);

    await scenario("trust_command", async () => {
      if (!trustPage) {
        throw new Error("the trust_not_now scenario did not open its folder");
      }
      const marker = path.join(trustFolders.palette, MARKER);
      const markerBefore = fs.existsSync(marker);
      const trusted = await commandNotification(trustPage, "Lich: Trust Workspace Config", /trust/i);
      await showTools(trustPage);
      await waitFor(`${MARKER} (the trusted plugin loaded)`, () => fs.existsSync(marker), 15_000);
      await screenshot(trustPage, "trust-command");
      const revoked = await commandNotification(trustPage, "Lich: Revoke Workspace Config Trust", /trust/i);
      return { marker_before: markerBefore, trusted_message: trusted, marker_after_trust: fs.existsSync(marker), revoked_message: revoked };
    }, () => trustPage);
    await trustPage?.close({ runBeforeUnload: false }).catch(() => undefined);

    let questionPage;
    await scenario("trust_question_trust", async () => {
      const folder = trustFolders.question;
      const marker = path.join(folder, MARKER);
      await openWorkspacePage(context, base, folder, (p) => (questionPage = p));
      await waitFor("the trust question", () => findNotification(questionPage, TRUST_QUESTION));
      const markerBeforeAnswer = fs.existsSync(marker);
      const before = new Set(await notifications(questionPage));
      await clickNotificationButton(questionPage, TRUST_QUESTION, "Trust");
      // The server records trust, then says so (window/showMessage): only then ask for the tools.
      const trusted = await waitFor("the server's trust confirmation", async () =>
        (await notifications(questionPage)).find((m) => !before.has(m) && /^lich: trusted /i.test(m)),
      30_000);
      await showTools(questionPage);
      await waitFor(`${MARKER} (the trusted plugin loaded)`, () => fs.existsSync(marker), 15_000);
      return { marker_before_answer: markerBeforeAnswer, trusted_message: trusted, marker_after_trust: fs.existsSync(marker) };
    }, () => questionPage);
    await questionPage?.close({ runBeforeUnload: false }).catch(() => undefined);

    let testsPage;
    await scenario("run_tests", async () => {
      await openWorkspacePage(context, base, testsFolder, (p) => (testsPage = p));
      /** A palette command, then the first new notification starting with one of `prefixes`. */
      const outcome = async (title, prefixes, beforeRun) => {
        const before = new Set(await notifications(testsPage));
        await runCommand(testsPage, title);
        if (beforeRun) {
          await beforeRun();
        }
        return waitFor(`the outcome of "${title}"`, async () =>
          (await notifications(testsPage)).find((m) => !before.has(m) && prefixes.some((prefix) => m.startsWith(prefix))),
        90_000);
      };
      const problemsText = () => testsPage.evaluate(() => (document.querySelector(".markers-panel")?.textContent || "").replace(/\u00a0/g, " "));
      await openFile(testsPage, "test_calc.py");

      // 1. Only the passing test, through the input box of "Run Tests Matching…".
      const filtered = await outcome("Lich: Run Tests Matching…", ["Lich: tests", "Lich: running the tests"], async () => {
        await waitFor("the filter input box", async () => (await quickInputVisible(testsPage)) && (await quickInputTitle(testsPage)).includes("Lich: Run Tests Matching"));
        await testsPage.locator(".quick-input-widget input.input").first().fill("tests/test_calc.py::test_sub");
        await testsPage.keyboard.press("Enter");
      });
      if (!/^Lich: tests passed: 1 passed\b/.test(filtered)) {
        throw new Error(`the filtered run: ${filtered}`);
      }

      // 2. Everything: red, a warning with Show Problems; the failure is in the Problems view.
      const red = await outcome("Lich: Run Tests", ["Lich: tests", "Lich: running the tests"]);
      const warning = await findNotification(testsPage, "Lich: tests failed:");
      if (!warning || !warning.buttons.includes("Show Problems")) {
        throw new Error(`no "Lich: tests failed" warning with Show Problems: ${red} ${JSON.stringify(warning)}`);
      }
      await waitForToastButton(testsPage, "Lich: tests failed:", "Show Problems");
      await screenshot(testsPage, "run-tests-failed");
      await clickNotificationButton(testsPage, "Lich: tests failed:", "Show Problems");
      const problems = await waitFor("the failure in the Problems view", async () => {
        const text = await problemsText();
        return text.includes("lich tests") && text.includes("assert") ? text : false;
      }, 30_000);
      await screenshot(testsPage, "run-tests-problems");

      // 3. Fix calc.add in the editor (unsaved) and run again: disk follows, the problem goes.
      await openFile(testsPage, "calc.py");
      await testsPage.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
      await testsPage.keyboard.press("Control+Home");
      await testsPage.keyboard.press("ArrowDown");
      await testsPage.keyboard.press("End");
      await testsPage.keyboard.press("Shift+Home");
      await testsPage.keyboard.type(TESTS_FIXED_LINE.trim(), { delay: 5 });
      await waitFor("the fix in the editor", async () => (await editorText(testsPage)).includes(TESTS_FIXED_LINE), 15_000);
      const dirtyBefore = await activeTabDirty(testsPage);
      const diskFile = path.join(testsFolder, "calc.py");
      const diskBefore = fs.readFileSync(diskFile, "utf8");
      const green = await outcome("Lich: Run Tests", ["Lich: tests", "Lich: running the tests"]);
      if (!/^Lich: tests passed: 2 passed\b/.test(green)) {
        throw new Error(`the run after the fix: ${green}`);
      }
      const diskAfter = fs.readFileSync(diskFile, "utf8");
      await waitFor("the editor tab to be clean (saved by the server's request)", async () => !(await activeTabDirty(testsPage)), 15_000);
      const problemsAfter = await waitFor("the failure to leave the Problems view", async () => {
        const text = await problemsText();
        return !text.includes("lich tests") ? text : false;
      }, 30_000);
      await screenshot(testsPage, "run-tests-passed");
      return {
        filtered_message: filtered,
        red_message: red,
        red_buttons: warning.buttons,
        problems_text: problems.slice(0, 500),
        dirty_before_run: dirtyBefore,
        disk_before_run: diskBefore,
        disk_after_run: diskAfter,
        green_message: green,
        problems_after: problemsAfter.slice(0, 300),
      };
    }, () => testsPage);
    await testsPage?.close({ runBeforeUnload: false }).catch(() => undefined);

    let chatPage;
    await scenario("chat_view", async () => chatScenario(context, base, chatFolder, chatRequests, plan.chat, (p) => (chatPage = p)), () => chatPage);
    await chatPage?.close({ runBeforeUnload: false }).catch(() => undefined);
    let reviewPage;
    await scenario("chat_review", async () => chatReviewScenario(context, base, chatReviewFolder, plan.chat, (p) => (reviewPage = p)), () => reviewPage);
    await reviewPage?.close({ runBeforeUnload: false }).catch(() => undefined);
    let linksPage;
    await scenario("chat_links", async () => chatLinksScenario(context, base, chatLinksFolder, plan.chat_links, (p) => (linksPage = p)), () => linksPage);
    await linksPage?.close({ runBeforeUnload: false }).catch(() => undefined);
    let fimPage;
    await scenario("inline_completion", async () => inlineCompletionScenario(context, base, fimFolder, plan.fim, fimRequests, (p) => (fimPage = p)), () => fimPage);
    await fimPage?.close({ runBeforeUnload: false }).catch(() => undefined);
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
    // Keep the logs next to the screenshots; drop the rest unless asked to keep it.
    const logsOut = path.join(ARTIFACTS, "vscode-logs");
    fs.rmSync(logsOut, { recursive: true, force: true });
    fs.mkdirSync(logsOut, { recursive: true });
    for (const name of ["code-server.log", "fake-provider.log"]) {
      const file = path.join(result.scratch, name);
      if (fs.existsSync(file)) {
        fs.copyFileSync(file, path.join(logsOut, name));
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
  fs.writeFileSync(path.join(ARTIFACTS, "vscode-e2e-result.json"), JSON.stringify(result, null, 2));
  printResult(result);
  process.exit(exitCode);
}
