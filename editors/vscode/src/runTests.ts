/**
 * "Lich: Run Tests" and "Lich: Run Tests Matching…" (server command `lich.runTests`).
 *
 * The server makes disk match the editor's buffers, runs the workspace's test command (pytest by
 * default, `test_command` in the config), publishes each failing test as a diagnostic (source
 * `lich tests`) and answers with the counts. Work-done progress comes from the server; here we
 * only send the command and show the outcome: green → information, red → warning with a "Show
 * Problems" button, anything else (no test command, a run already going, ...) → error.
 */

export const RUN_TESTS_COMMAND = "lich.runTests";
export const SHOW_PROBLEMS_ACTION = "Show Problems";
/** VS Code's own command behind "Show Problems". */
export const PROBLEMS_COMMAND = "workbench.actions.view.problems";
/** workspaceState key: the filter last typed into "Run Tests Matching…". */
export const LAST_FILTER_KEY = "lich.runTests.lastFilter";
/** The error prefix of a run that worked but had failing tests (the rest are real errors). */
export const TESTS_FAILED_PREFIX = "tests_failed";

export interface RunTestsArgs {
  filter?: string;
}

export interface TestFailure {
  test_id?: string;
  uri?: string;
  /** 0-based (LSP). */
  line?: number;
  message?: string;
}

export interface RunTestsResult {
  ok?: boolean;
  summary?: string;
  passed?: number;
  failed?: number;
  errors?: number;
  skipped?: number;
  failures?: TestFailure[];
  error?: string | null;
}

/** The parts of vscode.window the command needs. */
export interface RunTestsUi {
  showInformationMessage(message: string): Thenable<unknown>;
  showWarningMessage(message: string, ...actions: string[]): Thenable<string | undefined>;
  showErrorMessage(message: string): Thenable<unknown>;
  showInputBox(options: { title?: string; prompt?: string; value?: string; placeHolder?: string; ignoreFocusOut?: boolean }): Thenable<string | undefined>;
}

export interface RunTestsDeps {
  /** Sends `lich.runTests` with these arguments; undefined when the server is not running (already reported). */
  send(args: RunTestsArgs): Promise<RunTestsResult | undefined>;
  ui: RunTestsUi;
  /** Opens the Problems view (the warning's action). */
  showProblems(): void;
}

export type Outcome = { level: "info" | "warning" | "error"; message: string };

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** The server's summary line, else one built from the counts ("1 failed, 3 passed"). */
export function testSummary(result: RunTestsResult): string {
  const summary = typeof result.summary === "string" ? result.summary.trim() : "";
  if (summary) {
    return summary;
  }
  const parts = (["failed", "errors", "passed", "skipped"] as const)
    .filter((key) => count(result[key]) > 0)
    .map((key) => `${count(result[key])} ${key === "errors" ? (count(result[key]) === 1 ? "error" : "errors") : key}`);
  return parts.length > 0 ? parts.join(", ") : "no tests ran";
}

/** How to tell the user about `result`: which kind of notification, with what text. */
export function runTestsOutcome(result: RunTestsResult): Outcome {
  const summary = testSummary(result);
  if (result.ok === true) {
    return { level: "info", message: `Lich: tests passed: ${summary}` };
  }
  const error = typeof result.error === "string" ? result.error.trim() : "";
  const red = error.startsWith(TESTS_FAILED_PREFIX) || (!error && (count(result.failed) > 0 || count(result.errors) > 0));
  if (red || (Array.isArray(result.failures) && result.failures.length > 0)) {
    return { level: "warning", message: `Lich: tests failed: ${summary}` };
  }
  return { level: "error", message: `Lich: running the tests failed: ${error || summary}` };
}

/**
 * Run the tests (all of them, or those `filter` selects: it is appended to the test command).
 * Returns the server's result, or undefined when nothing was sent or the request failed.
 */
export async function runTestsCommand(deps: RunTestsDeps, filter?: string): Promise<RunTestsResult | undefined> {
  const trimmed = filter?.trim();
  let result: RunTestsResult | undefined;
  try {
    result = await deps.send(trimmed ? { filter: trimmed } : {});
  } catch (err) {
    void deps.ui.showErrorMessage(`Lich: running the tests failed: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
  if (result === undefined) {
    return undefined;
  }
  if (!result || typeof result !== "object") {
    void deps.ui.showErrorMessage(`Lich: unexpected answer from ${RUN_TESTS_COMMAND}: ${JSON.stringify(result)}`);
    return undefined;
  }
  const outcome = runTestsOutcome(result);
  if (outcome.level === "info") {
    void deps.ui.showInformationMessage(outcome.message);
  } else if (outcome.level === "warning") {
    void deps.ui.showWarningMessage(outcome.message, SHOW_PROBLEMS_ACTION).then((choice) => {
      if (choice === SHOW_PROBLEMS_ACTION) {
        deps.showProblems();
      }
    });
  } else {
    void deps.ui.showErrorMessage(outcome.message);
  }
  return result;
}

/** "Run Tests Matching…": ask for the filter (prefilled with the last one); undefined when dismissed. */
export async function askForFilter(ui: RunTestsUi, last: string | undefined): Promise<string | undefined> {
  return ui.showInputBox({
    title: "Lich: Run Tests Matching…",
    prompt: "Appended to the test command, e.g. tests/test_calc.py::test_add or -k add (empty: all tests)",
    placeHolder: "tests/test_calc.py::test_add",
    value: last ?? "",
    ignoreFocusOut: true,
  });
}
