/**
 * The chat view's page: a strict content security policy (no remote resources, scripts and styles
 * only with this page's nonce or from the extension's own files), VS Code's theme variables for
 * every colour (the chat follows the light, dark and high-contrast themes), and dist/chat.js.
 */
import { escapeHtml } from "./chatMarkdown";

export const CHAT_STYLE = `
:root { color-scheme: light dark; }
body { margin: 0; padding: 0; color: var(--vscode-foreground); background: var(--vscode-sideBar-background, var(--vscode-editor-background));
  font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
#app { display: flex; flex-direction: column; height: 100vh; }
.header { display: flex; gap: 4px; padding: 6px 8px; border-bottom: 1px solid var(--vscode-panel-border, transparent); }
.header select { flex: 1; min-width: 0; color: var(--vscode-dropdown-foreground); background: var(--vscode-dropdown-background);
  border: 1px solid var(--vscode-dropdown-border, transparent); padding: 2px 4px; }
button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: 1px solid var(--vscode-button-border, transparent);
  padding: 2px 8px; cursor: pointer; font: inherit; border-radius: 2px; }
button:hover { background: var(--vscode-button-hoverBackground); }
button:disabled { opacity: 0.5; cursor: default; }
button.new-thread, button.rewind, button.drop { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
button.new-thread:hover, button.rewind:hover, button.drop:hover { background: var(--vscode-button-secondaryHoverBackground); }
button.stop { background: var(--vscode-inputValidation-errorBorder, var(--vscode-button-background)); }
.log { flex: 1; overflow-y: auto; padding: 8px; }
.turn { margin-bottom: 14px; }
.turn.discarded { opacity: 0.55; }
.prompt { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 6px; padding: 6px 8px; border-radius: 4px;
  background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); }
.prompt-text { flex: 1; white-space: pre-wrap; word-break: break-word; }
.prompt-attachment { flex-basis: 100%; font-size: 0.9em; color: var(--vscode-descriptionForeground); }
button.rewind { font-size: 0.85em; padding: 0 6px; visibility: hidden; }
.turn:hover button.rewind, button.rewind:focus { visibility: visible; }
.answer { padding: 4px 2px 0 2px; }
.markdown p { margin: 4px 0; }
.markdown pre, .tool pre { background: var(--vscode-textCodeBlock-background); padding: 6px; overflow-x: auto; border-radius: 3px;
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); white-space: pre-wrap; word-break: break-word; }
.markdown code { font-family: var(--vscode-editor-font-family); color: var(--vscode-textPreformat-foreground); }
.markdown pre code { color: inherit; }
a { color: var(--vscode-textLink-foreground); }
a:hover { color: var(--vscode-textLink-activeForeground); }
.tool { margin: 2px 0; font-size: 0.92em; }
.tool summary { cursor: pointer; display: flex; gap: 6px; align-items: baseline; color: var(--vscode-descriptionForeground); }
.tool summary::before { content: "▸"; }
.tool[open] summary::before { content: "▾"; }
.tool summary::-webkit-details-marker { display: none; }
.tool-name { font-family: var(--vscode-editor-font-family); color: var(--vscode-foreground); }
.tool-target { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; flex: 1; }
.tool.ok .tool-outcome { color: var(--vscode-testing-iconPassed, var(--vscode-charts-green)); }
.tool.failed .tool-outcome { color: var(--vscode-errorForeground); }
.label { font-size: 0.85em; color: var(--vscode-descriptionForeground); margin-top: 4px; }
.notice { color: var(--vscode-descriptionForeground); font-style: italic; margin: 4px 0; }
.error { color: var(--vscode-errorForeground); margin: 4px 0; }
.empty { color: var(--vscode-descriptionForeground); }
.files { font-size: 0.9em; color: var(--vscode-descriptionForeground); margin-top: 4px; }
.turn-footer { font-size: 0.85em; margin-top: 4px; text-align: right; }
.approval { margin: 6px 0; padding: 6px 8px; border-radius: 4px; border: 1px solid var(--vscode-inputValidation-warningBorder, var(--vscode-focusBorder));
  background: var(--vscode-inputValidation-warningBackground, transparent); }
.approval p { margin: 2px 0 6px 0; white-space: pre-wrap; word-break: break-word; }
.approval-buttons { display: flex; flex-wrap: wrap; gap: 6px; }
.approval.answered { opacity: 0.6; }
.approval button.chosen { outline: 1px solid var(--vscode-focusBorder); }
button.deny, button.hunk-reject { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
.approval-answer { font-style: italic; color: var(--vscode-descriptionForeground); }
.diff { margin: 2px 0 6px 0; font-size: 0.92em; }
.diff-head { display: flex; gap: 8px; align-items: baseline; color: var(--vscode-descriptionForeground); }
.diff-path { font-family: var(--vscode-editor-font-family); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
pre.diff-body { margin: 2px 0; padding: 4px 6px; overflow-x: auto; border-radius: 3px; background: var(--vscode-textCodeBlock-background);
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); white-space: pre-wrap; word-break: break-word; }
pre.diff-body span { display: block; }
pre.diff-body .ins { background: var(--vscode-diffEditor-insertedLineBackground, var(--vscode-diffEditor-insertedTextBackground)); }
pre.diff-body .del { background: var(--vscode-diffEditor-removedLineBackground, var(--vscode-diffEditor-removedTextBackground)); }
pre.diff-body .note { color: var(--vscode-descriptionForeground); }
.hunk { margin: 6px 0; padding: 4px 6px; border-left: 2px solid var(--vscode-editorGutter-modifiedBackground, var(--vscode-focusBorder)); }
.hunk-head { display: flex; gap: 6px; align-items: baseline; }
.hunk-summary { flex: 1; }
.hunk.decided { opacity: 0.6; }
.composer { position: relative; padding: 6px 8px 8px 8px; border-top: 1px solid var(--vscode-panel-border, transparent); }
.attachment { display: flex; gap: 6px; align-items: center; font-size: 0.9em; color: var(--vscode-descriptionForeground); margin-bottom: 4px; }
.attachment[hidden], .mentions[hidden], button[hidden] { display: none; }
textarea.input { box-sizing: border-box; width: 100%; resize: vertical; min-height: 3.5em; color: var(--vscode-input-foreground);
  background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); padding: 4px; font: inherit; }
textarea.input:focus { outline: 1px solid var(--vscode-focusBorder); outline-offset: -1px; }
.buttons { display: flex; justify-content: flex-end; gap: 6px; margin-top: 4px; }
.mentions { position: absolute; bottom: 100%; left: 8px; right: 8px; margin: 0; padding: 2px 0; list-style: none; max-height: 14em; overflow-y: auto;
  background: var(--vscode-editorSuggestWidget-background, var(--vscode-dropdown-background)); color: var(--vscode-editorSuggestWidget-foreground, var(--vscode-foreground));
  border: 1px solid var(--vscode-editorSuggestWidget-border, var(--vscode-dropdown-border)); }
.mentions li { padding: 1px 8px; cursor: pointer; font-family: var(--vscode-editor-font-family); }
.mentions li.active { background: var(--vscode-editorSuggestWidget-selectedBackground, var(--vscode-list-activeSelectionBackground));
  color: var(--vscode-editorSuggestWidget-selectedForeground, var(--vscode-list-activeSelectionForeground)); }
`;

/** A fresh random nonce per page load. */
export function makeNonce(random: () => number = Math.random): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let nonce = "";
  for (let i = 0; i < 32; i++) {
    nonce += chars.charAt(Math.floor(random() * chars.length));
  }
  return nonce;
}

/**
 * The page. `cspSource` is the webview's own origin (webview.cspSource): the only place the
 * script may come from; `scriptUri` is dist/chat.js as a webview URI.
 */
export function chatHtml(options: { cspSource: string; scriptUri: string; nonce: string }): string {
  const { cspSource, nonce } = options;
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource}`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Lich</title>
<style nonce="${nonce}">${CHAT_STYLE}</style>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${escapeHtml(options.scriptUri)}"></script>
</body>
</html>`;
}
