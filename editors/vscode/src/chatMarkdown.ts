/**
 * A small, safe markdown renderer for the chat view. The model's text is untrusted: every piece
 * of it is HTML-escaped first, and only then are the few constructs the chat needs turned into
 * tags we write ourselves (fenced and inline code, bold, headings, lists, links). No raw HTML of
 * the input ever reaches the output, so the result may be assigned to innerHTML. A link is never
 * followed by the page: its target only goes to the extension, which decides (src/chatLinks.ts).
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

/** Inline markup of one line (no code spans inside): bold, links. */
function inlineText(text: string): string {
  let out = "";
  const link = /\[([^\]\n]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  for (let match = link.exec(text); match; match = link.exec(text)) {
    out += emphasis(escapeHtml(text.slice(last, match.index)));
    // Every link keeps its raw target in data-link, for the extension to judge when it is clicked
    // (src/chatLinks.ts: web pages and workspace files open, the rest is refused in words). The
    // page itself never navigates: href is "#", and the view posts the click to the extension.
    const label = emphasis(escapeHtml(match[1]));
    out += `<a href="#" data-link="${escapeHtml(match[2])}" title="${escapeHtml(match[2])}">${label}</a>`;
    last = match.index + match[0].length;
  }
  return out + emphasis(escapeHtml(text.slice(last)));
}

/** `**bold**` on already escaped text (the markers survive escaping unchanged). */
function emphasis(escaped: string): string {
  return escaped.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
}

/** Inline markup of one line: `code` spans verbatim (escaped), the rest through inlineText. */
export function renderInline(line: string): string {
  const parts = line.split(/(`[^`\n]+`)/g);
  return parts
    .map((part) => (part.length > 2 && part.startsWith("`") && part.endsWith("`") ? `<code>${escapeHtml(part.slice(1, -1))}</code>` : inlineText(part)))
    .join("");
}

const FENCE = /^\s*(```|~~~)\s*([\w+#.-]*)\s*$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;
const HEADING = /^(#{1,6})\s+(.*)$/;

/**
 * Markdown to HTML. An unterminated fence (a streamed answer in the middle of a code block) runs
 * to the end, so the partial code shows as code while it streams.
 */
export function renderMarkdown(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const out: string[] = [];
  let paragraph: string[] = [];
  let list: { tag: "ul" | "ol"; items: string[] } | undefined;
  const flushParagraph = (): void => {
    if (paragraph.length > 0) {
      out.push(`<p>${paragraph.map(renderInline).join("<br>")}</p>`);
      paragraph = [];
    }
  };
  const flushList = (): void => {
    if (list) {
      out.push(`<${list.tag}>${list.items.map((item) => `<li>${renderInline(item)}</li>`).join("")}</${list.tag}>`);
      list = undefined;
    }
  };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const fence = FENCE.exec(line);
    if (fence) {
      flushParagraph();
      flushList();
      const code: string[] = [];
      index++;
      while (index < lines.length && !(lines[index].trim() === fence[1])) {
        code.push(lines[index]);
        index++;
      }
      const lang = fence[2] ? ` data-lang="${escapeHtml(fence[2])}"` : "";
      out.push(`<pre${lang}><code>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    if (line.trim() === "") {
      flushParagraph();
      flushList();
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flushParagraph();
      flushList();
      const level = Math.min(6, heading[1].length + 2); // h3..h6: the view's headings stay small
      out.push(`<h${level}>${renderInline(heading[2])}</h${level}>`);
      continue;
    }
    const bullet = BULLET.exec(line);
    const numbered = bullet ? undefined : NUMBERED.exec(line);
    if (bullet || numbered) {
      flushParagraph();
      const tag = bullet ? "ul" : "ol";
      if (list && list.tag !== tag) {
        flushList();
      }
      list = list ?? { tag, items: [] };
      list.items.push((bullet ?? numbered)![1]);
      continue;
    }
    if (list && /^\s+\S/.test(line)) {
      list.items[list.items.length - 1] += ` ${line.trim()}`; // a list item's continuation line
      continue;
    }
    flushList();
    paragraph.push(line);
  }
  flushParagraph();
  flushList();
  return out.join("");
}
