/**
 * The chat view's page: a strict content security policy (no remote resources, scripts and styles
 * only with this page's nonce or from the extension's own files), VS Code's theme variables for
 * every colour (the chat follows the light, dark and high-contrast themes), and dist/chat.js.
 */
import { escapeHtml } from "./chatProtocol";

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
/* Every control shows where the keyboard is (Tab reaches them all). */
button:focus-visible, select:focus-visible, a:focus-visible, summary:focus-visible, li:focus-visible {
  outline: 1px solid var(--vscode-focusBorder); outline-offset: 1px; }
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
button.rewind { font-size: 0.85em; padding: 0 6px; opacity: 0; }
.turn:hover button.rewind, button.rewind:focus, button.rewind:focus-visible { opacity: 1; }
.answer { padding: 4px 2px 0 2px; }
.markdown p { margin: 4px 0; }
.tool pre { background: var(--vscode-textCodeBlock-background); padding: 6px; overflow-x: auto; border-radius: 3px;
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); white-space: pre-wrap; word-break: break-word; }
/* Code never wraps mid-word: long lines scroll sideways. */
.markdown pre { margin: 0; background: var(--vscode-textCodeBlock-background); padding: 6px; overflow-x: auto; border-radius: 0 0 3px 3px;
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); white-space: pre; word-break: normal; overflow-wrap: normal; }
.markdown code { font-family: var(--vscode-editor-font-family); color: var(--vscode-textPreformat-foreground); }
.markdown pre code { color: var(--vscode-editor-foreground, inherit); white-space: pre; background: transparent; padding: 0; }
.code-block { margin: 6px 0; border: 1px solid var(--vscode-panel-border, transparent); border-radius: 3px; }
.code-toolbar { display: flex; gap: 4px; align-items: center; padding: 2px 4px; font-size: 0.85em; background: var(--vscode-editorWidget-background, transparent); }
.code-lang { flex: 1; color: var(--vscode-descriptionForeground); font-family: var(--vscode-editor-font-family); }
button.code-action { padding: 0 6px; color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
button.code-action:hover { background: var(--vscode-button-secondaryHoverBackground); }
.markdown table { border-collapse: collapse; margin: 6px 0; display: block; overflow-x: auto; }
.markdown th, .markdown td { border: 1px solid var(--vscode-panel-border, var(--vscode-descriptionForeground)); padding: 2px 6px; text-align: left; }
.markdown th { background: var(--vscode-editorWidget-background, transparent); }
.markdown .align-right { text-align: right; }
.markdown .align-center { text-align: center; }
.markdown blockquote { margin: 4px 0; padding: 0 8px; border-left: 3px solid var(--vscode-textBlockQuote-border, var(--vscode-descriptionForeground));
  background: var(--vscode-textBlockQuote-background, transparent); }
.markdown hr { border: 0; border-top: 1px solid var(--vscode-panel-border, var(--vscode-descriptionForeground)); }
.markdown ul, .markdown ol { padding-left: 1.6em; margin: 4px 0; }
/* highlight.js classes in the theme's own colours (the debug token colours follow light, dark and high contrast). */
.hljs-keyword, .hljs-selector-tag, .hljs-literal, .hljs-built_in, .hljs-type { color: var(--vscode-debugTokenExpression-name, var(--vscode-symbolIcon-keywordForeground)); }
.hljs-string, .hljs-regexp, .hljs-addition, .hljs-attribute { color: var(--vscode-debugTokenExpression-string, var(--vscode-symbolIcon-stringForeground)); }
.hljs-number, .hljs-symbol, .hljs-bullet { color: var(--vscode-debugTokenExpression-number, var(--vscode-symbolIcon-numberForeground)); }
.hljs-comment, .hljs-quote, .hljs-meta { color: var(--vscode-descriptionForeground); font-style: italic; }
.hljs-title, .hljs-section, .hljs-name, .hljs-function .hljs-title { color: var(--vscode-symbolIcon-functionForeground, var(--vscode-textLink-foreground)); }
.hljs-variable, .hljs-params, .hljs-attr, .hljs-property { color: var(--vscode-symbolIcon-variableForeground, inherit); }
.hljs-deletion { color: var(--vscode-errorForeground); }
.hljs-emphasis { font-style: italic; }
.hljs-strong { font-weight: bold; }
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
.progress { color: var(--vscode-descriptionForeground); font-style: italic; margin: 4px 0; }
button.retry { margin: 2px 0 6px 0; }
.review-all { display: flex; gap: 6px; align-items: baseline; margin: 6px 0 2px 0; }
.review-count { flex: 1; color: var(--vscode-descriptionForeground); }
button.review-reject-all, button.rewind-cancel { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
.rewind-question { margin: 4px 0; padding: 6px 8px; border-radius: 4px; border: 1px solid var(--vscode-inputValidation-warningBorder, var(--vscode-focusBorder)); }
.rewind-question p { margin: 0 0 6px 0; white-space: pre-wrap; word-break: break-word; }
.rewind-buttons { display: flex; gap: 6px; }
pre.approval-command { margin: 2px 0 6px 0; padding: 4px 6px; overflow-x: auto; white-space: pre; border-radius: 3px; background: var(--vscode-textCodeBlock-background);
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
/* "Allow always" stands apart, on its own line with what it keeps allowing. */
.approval-always { flex-basis: 100%; display: flex; gap: 6px; align-items: baseline; margin-top: 4px; padding-top: 4px;
  border-top: 1px dashed var(--vscode-panel-border, var(--vscode-descriptionForeground)); }
button.always { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
.approval-scope { font-size: 0.9em; color: var(--vscode-descriptionForeground); }
button.jump { position: absolute; bottom: 100%; right: 12px; margin-bottom: 6px; box-shadow: 0 1px 4px var(--vscode-widget-shadow, transparent); }
.queue { list-style: none; margin: 0 0 4px 0; padding: 0; }
.queued { display: flex; gap: 6px; align-items: baseline; font-size: 0.9em; padding: 2px 4px; margin-bottom: 2px; border-radius: 3px;
  border: 1px dashed var(--vscode-input-border, var(--vscode-descriptionForeground)); }
.queued-label { color: var(--vscode-descriptionForeground); font-style: italic; }
.queued-text { flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.context { display: flex; gap: 6px; align-items: center; font-size: 0.9em; margin-bottom: 4px; }
.context-prefix { color: var(--vscode-descriptionForeground); }
.context-label { padding: 0 6px; border-radius: 8px; font-family: var(--vscode-editor-font-family);
  background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
button.drop-context, button.unqueue { padding: 0 5px; color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
.header { flex-wrap: wrap; }
.header select.threads { flex: 1 1 9em; }
.header select.models { flex: 0 1 auto; max-width: 45%; }
.queue[hidden], .context[hidden], .code-block[hidden], .diff[hidden] { display: none; }
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
