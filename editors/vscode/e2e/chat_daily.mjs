#!/usr/bin/env node
// The Lich chat view as a daily driver (issue #45), end to end: the packaged extension in a real
// VS Code (code-server 4.100.3) driven by headless Chromium as a person would use it, with a
// scripted model (tests/support/fake_provider.py, which records every request it gets).
//
// One folder, one thread, in order:
//  1. keyboard: Ctrl+Alt+C opens the chat with the cursor in its input;
//  2. markdown: a long streamed answer (table, nested list, quote, code) renders and is followed
//     to its end; scrolled up, "Jump to latest" shows; sending the next message shows it;
//  3. code blocks: Copy puts the code on the clipboard, Insert at cursor types it into the active
//     editor, Apply to file sends a chat turn whose edit (through the agent) lands in greet.py;
//  4. a slow turn shows "Working… N s"; a message sent meanwhile is queued (shown); Escape in the
//     input stops the turn and the queued message goes out and is answered;
//  5. an approval card shows the command in a code block with Allow always set apart naming its
//     scope; Deny answers it;
//  6. Rewind to here asks first (the turn's prompt shown); Cancel keeps everything; Rewind puts
//     greet.py back, and the notice has no thread id.
// Screenshots: test-artifacts/, and the docs' (vscode-chat-*.png) into LICH_DOCS_DIR.
//
// Environment as e2e/run.mjs: LICH_PYTHON, LICH_VSCODE_CACHE, LICH_VSIX, LICH_ARTIFACTS_DIR,
// LICH_DOCS_DIR, LICH_CHROMIUM, LICH_E2E_KEEP=1. Prints one line `E2E_RESULT {json}`; exits 0
// when every step passed, 1 otherwise, 2 when the setup failed.
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ARTIFACTS,
  BASE_SETTINGS,
  FAKE_KEY_ENV,
  PYTHON,
  STEP_TIMEOUT_MS,
  chatFrame,
  codeServerArgs,
  configure,
  editorText,
  fakeProviderArgs,
  installVsix,
  isolatedEnv,
  launchChromium,
  log,
  makeScratch,
  newContext,
  openFile,
  pickRow,
  printResult,
  quickInputVisible,
  requestsSent,
  requireTools,
  runCommand,
  screenshotTo,
  startCodeServer,
  startFakeModel,
  statusTexts,
  stopAll,
  waitFor,
  writeSettings,
} from "./harness.mjs";

configure({ tag: "vscode-chat-e2e" });

const DOCS_DIR = process.env.LICH_DOCS_DIR || path.join(ARTIFACTS, "docs-screenshots");
const TURN_TIMEOUT_MS = 90_000;
const SERVER_START_TIMEOUT_MS = 90_000;
// A file counts as open once it is the active tab of the active editor group.
const ACTIVE_GROUP_TAB = ".editor-group-container.active .tab.active .label-name";

const GREET_PY = 'def greet(name):\n    return "Hello, " + name\n\n\nprint(greet("world"))\n';
const OLD_LINE = '    return "Hello, " + name';
const NEW_LINE = '    return f"Hello, {name}!"';
const NEW_GREET = `def greet(name):\n${NEW_LINE}`;
const APPROVAL_COMMAND = "echo daily-approval";
// The first answer: every markdown construct the chat must render, and long enough to scroll.
const LONG_ANSWER = [
  "## How greet() builds its text",
  "",
  "It *joins* strings with `+`; ~~format()~~ an f-string reads better.",
  "",
  "| approach | reads well |",
  "|---|---|",
  "| `+` | no |",
  "| f-string | **yes** |",
  "",
  "> Prefer f-strings for short formatting.",
  "",
  "1. Change the return line",
  "   1. keep the name",
  "   2. add the `!`",
  "2. Run the tests",
  "",
  "---",
  "",
  "```python",
  NEW_GREET,
  "```",
  "",
  ...Array.from({ length: 30 }, (_, i) => `- note ${i + 1}: the chat keeps following this answer as it streams.`),
  "",
  "That is all.",
].join("\n");
const SHORT_ANSWER = "Short answer: it concatenates.";
const APPLIED_ANSWER = "Applied the code to greet.py.";
const QUEUED_ANSWER = "Queued answer: here I am.";
const DENIED_ANSWER = "I did not run it.";

function scriptedTurns() {
  return [
    { text: LONG_ANSWER, chunks: 12, chunk_delay_s: 0.05 },
    { text: SHORT_ANSWER },
    { tool_calls: [{ name: "read_file", arguments: { path: "greet.py" }, id: "a1" }] },
    { tool_calls: [{ name: "edit_file", arguments: { path: "greet.py", old_string: OLD_LINE, new_string: NEW_LINE }, id: "a2" }] },
    { text: APPLIED_ANSWER },
    // The slow turn: stopped with Escape long before it would answer.
    { delay_s: 120, text: "too late" },
    { text: QUEUED_ANSWER },
    { tool_calls: [{ name: "terminal", arguments: { command: APPROVAL_COMMAND }, id: "t1" }] },
    { text: DENIED_ANSWER },
  ];
}

const result = { ok: false, steps: {}, screenshots: [], errors: [] };

// --- the workbench ---------------------------------------------------------------------------

async function findNotification(page, prefix) {
  return page.evaluate((wanted) => {
    for (const item of document.querySelectorAll(".notification-list-item")) {
      const message = (item.querySelector(".notification-list-item-message")?.textContent || "").replace(/\u00a0/g, " ").trim();
      if (message.toLowerCase().startsWith(wanted.toLowerCase())) {
        return { message };
      }
    }
    return false;
  }, prefix);
}

async function screenshot(page, name) {
  return screenshotTo(page, path.join(ARTIFACTS, `vscode-${name}.png`), result);
}

async function docsScreenshot(page, name) {
  fs.mkdirSync(DOCS_DIR, { recursive: true });
  const file = await screenshotTo(page, path.join(DOCS_DIR, `${name}.png`), result);
  fs.copyFileSync(file, path.join(ARTIFACTS, `vscode-${name}.png`));
  return file;
}

// --- the chat view ---------------------------------------------------------------------------

async function chatTurns(chat) {
  return chat.locator("section.turn").evaluateAll((sections) =>
    sections.map((s) => ({
      prompt: s.querySelector(".prompt-text")?.textContent || "",
      answer: [...s.querySelectorAll(".markdown")].map((m) => m.textContent).join("\n"),
      live: s.classList.contains("live"),
      discarded: s.classList.contains("discarded"),
      notices: [...s.querySelectorAll("p.notice, p.error")].map((p) => p.textContent),
    })),
  );
}

/** Where the log is scrolled, and whether the last turn's prompt is inside its visible part. */
async function logPosition(chat) {
  return chat.locator(".log").evaluate((log) => {
    const prompts = log.querySelectorAll("section.turn .prompt");
    const last = prompts[prompts.length - 1];
    const box = log.getBoundingClientRect();
    const at = last?.getBoundingClientRect();
    return {
      from_bottom: Math.round(log.scrollHeight - log.scrollTop - log.clientHeight),
      scrollable: log.scrollHeight > log.clientHeight + 50,
      last_prompt_visible: !!at && at.top >= box.top - 1 && at.bottom <= box.bottom + 1,
    };
  });
}

async function sendInChat(page, chat, text) {
  const input = chat.locator("textarea.input");
  await input.click();
  await page.keyboard.type(text, { delay: 5 });
  await page.keyboard.press("Enter");
}

async function waitForTurn(chat, prompt, done, what) {
  return waitFor(what, async () => {
    const turns = await chatTurns(chat);
    const turn = turns.find((t) => t.prompt === prompt);
    return turn && done(turn) ? { turn, turns } : false;
  }, TURN_TIMEOUT_MS);
}

// --- steps -----------------------------------------------------------------------------------

async function step(name, fn, page) {
  if (Object.values(result.steps).some((done) => !done.ok)) {
    result.steps[name] = { ok: false, error: "skipped: an earlier step failed" };
    return false;
  }
  const t0 = Date.now();
  log(`step ${name}`);
  try {
    result.steps[name] = { ok: true, ...(await fn()), ms: Date.now() - t0 };
    return true;
  } catch (err) {
    result.steps[name] = { ok: false, error: err instanceof Error ? err.message : String(err), ms: Date.now() - t0 };
    log(`step ${name} FAILED: ${err instanceof Error ? err.stack : err}`);
    await screenshot(page, `chat-daily-failed-${name}`).catch(() => undefined);
    return false;
  }
}

async function run(page, folder, requestsFile) {
  const chat = chatFrame(page);
  const input = chat.locator("textarea.input");
  // Each step builds on the ones before (the same thread, the scripted model's turns in order):
  // after a failure the rest would only fail for it.
  const all = [];

  all.push(
    await step("keyboard_opens_chat", async () => {
      await openFile(page, "greet.py", ACTIVE_GROUP_TAB);
      // Ctrl+Alt+C from the editor: the chat opens with the cursor in its input.
      await page.keyboard.press("Control+Alt+KeyC");
      await input.waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
      const focused = await waitFor("the chat input to have the focus", () => input.evaluate((el) => el === document.activeElement && document.hasFocus()), 15_000).catch(() => false);
      const context = await waitFor("the editor context chip", async () => (await chat.locator(".context .context-label").textContent().catch(() => "")) || false, 15_000);
      return { input_focused: focused, context_chip: context };
    }, page),
  );

  all.push(
    await step("markdown_and_scrolling", async () => {
      const first = "How does greet() build its text?";
      if (!(await input.evaluate((el) => el === document.activeElement))) {
        await input.click();
      }
      await page.keyboard.type(first, { delay: 5 });
      await page.keyboard.press("Enter");
      await waitForTurn(chat, first, (t) => !t.live && t.answer.includes("That is all."), "the long answer");
      // Streamed to its end and followed: the log is at its bottom.
      const afterStream = await logPosition(chat);
      const section = chat.locator("section.turn").first();
      const md = await section.evaluate((s) => ({
        table_headers: [...s.querySelectorAll(".markdown th")].map((th) => th.textContent),
        italic: s.querySelector(".markdown em")?.textContent || null,
        strike: s.querySelector(".markdown s")?.textContent || null,
        quote: (s.querySelector(".markdown blockquote")?.textContent || "").trim(),
        rule: !!s.querySelector(".markdown hr"),
        nested: [...s.querySelectorAll(".markdown ol > li > ol > li")].map((li) => li.textContent),
        keyword: s.querySelector(".markdown pre code .hljs-keyword")?.textContent || null,
        code_white_space: getComputedStyle(s.querySelector(".markdown pre")).whiteSpace,
        code_buttons: [...s.querySelectorAll(".code-toolbar button")].map((b) => b.textContent),
      }));
      await section.evaluate((s) => s.scrollIntoView({ block: "start" }));
      await docsScreenshot(page, "vscode-chat-markdown");
      await chat.locator(".log").evaluate((log) => (log.scrollTop = log.scrollHeight)); // back at the end
      // The user scrolls up to read: Jump to latest shows.
      const box = await chat.locator(".log").boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -3000);
      const jumpShown = await waitFor("Jump to latest", () => chat.locator("button.jump").isVisible(), 15_000);
      const scrolledUp = await logPosition(chat);
      // Sending shows the new message, wherever the user had scrolled.
      await sendInChat(page, chat, "And in one line?");
      await waitForTurn(chat, "And in one line?", (t) => !t.live && t.answer.includes(SHORT_ANSWER), "the short answer");
      const afterSend = await logPosition(chat);
      const jumpAfterSend = await chat.locator("button.jump").isVisible();
      return { after_stream: afterStream, markdown: md, jump_shown: jumpShown, scrolled_up: scrolledUp, after_send: afterSend, jump_after_send: jumpAfterSend };
    }, page),
  );

  all.push(
    await step("code_blocks", async () => {
      const block = chat.locator("section.turn").first().locator(".code-block").first();
      await block.locator("button.code-copy").click();
      const clipboard = await waitFor("the code on the clipboard", async () => {
        const text = await page.evaluate(() => navigator.clipboard.readText());
        return text.includes("def greet") ? text : false;
      }, 15_000);
      // Insert at cursor: into the active editor (an empty scratch file).
      await openFile(page, "scratch.py", ACTIVE_GROUP_TAB);
      await block.locator("button.code-insert").click();
      const inserted = await waitFor("the code inserted in scratch.py", async () => {
        const text = await editorText(page);
        return text.includes(NEW_LINE) ? text : false;
      });
      // Apply to file: the agent applies it to the active file, through its edit tools.
      await openFile(page, "greet.py", ACTIVE_GROUP_TAB);
      await waitFor("the context chip to name greet.py", async () => ((await chat.locator(".context .context-label").textContent()) || "").startsWith("greet.py"), 15_000);
      await block.locator("button.code-apply").click();
      const applied = await waitFor("the applied answer", async () => {
        const turns = await chatTurns(chat);
        const turn = turns.find((t) => t.prompt.startsWith("Apply this code to greet.py"));
        return turn && !turn.live && turn.answer.includes(APPLIED_ANSWER) ? turn : false;
      }, TURN_TIMEOUT_MS);
      const editor = await waitFor("the applied edit in greet.py", async () => {
        const text = await editorText(page);
        return text.includes(NEW_LINE) ? text : false;
      });
      const requests = requestsSent(requestsFile);
      const applyRequest = JSON.stringify(requests[2] ?? {});
      return {
        clipboard,
        inserted,
        apply_prompt: applied.prompt,
        editor_after_apply: editor,
        apply_request_has_code: applyRequest.includes("Apply this code to greet.py") && applyRequest.includes('return f\\"Hello, {name}!\\"'),
        origins: requests.length,
      };
    }, page),
  );

  all.push(
    await step("queue_and_escape", async () => {
      const slow = "Take your time";
      await sendInChat(page, chat, slow);
      const progress = await waitFor("Working… N s before the first token", async () => {
        const text = await chat.locator("section.turn.live .progress").textContent().catch(() => "");
        return /^Working… \d+ s$/.test(text || "") ? text : false;
      });
      const queuedPrompt = "Queued follow-up";
      await page.keyboard.type(queuedPrompt, { delay: 5 });
      await page.keyboard.press("Enter");
      const queued = await waitFor("the queued message", async () => {
        const items = await chat.locator(".queue li .queued-text").allTextContents();
        return items.length === 1 ? items : false;
      }, 15_000);
      const sendLabel = await chat.locator("button.send").textContent();
      await screenshot(page, "chat-daily-queued");
      // Escape in the input stops the running turn; the queued message then goes out.
      const t0 = Date.now();
      await page.keyboard.press("Escape");
      const stopped = await waitForTurn(chat, slow, (t) => !t.live, "the slow turn to stop");
      const stopMs = Date.now() - t0;
      const answered = await waitForTurn(chat, queuedPrompt, (t) => !t.live && t.answer.includes(QUEUED_ANSWER), "the queued message's answer");
      const queueAfter = await chat.locator(".queue li").count();
      return { progress, queued, send_label: sendLabel, slow_notices: stopped.turn.notices, stop_ms: stopMs, queued_answer: answered.turn.answer, queue_after: queueAfter };
    }, page),
  );

  all.push(
    await step("approval_card", async () => {
      const prompt = "Run the check";
      await sendInChat(page, chat, prompt);
      const card = chat.locator("section.turn.live .approval").first();
      await card.waitFor({ state: "visible", timeout: TURN_TIMEOUT_MS });
      const shown = await card.evaluate((box) => ({
        question: box.querySelector(".approval-question")?.textContent || "",
        command: box.querySelector("pre.approval-command > code")?.textContent || "",
        always_button: box.querySelector(".approval-always button")?.textContent || "",
        always_scope: box.querySelector(".approval-always .approval-scope")?.textContent || "",
        // Set apart: "Allow always" is on a line below the other answers.
        always_below: (() => {
          const always = box.querySelector(".approval-always")?.getBoundingClientRect();
          const once = [...box.querySelectorAll("button")].find((b) => b.textContent === "Allow once")?.getBoundingClientRect();
          return !!always && !!once && always.top >= once.bottom;
        })(),
      }));
      // The chat is on screen: the question is asked there only (no duplicate toast).
      const toastWhileAsked = !!(await findNotification(page, "lich wants to run terminal"));
      await docsScreenshot(page, "vscode-chat-approval");
      await card.locator("button", { hasText: /^Deny$/ }).click();
      const answered = await waitForTurn(chat, prompt, (t) => !t.live && t.answer.includes(DENIED_ANSWER), "the answer after Deny");
      const toast = await findNotification(page, "lich wants to run terminal");
      return { ...shown, answer: answered.turn.answer, toast_while_asked: toastWhileAsked, toast_left: !!toast };
    }, page),
  );

  all.push(
    await step("rewind_confirmation", async () => {
      const section = chat.locator("section.turn", { has: chat.locator(".prompt-text", { hasText: /^Apply this code to greet\.py/ }) }).first();
      const rewind = section.locator("button.rewind");
      await rewind.focus();
      await rewind.press("Enter");
      const question = await waitFor("the rewind question", async () => (await section.locator(".rewind-question").textContent().catch(() => "")) || false, 15_000);
      const confirmFocused = await section.locator("button.rewind-confirm").evaluate((el) => el === document.activeElement);
      await section.locator("button.rewind-cancel").click();
      const keptAfterCancel = (await section.locator(".rewind-question").count()) === 0 && !(await section.evaluate((s) => s.classList.contains("discarded")));
      const editorAfterCancel = await editorText(page);
      await rewind.focus();
      await rewind.press("Enter");
      await section.locator("button.rewind-confirm").click();
      const restored = await waitFor("greet.py restored after the rewind", async () => {
        const text = await editorText(page);
        return text.includes(OLD_LINE) && !text.includes(NEW_LINE) ? text : false;
      });
      const notice = await waitFor("the rewind notice", async () => {
        const texts = await chat.locator(".log > p.notice, .log > p.error").allTextContents();
        return texts.find((t) => t.startsWith("Rewound")) || false;
      }, 30_000);
      await screenshot(page, "chat-daily-rewound");
      return { question, confirm_focused: confirmFocused, kept_after_cancel: keptAfterCancel, editor_after_cancel: editorAfterCancel, editor_after_rewind: restored, notice };
    }, page),
  );

  all.push(
    await step("keyboard_tab", async () => {
      // Every control is reached with Tab, each with a visible focus outline.
      await chat.locator("select.threads").focus();
      const seen = [];
      for (let i = 0; i < 400; i++) {
        const focused = await chat.locator(":root").evaluate(() => {
          const el = document.activeElement;
          if (!el || el === document.body) {
            return null;
          }
          const style = getComputedStyle(el);
          return { name: `${el.tagName.toLowerCase()}.${[...el.classList].join(".")}`, outline: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0 };
        });
        if (!focused || (seen.length > 0 && focused.name === "select.threads")) {
          break;
        }
        seen.push(focused);
        await page.keyboard.press("Tab");
      }
      const names = [...new Set(seen.map((f) => f.name))];
      const withoutOutline = [...new Set(seen.filter((f) => !f.outline).map((f) => f.name))];
      return { reached: names, without_outline: withoutOutline };
    }, page),
  );

  all.push(
    await step("themes", async () => {
      // The docs' light and dark pictures of a thread with markdown, code and a queued-then-sent turn.
      await chat.locator("section.turn").first().evaluate((s) => s.scrollIntoView({ block: "start" }));
      await docsScreenshot(page, "vscode-chat-dark");
      await runCommand(page, "Preferences: Color Theme");
      await waitFor("the theme pick", () => quickInputVisible(page), 15_000);
      await page.locator(".quick-input-widget input.input").first().fill("Light Modern");
      await pickRow(page, "Light Modern");
      await waitFor("the light theme", () => page.evaluate(() => document.querySelector(".monaco-workbench")?.classList.contains("vs")), 15_000);
      await page.keyboard.press("Escape");
      await docsScreenshot(page, "vscode-chat-light");
      return {};
    }, page),
  );

  all.push(
    await step("new_thread_focuses_input", async () => {
      await chat.locator("button.new-thread").click();
      const focused = await waitFor("the input to have the focus", () => input.evaluate((el) => el === document.activeElement), 15_000);
      const empty = await waitFor("the new thread's empty view", async () => (await chat.locator("section.turn").count()) === 0, 15_000);
      return { input_focused: focused, empty };
    }, page),
  );
  return all.every(Boolean);
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const chromium = requireTools();
  const { scratch, home, userData, extensionsDir } = makeScratch("lich-vscode-chat-e2e-");
  result.scratch = scratch;
  const folder = path.join(scratch, "chat-daily");
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, "greet.py"), GREET_PY);
  fs.writeFileSync(path.join(folder, "scratch.py"), "");
  const turnsFile = path.join(scratch, "turns.json");
  const requestsFile = path.join(scratch, "requests.jsonl");
  fs.writeFileSync(turnsFile, JSON.stringify(scriptedTurns(), null, 1));

  const env = isolatedEnv(home, { [FAKE_KEY_ENV]: "sk-fake-e2e" });
  const providerUrl = await startFakeModel(fakeProviderArgs(turnsFile, requestsFile), env, path.join(scratch, "fake-provider.log"));

  const settings = {
    ...BASE_SETTINGS,
    "workbench.colorTheme": "Default Dark Modern",
    "lich.server.command": PYTHON,
    "lich.server.args": ["-m", "lich_lsp"],
    "lich.provider.kind": "openai_compat",
    "lich.baseUrl": `${providerUrl}/v1`,
    "lich.model": "fake-model",
    "lich.apiKeyEnv": FAKE_KEY_ENV,
    "lich.approval": { "file/edit": "allow", "file/write": "allow" },
  };
  // code-server windows are remote: machine-scoped settings are read from Machine/settings.json.
  writeSettings(userData, settings);

  const csArgs = codeServerArgs(userData, extensionsDir);
  installVsix(env, csArgs);
  const base = await startCodeServer({ env, csArgs, folder, cwd: folder, logFile: path.join(scratch, "code-server.log"), timeoutMs: SERVER_START_TIMEOUT_MS });

  const browser = await launchChromium(chromium);
  try {
    const context = await newContext(browser);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const page = await context.newPage();
    await page.goto(`${base}/?folder=${encodeURIComponent(folder)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: SERVER_START_TIMEOUT_MS });
    // Ready once the server answered lich.status: a status item names the scripted model.
    await waitFor("the server's model in the status bar", async () => (await statusTexts(page)).some((t) => t.includes("fake-model")), SERVER_START_TIMEOUT_MS);
    result.ok = await run(page, folder, requestsFile);
    result.requests = requestsSent(requestsFile).length;
  } finally {
    await browser.close().catch(() => undefined);
  }
}

let exitCode = 0;
try {
  await main();
  exitCode = result.ok ? 0 : 1;
} catch (err) {
  result.errors.push(err instanceof Error ? err.message : String(err));
  log(`setup failed: ${err instanceof Error ? err.stack : err}`);
  exitCode = 2;
} finally {
  await stopAll();
  if (result.scratch && process.env.LICH_E2E_KEEP !== "1") {
    fs.rmSync(result.scratch, { recursive: true, force: true });
  }
}
printResult(result);
process.exit(exitCode);
