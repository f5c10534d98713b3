// End-to-end test of next edit suggestions (issue #47) in a real VS Code: code-server 4.100.3
// (VS Code 1.100.3) with the packaged extension, driven by headless Chromium through
// playwright-core, against the real lich-lsp server whose `next_edit` model (the user's config
// file) is the fake Zeta model of tests/support/fake_zeta.py (it renames `count` to `total` in the
// editable region it is sent).
//
// In calc.py the user selects `count` at its definition and types `total`. The two uses below
// show as inline diffs at their place (the old name struck through, the new one after it, a
// gutter marker); Tab moves the cursor to the first, Tab again accepts it; the same for the
// second. Then a new use typed at the end of the file is suggested and Escape dismisses it, and
// `x = tot` gets `al` as ghost text after the cursor, which Tab accepts. The file is saved and
// read from disk. Prints one line `E2E_RESULT {json}` (tests/editors/
// test_vscode_next_edit_e2e.py reads it); screenshots go to LICH_ARTIFACTS_DIR.
//
// Environment: LICH_PYTHON, LICH_VSCODE_CACHE, LICH_VSIX, LICH_ARTIFACTS_DIR, LICH_CHROMIUM (as
// e2e/run.mjs). See /work/shared/VSCODE-E2E.md for how code-server is installed and run here.
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ARTIFACTS,
  BASE_SETTINGS,
  PYTHON,
  codeServerArgs,
  configure,
  installVsix,
  isolatedEnv,
  launchChromium,
  lichStatus,
  log,
  makeScratch,
  newContext,
  openFile,
  printResult,
  requestsSent,
  requireTools,
  screenshotTo,
  startCodeServer,
  startFakeModel,
  stopAll,
  waitFor,
  writeSettings,
} from "./harness.mjs";

const SERVER_START_TIMEOUT_MS = 90_000;
const IDLE_STATUS = /^Lich: openai_compat\/fake-model/;
const FILE = "calc.py";
const CALC = "def summary(items):\n    count = 0\n    for item in items:\n        count += item\n    return count\n";

const result = { ok: false, steps: {}, screenshots: [], errors: [] };

// How often a wait looks at the page again (each wait is on a condition, bounded by its timeout);
// a wait that times out says what the editor drew last.
configure({ tag: "next-edit-e2e", poll: 100, onTimeout: () => `; the editor drew ${JSON.stringify(lastDrawn)}` });

// --- the page ------------------------------------------------------------------------------

/** The cursor as the status bar shows it: [line, column], 1-based. */
async function cursorPosition(page) {
  const text = await page.evaluate(() => document.querySelector("#status\\.editor\\.selection")?.textContent || "");
  const match = /Ln (\d+), Col (\d+)/.exec(text);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/**
 * What the editor draws, line by line in order (Monaco recycles line elements: sorted by their
 * top): the line's text, the text of its `after` decorations (VS Code draws them with CSS
 * ::after), whether part of it is struck through, and whether its gutter shows a lich marker.
 */
async function drawnLines(page) {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-group-container.active .monaco-editor");
    if (!editor) {
      return [];
    }
    const clean = (text) => text.replace(/\u00a0/g, " ");
    // Gutter icons are absolutely placed elements of their own (the glyph margin): matched to
    // the line at the same height on the screen.
    const markers = [...editor.querySelectorAll(".margin *")]
      .filter((el) => getComputedStyle(el).backgroundImage.includes("next-edit.svg"))
      .map((el) => el.getBoundingClientRect())
      .filter((box) => box.height > 0);
    const lines = [...editor.querySelectorAll(".view-lines .view-line")].map((line) => {
      const spans = [...line.querySelectorAll("span span, span")];
      const afterStyles = spans
        .map((span) => getComputedStyle(span, "::after"))
        .filter((style) => style.content && style.content !== "none" && style.content !== "normal");
      const after = afterStyles.map((style) => clean(style.content.replace(/^"|"$/g, "")));
      // Ghost text (a suggestion at the cursor) is drawn in italics; an inline diff's new text is not.
      const ghost = afterStyles.some((style) => style.fontStyle === "italic");
      const struck = spans
        .filter((span) => span.children.length === 0 && getComputedStyle(span).textDecorationLine.includes("line-through"))
        .map((span) => clean(span.textContent));
      const top = parseFloat(line.style.top || "0");
      const box = line.getBoundingClientRect();
      const marker = markers.some((m) => (m.top + m.bottom) / 2 > box.top && (m.top + m.bottom) / 2 < box.bottom);
      return { top, text: clean(line.textContent), after, struck, marker, ghost };
    });
    lines.sort((a, b) => a.top - b.top);
    return lines.map(({ top, ...rest }) => rest);
  }).then((lines) => (lastDrawn = lines));
}

/** The last drawing read, for the error when a wait on it times out. */
let lastDrawn = [];

async function editorText(page) {
  return (await drawnLines(page)).map((line) => line.text).join("\n");
}

async function screenshot(page, name) {
  return screenshotTo(page, path.join(ARTIFACTS, `vscode-next-edit-${name}.png`), result);
}

/** The lines that show a suggestion: a marker, struck-through text or an `after` text. */
function suggested(lines) {
  return lines.filter((line) => line.marker || line.struck.length > 0 || line.after.length > 0);
}

async function step(name, fn) {
  const t0 = Date.now();
  const details = await fn();
  result.steps[name] = { ms: Date.now() - t0, ...(details || {}) };
  log(`step ${name} ok`);
  return details;
}

async function scenario(page, folder) {
  await openFile(page, FILE);
  await waitFor("the Lich status bar item (the server answered lich.status)", async () => IDLE_STATUS.test(await lichStatus(page)), SERVER_START_TIMEOUT_MS);
  await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  // Line 2, column 5: the start of `count` at its definition; Ctrl+D selects the word.
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("End");
  await page.keyboard.press("Home");
  await page.keyboard.press("Control+D");
  await page.keyboard.type("total", { delay: 30 });

  await step("shown", async () => {
    const lines = await waitFor("suggestions on the two uses of count", async () => {
      const drawn = await drawnLines(page);
      const shown = suggested(drawn);
      return shown.length === 2 && shown.every((line) => line.marker && line.struck.includes("count") && line.after.includes("total")) ? drawn : false;
    });
    const shot = await screenshot(page, "shown");
    return { lines, cursor: await cursorPosition(page), screenshot: shot };
  });

  await page.keyboard.press("Tab");
  await step("jumped", async () => {
    const cursor = await waitFor("the cursor on the first suggestion (line 4)", async () => {
      const at = await cursorPosition(page);
      return at && at[0] === 4 ? at : false;
    });
    return { cursor, text: await editorText(page) };
  });

  await page.keyboard.press("Tab");
  await step("accepted_first", async () => {
    const text = await waitFor("line 4 renamed", async () => {
      const now = await editorText(page);
      return now.includes("        total += item") ? now : false;
    });
    return { text, cursor: await cursorPosition(page) };
  });

  await step("second_shown", async () => {
    const lines = await waitFor("the suggestion on the last use", async () => {
      const drawn = await drawnLines(page);
      const shown = suggested(drawn);
      return shown.length === 1 && shown[0].text.includes("return count") && shown[0].after.includes("total") ? drawn : false;
    });
    return { lines };
  });
  await page.keyboard.press("Tab");
  await waitFor("the cursor on line 5", async () => (await cursorPosition(page))?.[0] === 5);
  await page.keyboard.press("Tab");
  const renamed = await step("accepted_second", async () => {
    const text = await waitFor("line 5 renamed", async () => {
      const now = await editorText(page);
      return now.includes("    return total") ? now : false;
    });
    return { text };
  });

  // A new use of the old name: suggested, then dismissed with Escape.
  await page.keyboard.press("Control+End");
  await page.keyboard.type("print(count)", { delay: 30 });
  await step("new_use_shown", async () => {
    const lines = await waitFor("the suggestion on the new line", async () => {
      const drawn = await drawnLines(page);
      const shown = suggested(drawn);
      return shown.length === 1 && shown[0].text.includes("print(count)") && shown[0].after.includes("total") ? drawn : false;
    });
    await screenshot(page, "new-use");
    return { lines };
  });
  await page.keyboard.press("Escape");
  await step("dismissed", async () => {
    const lines = await waitFor("no suggestion after Escape", async () => {
      const drawn = await drawnLines(page);
      return suggested(drawn).length === 0 ? drawn : false;
    });
    return { lines, text: await editorText(page) };
  });

  // A suggestion at the cursor (the model completes `tot` to `total`): ghost text after the
  // cursor, no marker, nothing struck; Tab accepts it at once.
  // On a new line 2 (not at the end of the file, which has no final line break by now).
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("x = tot", { delay: 30 });
  await step("ghost_shown", async () => {
    const lines = await waitFor("ghost text after the cursor", async () => {
      const drawn = await drawnLines(page);
      const line = drawn.find((l) => l.text.trim() === "x = tot"); // indented after the `def` line
      return line && line.ghost && line.after.join("") === "al" && !line.marker && line.struck.length === 0 ? drawn : false;
    });
    await screenshot(page, "ghost");
    return { lines, cursor: await cursorPosition(page) };
  });
  await page.keyboard.press("Tab");
  await step("ghost_accepted", async () => {
    const text = await waitFor("the ghost text accepted", async () => {
      const now = await editorText(page);
      return now.includes("x = total") ? now : false;
    });
    return { text, cursor: await cursorPosition(page) };
  });

  await page.keyboard.press("Control+S");
  const disk = await waitFor("the saved file", () => {
    const text = fs.readFileSync(path.join(folder, FILE), "utf8");
    return text.includes("x = total") ? text : false;
  });
  return { renamed: renamed.text, disk_text: disk };
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const chromium = requireTools();
  const { scratch, home, userData, extensionsDir } = makeScratch("lich-next-edit-e2e-");
  result.scratch = scratch;
  const folder = path.join(scratch, "project");
  fs.mkdirSync(path.join(folder, ".git"), { recursive: true });
  fs.writeFileSync(path.join(folder, FILE), CALC);
  const env = isolatedEnv(home);

  const requestsFile = path.join(scratch, "zeta-requests.jsonl");
  const zetaArgs = ["-m", "tests.support.fake_zeta", "--port", "0", "--rename", "count=total", "--rename", "tot=total", "--requests", requestsFile];
  const zetaUrl = await startFakeModel(zetaArgs, env, path.join(scratch, "zeta.log"), "the fake Zeta model");
  // The next-edit model is a user-side key: the user's config file (the server inherits HOME).
  const userConfig = path.join(home, ".config", "lich", "config.json");
  fs.mkdirSync(path.dirname(userConfig), { recursive: true });
  fs.writeFileSync(userConfig, JSON.stringify({ next_edit: { kind: "openai_compat", format: "zeta", base_url: `${zetaUrl}/v1`, model: "zeta" } }, null, 2));

  const settings = {
    ...BASE_SETTINGS,
    "editor.quickSuggestions": { other: false, comments: false, strings: false },
    "editor.wordBasedSuggestions": "off",
    "lich.server.command": PYTHON,
    "lich.server.args": ["-m", "lich_lsp"],
    // A chat provider that is never asked; the status bar names it once the server answered.
    "lich.provider.kind": "openai_compat",
    "lich.baseUrl": `${zetaUrl}/v1`,
    "lich.model": "fake-model",
  };
  // code-server reads machine-scoped settings (lich.server.*) from the Machine settings (run.mjs).
  writeSettings(userData, settings);

  const csArgs = codeServerArgs(userData, extensionsDir);
  installVsix(env, csArgs);
  const base = await startCodeServer({ env, csArgs, folder, cwd: folder, logFile: path.join(scratch, "code-server.log"), timeoutMs: SERVER_START_TIMEOUT_MS });

  const browser = await launchChromium(chromium);
  let page;
  try {
    const context = await newContext(browser);
    page = await context.newPage();
    await page.goto(`${base}/?folder=${encodeURIComponent(folder)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: SERVER_START_TIMEOUT_MS });
    Object.assign(result, await scenario(page, folder));
    result.requests = requestsSent(requestsFile);
    result.ok = true;
  } catch (err) {
    result.errors.push(err instanceof Error ? err.stack || err.message : String(err));
    if (page) {
      await screenshot(page, "failed").catch(() => undefined);
    }
  } finally {
    await browser.close().catch(() => undefined);
  }
}

try {
  await main();
} catch (err) {
  result.errors.push(err instanceof Error ? err.stack || err.message : String(err));
} finally {
  await stopAll();
  printResult(result);
}
