import { beforeEach, describe, expect, it, vi } from "vitest";
import { activate } from "../src/extension";
import { LAST_FILTER_KEY, PROBLEMS_COMMAND, RUN_TESTS_COMMAND, runTestsOutcome, SHOW_PROBLEMS_ACTION, testSummary } from "../src/runTests";
import { clients } from "./mocks/languageclient";
import { mock, window } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

const RUN = "lichClient.runTests";
const RUN_MATCHING = "lichClient.runTestsMatching";
const TEST_URI = "file:///ws/tests/test_calc.py";

const GREEN = { ok: true, summary: "3 passed in 0.41s", passed: 3, failed: 0, errors: 0, skipped: 0, failures: [] };
const RED = {
  ok: false,
  summary: "1 failed, 2 passed in 0.52s",
  passed: 2,
  failed: 1,
  errors: 0,
  skipped: 0,
  failures: [{ test_id: "tests/test_calc.py::test_add", uri: TEST_URI, line: 4, message: "assert 4 == 3" }],
  error: "tests_failed: 1 failed, 2 passed",
};

function context() {
  const state = new Map<string, unknown>();
  return {
    state,
    subscriptions: [] as { dispose(): void }[],
    workspaceState: { get: (k: string, d: unknown) => (state.has(k) ? state.get(k) : d), update: async (k: string, v: unknown) => void state.set(k, v) },
  };
}

async function started() {
  mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
  mock.files.set("/opt/py/bin/python", "");
  const ctx = context();
  await activate(ctx as never);
  expect(clients).toHaveLength(1);
  return { ctx, client: clients[0] };
}

function runRequests() {
  return clients[0].sent.filter((s) => s.command === RUN_TESTS_COMMAND);
}

beforeEach(() => {
  mock.reset();
  clients.length = 0;
  (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
});

describe("Lich: Run Tests", () => {
  it("sends lich.runTests {} and tells a green run as information", async () => {
    const { ctx, client } = await started();
    client.responses[RUN_TESTS_COMMAND] = GREEN;
    const result = await mock.commands.get(RUN)!();
    expect(runRequests()).toEqual([{ command: RUN_TESTS_COMMAND, arguments: [{}] }]);
    expect(result).toEqual(GREEN);
    expect(mock.infos).toEqual(["Lich: tests passed: 3 passed in 0.41s"]);
    expect(mock.warnings).toEqual([]);
    expect(mock.errors).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("tells a red run as a warning whose Show Problems button opens the Problems view", async () => {
    mock.warningChoice = SHOW_PROBLEMS_ACTION;
    const { ctx, client } = await started();
    client.responses[RUN_TESTS_COMMAND] = RED;
    const result = await mock.commands.get(RUN)!();
    expect(result).toEqual(RED);
    expect(mock.warningPrompts).toEqual([{ message: "Lich: tests failed: 1 failed, 2 passed in 0.52s", actions: [SHOW_PROBLEMS_ACTION] }]);
    expect(mock.infos).toEqual([]);
    expect(mock.errors).toEqual([]);
    await vi.waitFor(() => expect(mock.executed).toContainEqual({ command: PROBLEMS_COMMAND, args: [] }));
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("leaves the Problems view alone when the warning is dismissed", async () => {
    const { ctx, client } = await started();
    client.responses[RUN_TESTS_COMMAND] = RED;
    await mock.commands.get(RUN)!();
    expect(mock.warnings).toHaveLength(1);
    // Let the warning's then() run before looking.
    await new Promise((resolve) => setImmediate(resolve));
    expect(mock.executed.some((e) => e.command === PROBLEMS_COMMAND)).toBe(false);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it.each([
    ["no_test_command: no test_command configured and the root is not a Python project"],
    ["run_tests_busy: a test run is already going"],
  ])("shows a run that could not happen (%s) as an error", async (error) => {
    const { ctx, client } = await started();
    client.responses[RUN_TESTS_COMMAND] = { ok: false, summary: "", passed: 0, failed: 0, errors: 0, skipped: 0, failures: [], error };
    await mock.commands.get(RUN)!();
    expect(mock.errors).toEqual([{ message: `Lich: running the tests failed: ${error}`, actions: [] }]);
    expect(mock.warnings).toEqual([]);
    expect(mock.infos).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("reports a failed request as an error", async () => {
    const { ctx, client } = await started();
    client.sendRequest = async (_type: unknown, params: { command: string; arguments: unknown[] }) => {
      client.sent.push(params);
      throw new Error("Unhandled method lich.runTests");
    };
    expect(await mock.commands.get(RUN)!()).toBeUndefined();
    expect(mock.errors.map((e) => e.message)).toEqual(["Lich: running the tests failed: Unhandled method lich.runTests"]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("tells the user the server is not running instead of sending", async () => {
    mock.config["lich.server.command"] = { global: "/does/not/exist/lich-lsp" };
    const ctx = context();
    await activate(ctx as never);
    mock.errors = [];
    expect(await mock.commands.get(RUN)!()).toBeUndefined();
    expect(mock.errors).toHaveLength(1);
    expect(mock.errors[0].message).toContain("pip install lich-lsp");
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

describe("Lich: Run Tests Matching…", () => {
  it("sends the typed filter and offers it again next time", async () => {
    const { ctx, client } = await started();
    client.responses[RUN_TESTS_COMMAND] = GREEN;
    mock.inputBoxAnswer = "  tests/test_calc.py::test_sub ";
    await mock.commands.get(RUN_MATCHING)!();
    expect(runRequests()).toEqual([{ command: RUN_TESTS_COMMAND, arguments: [{ filter: "tests/test_calc.py::test_sub" }] }]);
    expect(mock.inputBoxes[0]).toMatchObject({ title: "Lich: Run Tests Matching…", value: "" });
    expect(ctx.state.get(LAST_FILTER_KEY)).toBe("tests/test_calc.py::test_sub");
    mock.inputBoxAnswer = "-k add";
    await mock.commands.get(RUN_MATCHING)!();
    expect(mock.inputBoxes[1]).toMatchObject({ value: "tests/test_calc.py::test_sub" });
    expect(runRequests()[1]).toEqual({ command: RUN_TESTS_COMMAND, arguments: [{ filter: "-k add" }] });
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("sends nothing when the input box is dismissed, and runs everything for an empty filter", async () => {
    const { ctx, client } = await started();
    client.responses[RUN_TESTS_COMMAND] = GREEN;
    mock.inputBoxAnswer = undefined;
    expect(await mock.commands.get(RUN_MATCHING)!()).toBeUndefined();
    expect(runRequests()).toEqual([]);
    expect(mock.infos).toEqual([]);
    mock.inputBoxAnswer = "   ";
    await mock.commands.get(RUN_MATCHING)!();
    expect(runRequests()).toEqual([{ command: RUN_TESTS_COMMAND, arguments: [{}] }]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

describe("runTestsOutcome", () => {
  it("green, red and error", () => {
    expect(runTestsOutcome(GREEN)).toEqual({ level: "info", message: "Lich: tests passed: 3 passed in 0.41s" });
    expect(runTestsOutcome(RED)).toEqual({ level: "warning", message: "Lich: tests failed: 1 failed, 2 passed in 0.52s" });
    expect(runTestsOutcome({ ok: false, error: "no_test_command: none" })).toEqual({ level: "error", message: "Lich: running the tests failed: no_test_command: none" });
  });

  it("counts a run with failures but another error prefix, or no error at all, as red", () => {
    expect(runTestsOutcome({ ok: false, failed: 0, errors: 1, summary: "1 error in 0.1s" }).level).toBe("warning");
    expect(runTestsOutcome({ ok: false, error: "something_new: x", failures: [{ test_id: "t", uri: TEST_URI, line: 0, message: "m" }] }).level).toBe("warning");
  });

  it("builds a summary from the counts when the server sent none", () => {
    expect(testSummary({ failed: 1, passed: 3 })).toBe("1 failed, 3 passed");
    expect(testSummary({ errors: 1, skipped: 2 })).toBe("1 error, 2 skipped");
    expect(testSummary({ errors: 2 })).toBe("2 errors");
    expect(testSummary({})).toBe("no tests ran");
    expect(testSummary({ summary: " 5 passed in 1.00s ", passed: 5 })).toBe("5 passed in 1.00s");
  });
});
