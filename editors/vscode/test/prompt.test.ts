import { describe, expect, it } from "vitest";
import { askForPrompt, PROMPT_HISTORY_MAX, PromptHistory, type HistoryStore } from "../src/prompt";
import { mock, window } from "./mocks/vscode";

function memoryStore(initial: string[] = []): HistoryStore & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>([["lich.promptHistory", initial]]);
  return {
    data,
    get: <T>(key: string, fallback: T) => (data.has(key) ? (data.get(key) as T) : fallback),
    update: async (key: string, value: unknown) => {
      data.set(key, value);
    },
  };
}

describe("PromptHistory", () => {
  it("keeps the newest first, without duplicates, up to the limit", async () => {
    const history = new PromptHistory(memoryStore());
    for (let i = 0; i < PROMPT_HISTORY_MAX + 5; i++) {
      await history.add(`p${i}`);
    }
    await history.add("p10");
    const list = history.list();
    expect(list[0]).toBe("p10");
    expect(list.length).toBe(PROMPT_HISTORY_MAX);
    expect(new Set(list).size).toBe(list.length);
  });

  it("survives garbage in storage", () => {
    const store = memoryStore();
    store.data.set("lich.promptHistory", ["ok", 3, null]);
    expect(new PromptHistory(store).list()).toEqual(["ok"]);
  });
});

describe("askForPrompt", () => {
  it("returns the typed text even when it matches the start of an earlier prompt", async () => {
    mock.reset();
    const history = new PromptHistory(memoryStore(["rename the variable everywhere"]));
    mock.onQuickPickShown = (pick) => {
      expect(pick.items.map((item) => item.label)).toEqual(["rename the variable everywhere"]);
      pick.type("rename");
      pick.accept();
    };
    expect(await askForPrompt(window, history)).toBe("rename");
    expect(history.list()).toEqual(["rename", "rename the variable everywhere"]);
    expect(mock.quickPicks[0].disposed).toBe(true);
  });

  it("returns an earlier prompt picked from the history", async () => {
    mock.reset();
    const history = new PromptHistory(memoryStore(["first", "second"]));
    mock.onQuickPickShown = (pick) => {
      pick.selectedItems = [pick.items[1]];
      pick.accept();
    };
    expect(await askForPrompt(window, history)).toBe("second");
    expect(history.list()).toEqual(["second", "first"]);
  });

  it("returns undefined when dismissed, and stores nothing", async () => {
    mock.reset();
    const history = new PromptHistory(memoryStore());
    mock.onQuickPickShown = (pick) => {
      pick.type("half typed");
      pick.hide();
    };
    expect(await askForPrompt(window, history)).toBeUndefined();
    expect(history.list()).toEqual([]);
  });
});
