import { beforeEach, describe, expect, it, vi } from "vitest";
import { activate } from "../src/extension";
import {
  ACCEPT_ALL_COMMAND,
  ACCEPT_HUNK_COMMAND,
  REJECT_ALL_COMMAND,
  REJECT_HUNK_COMMAND,
  REVIEW_COMMANDS,
  ReviewCodeLensProvider,
  reviewLenses,
  reviewOutcome,
} from "../src/review";
import { serverSettings, type SettingsSource } from "../src/settings";
import { clients } from "./mocks/languageclient";
import { CodeLens, mock, Position, Range, Uri, window } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

const DOC_URI = "file:///ws/r.py";

function hunk(id: string, line: number, message = `lich: proposed change ${id} (bump): replace line ${line + 1} with 1 line\n- a\n+ b`) {
  return { source: "lich review", code: id, message, range: new Range(new Position(line, 0), new Position(line, 6)) };
}

function context() {
  return {
    subscriptions: [] as { dispose(): void }[],
    workspaceState: { get: (_k: string, d: unknown) => d, update: async () => undefined },
  };
}

async function started() {
  mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
  mock.files.set("/opt/py/bin/python", "");
  const ctx = context();
  await activate(ctx as never);
  return { ctx, client: clients[0] };
}

function lensesFor(uri: string): CodeLens[] {
  const { provider } = mock.codeLensProviders[0] as { provider: ReviewCodeLensProvider };
  return provider.provideCodeLenses({ uri: Uri.parse(uri) } as never) as unknown as CodeLens[];
}

beforeEach(() => {
  mock.reset();
  clients.length = 0;
  (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
});

describe("review lenses from the lich review diagnostics", () => {
  it("puts Accept and Reject on each pending hunk's range, ignoring other sources", () => {
    const lenses = reviewLenses([
      hunk("t1-1", 2),
      { source: "lich tests", code: "tests/test_x.py::test_a", range: "elsewhere", message: "failed" },
      { source: "lich review", code: { value: "t1-2" }, range: "r2", message: "second" },
      { source: "lich review", range: "no id", message: "skipped" },
    ]);
    expect(lenses.map((l) => [l.title, l.command, l.arguments[0].hunk_id])).toEqual([
      ["Accept", REVIEW_COMMANDS.acceptHunk, "t1-1"],
      ["Reject", REVIEW_COMMANDS.rejectHunk, "t1-1"],
      ["Accept", REVIEW_COMMANDS.acceptHunk, "t1-2"],
      ["Reject", REVIEW_COMMANDS.rejectHunk, "t1-2"],
    ]);
    expect(lenses[0].range).toEqual(new Range(new Position(2, 0), new Position(2, 6)));
    expect(lenses[0].tooltip).toBe("lich: proposed change t1-1 (bump): replace line 3 with 1 line");
  });

  it("follows the diagnostics: the provider redraws when they change and its lenses move with them", async () => {
    const { ctx } = await started();
    expect(mock.codeLensProviders).toHaveLength(1);
    expect(mock.codeLensProviders[0].selector).toEqual({ scheme: "file" });
    const { provider } = mock.codeLensProviders[0] as { provider: ReviewCodeLensProvider };
    let redraws = 0;
    provider.onDidChangeCodeLenses(() => (redraws += 1));

    mock.setDiagnostics(DOC_URI, [hunk("t1-1", 2), hunk("t1-2", 6)]);
    expect(redraws).toBe(1);
    const lenses = lensesFor(DOC_URI);
    expect(lenses).toHaveLength(4);
    expect(lenses.every((lens) => lens instanceof CodeLens)).toBe(true);
    expect(lenses.map((l) => [l.command?.title, l.range.start.line])).toEqual([
      ["Accept", 2],
      ["Reject", 2],
      ["Accept", 6],
      ["Reject", 6],
    ]);
    expect(lenses[2].command).toMatchObject({ command: REVIEW_COMMANDS.acceptHunk, arguments: [{ hunk_id: "t1-2" }] });

    // The user typed a line above: the server moved the diagnostics, the lenses follow.
    mock.setDiagnostics(DOC_URI, [hunk("t1-1", 3), hunk("t1-2", 7)]);
    expect(redraws).toBe(2);
    expect(lensesFor(DOC_URI).map((l) => l.range.start.line)).toEqual([3, 3, 7, 7]);
    // Accepted and rejected: no diagnostics, no lenses.
    mock.setDiagnostics(DOC_URI, []);
    expect(lensesFor(DOC_URI)).toEqual([]);
    expect(lensesFor("file:///ws/other.py")).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

describe("the review commands", () => {
  it("a lens button sends lich.acceptHunk / lich.rejectHunk with the hunk id and stays quiet on success", async () => {
    const { ctx, client } = await started();
    client.responses[ACCEPT_HUNK_COMMAND] = { ok: true, accepted: ["t1-2"], edited: [DOC_URI], pending: 1 };
    client.responses[REJECT_HUNK_COMMAND] = { ok: true, rejected: ["t1-1"], pending: 0 };
    mock.setDiagnostics(DOC_URI, [hunk("t1-1", 2), hunk("t1-2", 6)]);
    const [, reject, accept] = lensesFor(DOC_URI);
    await mock.commands.get(accept.command!.command)!(...accept.command!.arguments!);
    await mock.commands.get(reject.command!.command)!(...reject.command!.arguments!);
    const sent = client.sent.filter((s) => s.command.startsWith("lich.") && s.command !== "lich.status");
    expect(sent).toEqual([
      { command: ACCEPT_HUNK_COMMAND, arguments: [{ hunk_id: "t1-2" }] },
      { command: REJECT_HUNK_COMMAND, arguments: [{ hunk_id: "t1-1" }] },
    ]);
    expect(mock.errors).toEqual([]);
    expect(mock.infos).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("shows why a hunk could not be accepted", async () => {
    const { ctx, client } = await started();
    client.responses[ACCEPT_HUNK_COMMAND] = { ok: false, error: "not_found: no pending change t1-1 (already accepted, rejected or dropped)" };
    await mock.commands.get(REVIEW_COMMANDS.acceptHunk)!({ hunk_id: "t1-1" });
    expect(mock.errors.map((e) => e.message)).toEqual(["Lich: not_found: no pending change t1-1 (already accepted, rejected or dropped)"]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("Lich: Accept All and Lich: Reject All send lich.acceptAll {} / lich.rejectAll {} and say what they did", async () => {
    const { ctx, client } = await started();
    client.responses[ACCEPT_ALL_COMMAND] = { ok: true, accepted: ["t1-1", "t1-2"], edited: [DOC_URI], pending: 0 };
    client.responses[REJECT_ALL_COMMAND] = { ok: true, rejected: [], pending: 0 };
    await mock.commands.get(REVIEW_COMMANDS.acceptAll)!();
    await mock.commands.get(REVIEW_COMMANDS.rejectAll)!();
    expect(client.sent.filter((s) => s.command === ACCEPT_ALL_COMMAND || s.command === REJECT_ALL_COMMAND)).toEqual([
      { command: ACCEPT_ALL_COMMAND, arguments: [{}] },
      { command: REJECT_ALL_COMMAND, arguments: [{}] },
    ]);
    expect(mock.infos).toEqual(["Lich: accepted 2 changes.", "Lich: no changes are waiting for review."]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("the palette lists Accept All and Reject All, and hides the per-hunk commands", async () => {
    const { readFileSync } = await import("node:fs");
    const path = await import("node:path");
    const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
    const titles = Object.fromEntries(
      (manifest.contributes.commands as { command: string; title: string }[]).map((c) => [c.command, c.title]),
    );
    expect(titles[REVIEW_COMMANDS.acceptAll]).toBe("Accept All");
    expect(titles[REVIEW_COMMANDS.rejectAll]).toBe("Reject All");
    const hidden = (manifest.contributes.menus.commandPalette as { command: string; when: string }[])
      .filter((entry) => entry.when === "false")
      .map((entry) => entry.command);
    expect(hidden).toEqual(expect.arrayContaining([REVIEW_COMMANDS.acceptHunk, REVIEW_COMMANDS.rejectHunk]));
  });

  it("reviewOutcome: errors for failures, a count for the bulk commands, nothing for one hunk", () => {
    expect(reviewOutcome(ACCEPT_HUNK_COMMAND, { ok: true, accepted: ["t1-1"] })).toBeUndefined();
    expect(reviewOutcome(ACCEPT_HUNK_COMMAND, undefined)).toBeUndefined();
    expect(reviewOutcome(REJECT_ALL_COMMAND, { ok: true, rejected: ["a"] })).toEqual({ level: "info", message: "Lich: rejected 1 change." });
    expect(reviewOutcome(REJECT_HUNK_COMMAND, { ok: false })).toEqual({ level: "error", message: "Lich: the review command failed" });
  });
});

describe("lich.reviewStyle", () => {
  function settings(values: Record<string, unknown>): SettingsSource {
    return {
      get: <T,>(key: string) => values[key] as T,
      inspect: <T,>(key: string) => ({ globalValue: values[key] as T }),
    };
  }

  it("is sent as review_style when set to a known style, and not otherwise", () => {
    expect(serverSettings(settings({ reviewStyle: "batch" }), true)).toEqual({ review_style: "batch" });
    expect(serverSettings(settings({ reviewStyle: "hunks" }), true)).toEqual({ review_style: "hunks" });
    expect(serverSettings(settings({ reviewStyle: "per-file" }), true)).toEqual({});
    expect(serverSettings(settings({}), true)).toEqual({});
  });
});
