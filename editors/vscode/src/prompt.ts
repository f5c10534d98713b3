/** Free-text prompt input with a history of earlier prompts (LSP itself has no text input). */

export const PROMPT_HISTORY_KEY = "lich.promptHistory";
export const PROMPT_HISTORY_MAX = 30;

/** The subset of vscode.Memento the history needs. */
export interface HistoryStore {
  get<T>(key: string, defaultValue: T): T;
  update(key: string, value: unknown): Thenable<void>;
}

export class PromptHistory {
  constructor(private readonly store: HistoryStore) {}

  list(): string[] {
    const items = this.store.get<unknown>(PROMPT_HISTORY_KEY, []);
    return Array.isArray(items) ? items.filter((item): item is string => typeof item === "string") : [];
  }

  async add(prompt: string): Promise<void> {
    const text = prompt.trim();
    if (!text) {
      return;
    }
    const items = [text, ...this.list().filter((item) => item !== text)].slice(0, PROMPT_HISTORY_MAX);
    await this.store.update(PROMPT_HISTORY_KEY, items);
  }
}

interface PromptItem {
  label: string;
  description?: string;
  alwaysShow?: boolean;
}

type Subscribe<T> = (listener: (value: T) => unknown) => unknown;

/** The subset of vscode.QuickPick the prompt uses (a real QuickPick satisfies it). */
export interface PromptQuickPick {
  title: string | undefined;
  placeholder: string | undefined;
  value: string;
  items: readonly PromptItem[];
  readonly selectedItems: readonly PromptItem[];
  readonly activeItems: readonly PromptItem[];
  ignoreFocusOut: boolean;
  matchOnDescription: boolean;
  onDidChangeValue: Subscribe<string>;
  onDidAccept: Subscribe<void>;
  onDidHide: Subscribe<void>;
  show(): void;
  dispose(): void;
}

/** The subset of vscode.window the prompt needs. */
export interface PromptWindow {
  createQuickPick(): PromptQuickPick;
}

export interface PromptOptions {
  title?: string;
  placeholder?: string;
}

const NEW_PROMPT_DETAIL = "new prompt";
const HISTORY_DETAIL = "earlier prompt";

/**
 * Ask for a prompt: typing gives a free-text prompt (first item), earlier prompts are listed below
 * and can be picked. Resolves to undefined when dismissed or empty.
 */
export function askForPrompt(window: PromptWindow, history: PromptHistory, options: PromptOptions = {}): Promise<string | undefined> {
  const earlier = history.list();
  const pick = window.createQuickPick();
  pick.title = options.title ?? "Lich: Ask Agent";
  pick.placeholder = options.placeholder ?? "What should the agent do? (Enter to run, Esc to cancel)";
  pick.ignoreFocusOut = true;
  pick.matchOnDescription = false;
  const historyItems = earlier.map((label) => ({ label, description: HISTORY_DETAIL }));
  pick.items = historyItems;

  return new Promise<string | undefined>((resolve) => {
    let done = false;
    const finish = (value: string | undefined): void => {
      if (done) {
        return;
      }
      done = true;
      pick.dispose();
      const text = value?.trim();
      if (text) {
        void history.add(text);
      }
      resolve(text ? text : undefined);
    };
    pick.onDidChangeValue((value) => {
      // The typed text is always the first choice, so Enter runs exactly what was typed.
      const typed = value.trim() ? [{ label: value, description: NEW_PROMPT_DETAIL, alwaysShow: true }] : [];
      pick.items = [...typed, ...historyItems.filter((item) => item.label !== value)];
    });
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0]?.label ?? pick.activeItems[0]?.label ?? pick.value;
      finish(chosen);
    });
    pick.onDidHide(() => finish(undefined));
    pick.show();
  });
}
