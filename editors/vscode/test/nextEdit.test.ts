/**
 * Next edit suggestions (src/nextEdit.ts): which edits of an answer are shown and how, what Tab
 * does (jump, then accept), and the controller's requests: one per pause in typing, a newer one
 * cancelling the older, an answer for an older version dropped, nothing asked without a model.
 */
import { describe, expect, it } from "vitest";
import {
  drawPlan,
  endOf,
  NextEditController,
  nextEditModel,
  parseEdits,
  tabAction,
  type NextEditHost,
  type NextEditParams,
  type Pos,
  type Suggestion,
} from "../src/nextEdit";

const URI = "file:///ws/calc.py";

function edit(line: number, start: number, end: number, text: string, version = 3, uri = URI) {
  return { range: { start: { line, character: start }, end: { line, character: end } }, text, textDocument: { uri, version } };
}

describe("parseEdits", () => {
  it("keeps the edits for this document and version, in document order", () => {
    const result = { edits: [edit(4, 11, 16, "total"), edit(3, 8, 13, "total"), edit(2, 0, 0, "x", 2), edit(1, 0, 0, "y", 3, "file:///ws/other.py")] };
    expect(parseEdits(result, URI, 3)).toEqual([
      { range: { start: { line: 3, character: 8 }, end: { line: 3, character: 13 } }, text: "total" },
      { range: { start: { line: 4, character: 11 }, end: { line: 4, character: 16 } }, text: "total" },
    ]);
  });

  it("leaves out what is not an edit", () => {
    const reversed = { range: { start: { line: 2, character: 5 }, end: { line: 2, character: 1 } }, text: "a" };
    const noText = { range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } } };
    const negative = { range: { start: { line: -1, character: 0 }, end: { line: 0, character: 0 } }, text: "b" };
    expect(parseEdits({ edits: [reversed, noText, negative, null, "x"] }, URI, 3)).toEqual([]);
    expect(parseEdits(null, URI, 3)).toEqual([]);
    expect(parseEdits({ edits: "no" }, URI, 3)).toEqual([]);
  });
});

describe("nextEditModel", () => {
  it("reads lich.status's next_edit.model", () => {
    expect(nextEditModel({ next_edit: { model: "openai_compat zeta @ http://127.0.0.1:9/v1" } })).toBe("openai_compat zeta @ http://127.0.0.1:9/v1");
    expect(nextEditModel({ next_edit: { model: null } })).toBeNull();
    expect(nextEditModel({ completion: { model: "fim" } })).toBeNull(); // a server without next edits
    expect(nextEditModel(undefined)).toBeUndefined();
  });
});

const RENAME: Suggestion[] = parseEdits({ edits: [edit(3, 8, 13, "total"), edit(4, 11, 16, "total")] }, URI, 3);

describe("tabAction", () => {
  it("jumps to the next suggestion after the cursor, then accepts it once the cursor is on it", () => {
    expect(tabAction(RENAME, { line: 1, character: 9 })).toEqual({ kind: "jump", index: 0, to: { line: 3, character: 8 } });
    expect(tabAction(RENAME, { line: 3, character: 8 })).toEqual({ kind: "accept", index: 0 });
    expect(tabAction(RENAME, { line: 3, character: 20 })).toEqual({ kind: "jump", index: 1, to: { line: 4, character: 11 } });
    // Past the last one: back to the first.
    expect(tabAction(RENAME, { line: 9, character: 0 })).toEqual({ kind: "jump", index: 0, to: { line: 3, character: 8 } });
    expect(tabAction([], { line: 0, character: 0 })).toBeUndefined();
  });

  it("accepts an insertion at the cursor at once", () => {
    const ghost = parseEdits({ edits: [edit(1, 9, 9, " + 1")] }, URI, 3);
    expect(tabAction(ghost, { line: 1, character: 9 })).toEqual({ kind: "accept", index: 0 });
  });
});

describe("drawPlan", () => {
  it("draws an insertion at the cursor as ghost text, and one elsewhere as an inline diff with a gutter marker", () => {
    const suggestions = parseEdits({ edits: [edit(1, 9, 9, " + 1"), edit(3, 8, 13, "total"), edit(5, 0, 0, "a\nb")] }, URI, 3);
    expect(drawPlan(suggestions, { line: 1, character: 9 })).toEqual({
      ghost: [{ at: { line: 1, character: 9 }, text: " + 1" }],
      deleted: [{ start: { line: 3, character: 8 }, end: { line: 3, character: 13 } }],
      inserted: [
        { at: { line: 3, character: 13 }, text: "total" },
        { at: { line: 5, character: 0 }, text: "a ⏎ b" },
      ],
      gutter: [3, 5],
    });
    // The same insertion seen from elsewhere is an inline diff too.
    expect(drawPlan(suggestions.slice(0, 1), { line: 0, character: 0 }).ghost).toEqual([]);
  });

  it("puts the cursor after the inserted text", () => {
    expect(endOf(RENAME[0])).toEqual({ line: 3, character: 13 });
    expect(endOf({ range: { start: { line: 2, character: 4 }, end: { line: 2, character: 4 } }, text: "a\n  bc" })).toEqual({ line: 3, character: 4 });
  });
});

/** A host whose timers, requests and editor are in the test's hands. */
function fakeHost(options: { model?: string | null; enabled?: boolean } = {}) {
  const state = {
    model: "model" in options ? options.model : "zeta",
    enabled: options.enabled ?? true,
    version: 3,
    cursor: { line: 1, character: 9 } as Pos | undefined,
    timers: [] as { fn: () => void; ms: number; cleared: boolean }[],
    requests: [] as { params: NextEditParams; cancelled: boolean; resolve: (value: unknown) => void }[],
    drawn: [] as Suggestion[][],
    visible: [] as boolean[],
    moved: [] as Pos[],
    applied: [] as Suggestion[],
    rechecks: 0,
    now: 0,
  };
  const host: NextEditHost = {
    enabled: () => state.enabled,
    model: () => state.model,
    recheck: () => void state.rechecks++,
    debounceMs: () => 75,
    cursor: () => state.cursor,
    version: () => state.version,
    request: (params, token) =>
      new Promise((resolve) => {
        const entry = { params, cancelled: false, resolve };
        (token as { entry?: typeof entry }).entry = entry;
        state.requests.push(entry);
      }),
    tokenSource: () => {
      const token: { entry?: { cancelled: boolean } } = {};
      return { token, cancel: () => token.entry && (token.entry.cancelled = true) };
    },
    draw: (_uri, suggestions) => void state.drawn.push(suggestions),
    setVisible: (visible) => void state.visible.push(visible),
    moveCursor: (_uri, to) => {
      state.moved.push(to);
      state.cursor = to;
    },
    apply: async (_uri, _version, suggestion) => {
      state.applied.push(suggestion);
      state.version += 1;
      return true;
    },
    setTimer: (fn, ms) => {
      const timer = { fn, ms, cleared: false };
      state.timers.push(timer);
      return timer;
    },
    clearTimer: (timer) => void ((timer as { cleared: boolean }).cleared = true),
    now: () => state.now,
  };
  const fire = async () => {
    const live = state.timers.filter((t) => !t.cleared);
    state.timers = [];
    for (const timer of live) {
      timer.fn();
    }
    await Promise.resolve();
  };
  return { state, host, fire };
}

const ANSWER = { edits: [edit(3, 8, 13, "total"), edit(4, 11, 16, "total")] };

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

describe("NextEditController", () => {
  it("asks once per pause in typing, with the document's version and the cursor", async () => {
    const { state, host, fire } = fakeHost();
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    controller.onDidChange(URI);
    expect(state.timers.filter((t) => !t.cleared)).toHaveLength(1);
    await fire();
    expect(state.requests.map((r) => r.params)).toEqual([{ textDocument: { uri: URI, version: 3 }, position: { line: 1, character: 9 } }]);
    state.requests[0].resolve(ANSWER);
    await settle();
    expect(controller.current()?.suggestions).toEqual(RENAME);
    expect(state.drawn.at(-1)).toEqual(RENAME);
    expect(state.visible).toEqual([true]);
  });

  it("cancels the request in flight when the user types on, and drops its answer", async () => {
    const { state, host, fire } = fakeHost();
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    await fire();
    controller.onDidChange(URI);
    expect(state.requests[0].cancelled).toBe(true);
    state.requests[0].resolve(ANSWER);
    await settle();
    expect(controller.current()).toBeUndefined();
    expect(state.drawn).toEqual([]);
    await fire();
    expect(state.requests).toHaveLength(2);
  });

  it("drops an answer for a version the editor has moved on from", async () => {
    const { state, host, fire } = fakeHost();
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    await fire();
    state.version = 4; // changed without the change reaching the controller yet
    state.requests[0].resolve(ANSWER);
    await settle();
    expect(controller.current()).toBeUndefined();
  });

  it("Tab jumps to the suggestion, Tab again accepts it; a change clears what is shown", async () => {
    const { state, host, fire } = fakeHost();
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    await fire();
    state.requests[0].resolve(ANSWER);
    await settle();
    expect(await controller.acceptOrJump()).toBe(true);
    expect(state.moved).toEqual([{ line: 3, character: 8 }]);
    expect(state.applied).toEqual([]);
    expect(await controller.acceptOrJump()).toBe(true);
    expect(state.applied).toEqual([RENAME[0]]);
    expect(state.moved.at(-1)).toEqual({ line: 3, character: 13 });
    expect(controller.current()).toBeUndefined();
    expect(state.visible).toEqual([true, false]);
    expect(controller.stats.accepted).toBe(1);
    // Nothing shown: Tab is not ours.
    expect(await controller.acceptOrJump()).toBe(false);
  });

  it("an accept leaves the cursor alone when the user moved or typed while the edit was applied", async () => {
    const { state, host, fire } = fakeHost();
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    await fire();
    state.requests[0].resolve(ANSWER);
    await settle();
    expect(await controller.acceptOrJump()).toBe(true); // the cursor onto the suggestion
    const moves = state.moved.length;
    // The user presses Ctrl+End while the accepting edit is on its way.
    host.apply = async (_uri, _version, suggestion) => {
      state.applied.push(suggestion);
      state.version += 1;
      state.cursor = { line: 9, character: 0 };
      return true;
    };
    expect(await controller.acceptOrJump()).toBe(true);
    expect(state.applied).toEqual([RENAME[0]]);
    expect(state.moved).toHaveLength(moves);
    expect(state.cursor).toEqual({ line: 9, character: 0 });
  });

  it("Escape dismisses what is shown", async () => {
    const { state, host, fire } = fakeHost();
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    await fire();
    state.requests[0].resolve(ANSWER);
    await settle();
    controller.dismiss();
    expect(controller.current()).toBeUndefined();
    expect(state.drawn.at(-1)).toEqual([]);
    expect(state.visible).toEqual([true, false]);
  });

  it("asks about an edit made before lich.status answered once it has", async () => {
    const { state, host, fire } = fakeHost({ model: undefined });
    const controller = new NextEditController(host);
    controller.onDidChange(URI);
    await fire();
    expect(state.requests).toEqual([]);
    state.model = "zeta";
    controller.onModelKnown();
    expect(state.requests.map((r) => r.params.position)).toEqual([{ line: 1, character: 9 }]);
    controller.onModelKnown(); // once only
    expect(state.requests).toHaveLength(1);
  });

  it("asks nothing when turned off, or while the server has no next-edit model (re-reading lich.status now and then)", async () => {
    const off = fakeHost({ enabled: false });
    new NextEditController(off.host).onDidChange(URI);
    await off.fire();
    expect(off.state.requests).toEqual([]);

    const none = fakeHost({ model: null });
    const controller = new NextEditController(none.host);
    controller.onDidChange(URI);
    controller.onDidChange(URI);
    await none.fire();
    expect(none.state.requests).toEqual([]);
    expect(none.state.rechecks).toBe(1);
    none.state.now = 30_000;
    none.state.model = "zeta"; // the recheck found one
    controller.onDidChange(URI);
    await none.fire();
    expect(none.state.requests).toHaveLength(1);
  });
});
