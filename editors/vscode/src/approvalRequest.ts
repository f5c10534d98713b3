/**
 * The extension's `window/showMessageRequest` handler. The server asks tool approvals with it
 * (lich_lsp/approvals.py: "lich wants to run <tool> …" with Allow once / Allow always / Deny):
 * while the chat view is visible such a question shows there only (no duplicate toast); with
 * the view hidden it shows both in VS Code's notification and in the chat, and whichever the
 * user answers first answers the server; the chat's copy then greys out with the answer. Any
 * other question (the workspace trust question, …) is shown as the language client would.
 *
 * VS Code has no API to close one notification: after an answer in the chat the toasts are
 * hidden (`notifications.hideToasts`; they stay in the notification centre, where clicking the
 * answered question changes nothing).
 */
import type { ChatApproval } from "./chatView";

export const SHOW_MESSAGE_REQUEST_METHOD = "window/showMessageRequest";
export const APPROVAL_ACTIONS = ["Allow once", "Allow always", "Deny"] as const;
const APPROVAL_PREFIX = "lich wants to run ";

export interface MessageActionItem {
  title: string;
}

export interface ShowMessageRequestParams {
  type: number;
  message: string;
  actions?: MessageActionItem[];
}

export interface CancellationLike {
  isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

export interface ApprovalDeps {
  /** VS Code's notification for `params` (by its message type), resolving with the chosen item. */
  dialog(params: ShowMessageRequestParams): Thenable<MessageActionItem | undefined>;
  /** The chat view's copy of an approval question. */
  chat(message: string, actions: string[]): ChatApproval;
  /** Take the notification out of sight once the chat answered. */
  hideDialog?(): void;
  /** Whether the chat view is on screen now: then its copy is the only one (no toast). */
  chatVisible?(): boolean;
}

/** Whether the server's question is a tool approval (the chat shows those). */
export function isApprovalQuestion(params: ShowMessageRequestParams): boolean {
  const titles = (params.actions ?? []).map((action) => action.title);
  return params.message.startsWith(APPROVAL_PREFIX) && APPROVAL_ACTIONS.every((title) => titles.includes(title));
}

type Outcome = { from: "chat" | "dialog"; title: string | undefined } | { from: "cancelled" };

/** Answer one `window/showMessageRequest`: the chosen action, or null (dismissed). */
export async function showMessageRequest(params: ShowMessageRequestParams, token: CancellationLike | undefined, deps: ApprovalDeps): Promise<MessageActionItem | null> {
  const actions = params.actions ?? [];
  if (!isApprovalQuestion(params)) {
    return (await deps.dialog(params)) ?? null;
  }
  const chat = deps.chat(params.message, actions.map((action) => action.title));
  const outcomes: Promise<Outcome>[] = [chat.answer.then((title): Outcome => ({ from: "chat", title }))];
  if (!(chat.shown && deps.chatVisible?.() === true)) {
    outcomes.push(
      Promise.resolve(deps.dialog(params)).then(
        (item): Promise<Outcome> | Outcome =>
          // Closing the notification while the chat still asks leaves the answer to the chat.
          item === undefined && chat.shown ? new Promise<Outcome>(() => undefined) : { from: "dialog", title: item?.title },
      ),
    );
  }
  let subscription: { dispose(): void } | undefined;
  if (token) {
    outcomes.push(
      new Promise<Outcome>((resolve) => {
        if (token.isCancellationRequested) {
          resolve({ from: "cancelled" });
        }
        subscription = token.onCancellationRequested(() => resolve({ from: "cancelled" }));
      }),
    );
  }
  const outcome = await Promise.race(outcomes);
  subscription?.dispose();
  if (outcome.from === "cancelled") {
    chat.settle(undefined, "gone");
    return null;
  }
  chat.settle(outcome.title, outcome.from);
  if (outcome.from === "chat") {
    deps.hideDialog?.();
  }
  const chosen = actions.find((action) => action.title === outcome.title);
  return chosen ?? null;
}
