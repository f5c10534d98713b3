/**
 * Language client middleware. The client registers the server's `lich.*` commands itself; we
 * only step in when `lich.ask` arrives without a prompt (e.g. from the "Ask agent…" code action)
 * to ask for free text, and to keep the status bar's task count. workspace/configuration for the
 * `lich` section answers with the server-side keys, not VS Code's setting names.
 */
import type { Middleware } from "vscode-languageclient/node";
import { inlineCompletionMiddleware, type CompletionGate } from "./completions";
import { SECTION, type ServerSettings } from "./settings";
import type { TaskTracker } from "./tasks";

export const ASK_COMMAND = "lich.ask";

export interface AskArgs {
  prompt?: string;
  uri?: string;
  range?: unknown;
  mode?: string;
  [key: string]: unknown;
}

export interface MiddlewareDeps {
  askPrompt(args: AskArgs): Promise<string | undefined>;
  tasks: TaskTracker;
  /**
   * The chat view's turn for this lich.ask, when the view takes it (it is open); undefined: ask
   * and run here as before.
   */
  routeAsk?(args: AskArgs): Promise<unknown> | undefined;
  settings(): ServerSettings;
  /** Called with each finished lich.ask result (status bar, messages). */
  onAskResult?(result: unknown, args: AskArgs): void;
  /** When ghost text is asked for (./completions); always, without it. */
  completions?: CompletionGate;
}

export function taskTitle(prompt: string): string {
  const oneLine = prompt.replace(/\s+/g, " ").trim();
  return oneLine.length > 60 ? `${oneLine.slice(0, 57)}...` : oneLine;
}

/** Run one lich.ask through `send`, with the task shown as running while it is in flight. */
export async function trackedAsk<T>(tasks: TaskTracker, args: AskArgs, send: (args: AskArgs) => Promise<T> | Thenable<T>): Promise<T> {
  const key = tasks.begin(taskTitle(args.prompt ?? "agent task"));
  try {
    const result = await send(args);
    const taskId = (result as { task_id?: unknown } | undefined)?.task_id;
    if (typeof taskId === "string") {
      tasks.attachId(key, taskId);
    }
    return result;
  } finally {
    tasks.end(key);
  }
}

export function createMiddleware(deps: MiddlewareDeps): Middleware {
  return {
    ...(deps.completions ? { provideInlineCompletionItems: inlineCompletionMiddleware(deps.completions) } : {}),
    executeCommand: async (command, args, next) => {
      if (command !== ASK_COMMAND) {
        return next(command, args);
      }
      const first = (args[0] ?? {}) as AskArgs;
      let askArgs: AskArgs = typeof first === "object" && first !== null ? { ...first } : {};
      const routed = deps.routeAsk?.(askArgs);
      if (routed !== undefined) {
        return routed;
      }
      if (typeof askArgs.prompt !== "string" || askArgs.prompt.trim() === "") {
        const prompt = await deps.askPrompt(askArgs);
        if (prompt === undefined) {
          return undefined; // dismissed: no task, no request
        }
        askArgs = { ...askArgs, prompt };
      }
      const result = await trackedAsk(deps.tasks, askArgs, async (sent) => next(command, [sent, ...args.slice(1)]));
      deps.onAskResult?.(result, askArgs);
      return result;
    },
    workspace: {
      configuration: async (params, token, next) => {
        const items = params.items ?? [];
        const ours = items.map((item) => item.section === SECTION);
        if (!ours.some(Boolean)) {
          return next(params, token);
        }
        const defaults = await next(params, token);
        if (!Array.isArray(defaults)) {
          return defaults;
        }
        return defaults.map((value, index) => (ours[index] ? deps.settings() : value));
      },
    },
  };
}
