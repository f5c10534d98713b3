/**
 * Markdown for the chat view, rendered with markdown-it (CommonMark plus GFM tables and
 * strikethrough) and highlight.js for code. The model's text is untrusted:
 *
 * - `html: false`: raw HTML in the text is shown as text, never parsed; markdown-it escapes every
 *   piece of text and attribute it writes, so the result may be assigned to innerHTML.
 * - Links and images never navigate or load: each becomes `<a href="#" data-link="TARGET">`, and
 *   the view posts the raw target to the extension, which decides (src/chatLinks.ts). So every
 *   scheme may be *shown* as a link (markdown-it's own filter would drop `file:` links, which the
 *   extension must be able to refuse in words); none is followed by the page.
 * - highlight.js only adds `<span class="hljs-…">` around already escaped code.
 *
 * A fenced code block comes with its toolbar (Copy, Insert at cursor, Apply to file): buttons
 * the view handles through one delegated click listener, no inline script (the page's CSP).
 */
import MarkdownIt from "markdown-it";
import { escapeHtml } from "./chatProtocol";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import lua from "highlight.js/lib/languages/lua";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

// The languages a coding chat shows most; the bundle stays small (highlight.js/lib/core plus these).
const LANGUAGES = { bash, c, cpp, csharp, css, diff, go, ini, java, javascript, json, lua, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) {
  hljs.registerLanguage(name, language);
}

export { escapeHtml };

/** The code block's language from its info string (```` ```ts title ````): its first word. */
export function fenceLanguage(info: string): string {
  return (info.trim().split(/\s+/)[0] ?? "").toLowerCase();
}

/** Highlighted HTML of `code` (escaped), or plain escaped text for a language we do not know. */
export function highlightCode(code: string, language: string): string {
  if (language && hljs.getLanguage(language)) {
    try {
      return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    } catch {
      // fall through to plain text
    }
  }
  return escapeHtml(code);
}

/** The buttons above every code block; the view acts on their class names. */
export const CODE_ACTIONS = [
  { className: "code-copy", label: "Copy", title: "Copy the code to the clipboard" },
  { className: "code-insert", label: "Insert at cursor", title: "Insert the code at the cursor of the active editor" },
  { className: "code-apply", label: "Apply to file", title: "Ask the agent to apply this code to the file (an edit you can review and undo)" },
] as const;

function codeBlock(code: string, info: string): string {
  const language = fenceLanguage(info);
  const buttons = CODE_ACTIONS.map((action) => `<button type="button" class="code-action ${action.className}" title="${escapeHtml(action.title)}">${escapeHtml(action.label)}</button>`).join("");
  const lang = language ? ` data-lang="${escapeHtml(language)}"` : "";
  const label = language ? `<span class="code-lang">${escapeHtml(language)}</span>` : `<span class="code-lang"></span>`;
  const codeClass = language && hljs.getLanguage(language) ? ` class="hljs language-${escapeHtml(language)}"` : ` class="hljs"`;
  return `<div class="code-block"${lang}><div class="code-toolbar">${label}${buttons}</div><pre${lang}><code${codeClass}>${highlightCode(code, language)}</code></pre></div>`;
}

function linkOpen(target: string, title: string): string {
  return `<a href="#" data-link="${escapeHtml(target)}" title="${escapeHtml(title || target)}">`;
}

function createRenderer(): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: false, breaks: true, typographer: false });
  // Every target is shown as written: the page follows none (see the module comment).
  md.validateLink = () => true;
  md.normalizeLink = (url) => url;
  md.normalizeLinkText = (text) => text;
  // Table alignment as a class, not markdown-it's `style` attribute: the page's CSP refuses
  // inline styles (and would report each one).
  md.core.ruler.push("align_as_class", (state) => {
    for (const token of state.tokens) {
      const style = token.attrGet("style");
      if (style !== null) {
        token.attrs = (token.attrs ?? []).filter(([name]) => name !== "style");
        const align = /text-align:\s*(left|center|right)/.exec(style);
        if (align) {
          token.attrJoin("class", `align-${align[1]}`);
        }
      }
    }
  });
  const rules = md.renderer.rules;
  rules.fence = (tokens, index) => codeBlock(tokens[index].content.replace(/\n$/, ""), tokens[index].info);
  rules.code_block = (tokens, index) => codeBlock(tokens[index].content.replace(/\n$/, ""), "");
  rules.link_open = (tokens, index) => linkOpen(tokens[index].attrGet("href") ?? "", "");
  rules.link_close = () => "</a>";
  // An image loads nothing (the CSP would refuse it anyway): it is a link named by its alt text.
  rules.image = (tokens, index) => {
    const token = tokens[index];
    const src = token.attrGet("src") ?? "";
    const alt = token.children ? md.renderer.renderInlineAsText(token.children, md.options, {}) : token.content;
    return `${linkOpen(src, src)}${escapeHtml(alt || src)}</a>`;
  };
  // Headings stay small in a side bar: # is h3 … #### and deeper are h6.
  rules.heading_open = (tokens, index) => `<h${Math.min(6, Number(tokens[index].tag.slice(1)) + 2)}>`;
  rules.heading_close = (tokens, index) => `</h${Math.min(6, Number(tokens[index].tag.slice(1)) + 2)}>\n`;
  return md;
}

const renderer = createRenderer();

/**
 * Markdown to HTML. An unterminated fence (a streamed answer in the middle of a code block) runs
 * to the end, so the partial code shows as code while it streams.
 */
export function renderMarkdown(text: string): string {
  return renderer.render(text.replace(/\r\n?/g, "\n")).trimEnd();
}
