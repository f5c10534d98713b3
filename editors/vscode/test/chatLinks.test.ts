/**
 * The chat's link policy (src/chatLinks.ts), on a real workspace folder with real symbolic links:
 * web pages go outside, workspace files open, and every other scheme or path is refused.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isInside, resolveChatLink, type LinkDecision } from "../src/chatLinks";

let scratch: string;
let ws: string;
let other: string;
let outside: string;

beforeAll(() => {
  scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lich-links-")));
  ws = path.join(scratch, "ws");
  other = path.join(scratch, "other-folder");
  outside = path.join(scratch, "outside.txt");
  fs.mkdirSync(path.join(ws, "src", "deep"), { recursive: true });
  fs.mkdirSync(other, { recursive: true });
  fs.writeFileSync(path.join(ws, "README.md"), "# hi\n");
  fs.writeFileSync(path.join(ws, "src", "app.py"), "print(1)\n");
  fs.writeFileSync(path.join(ws, "my file.py"), "x = 1\n");
  fs.writeFileSync(path.join(other, "notes.md"), "notes\n");
  fs.writeFileSync(outside, "secret\n");
  // Links inside the workspace: one to a file outside, one to a folder outside, one staying in.
  fs.symlinkSync(outside, path.join(ws, "leak.txt"));
  fs.symlinkSync(scratch, path.join(ws, "up"));
  fs.symlinkSync(path.join(ws, "src", "app.py"), path.join(ws, "app-link.py"));
});

afterAll(() => {
  fs.rmSync(scratch, { recursive: true, force: true });
});

const decide = (href: string, roots: string[] = [ws]): Promise<LinkDecision> => resolveChatLink(href, roots);

function refused(decision: LinkDecision): string {
  expect(decision.kind).toBe("refused");
  return decision.kind === "refused" ? decision.reason : "";
}

describe("links to web pages", () => {
  it("open http and https outside VS Code, whatever the case of the scheme", async () => {
    expect(await decide("https://example.com/a?b=1#c")).toEqual({ kind: "external", url: "https://example.com/a?b=1#c" });
    expect(await decide("http://localhost:8000/docs")).toEqual({ kind: "external", url: "http://localhost:8000/docs" });
    expect(await decide("HTTPS://Example.com")).toEqual({ kind: "external", url: "https://example.com/" });
  });

  it("refuse a web link without a host", async () => {
    expect(refused(await decide("https://"))).toMatch(/not a valid web address/);
    expect(refused(await decide("http:foo"))).toMatch(/not a valid web address/);
  });
});

describe("links with other schemes", () => {
  it.each([
    "command:workbench.action.quit",
    "command:lichClient.askAgent?%5B%22x%22%5D",
    "vscode:extension/evil.ext",
    "vscode://vscode.git/clone?url=x",
    "vscode-insiders://file/etc/passwd",
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "mailto:someone@example.com",
    "ftp://example.com/x",
    "ssh://host",
    "vscode-webview://abc/index.html",
    "untitled:foo",
  ])("refuses %s", async (href) => {
    const scheme = href.slice(0, href.indexOf(":")).toLowerCase();
    expect(refused(await decide(href))).toBe(`links with the scheme "${scheme}:" are never opened from the chat (only web pages and workspace files)`);
  });
});

describe("links to files", () => {
  it("open a workspace file by its relative path, at a #L line, with percent-escapes decoded", async () => {
    expect(await decide("src/app.py")).toEqual({ kind: "file", path: path.join(ws, "src", "app.py") });
    expect(await decide("./src/deep/../app.py#L3")).toEqual({ kind: "file", path: path.join(ws, "src", "app.py"), line: 2 });
    expect(await decide("src/app.py#L10-L12")).toEqual({ kind: "file", path: path.join(ws, "src", "app.py"), line: 9 });
    expect(await decide("src/app.py#usage")).toEqual({ kind: "file", path: path.join(ws, "src", "app.py") });
    expect(await decide("my%20file.py")).toEqual({ kind: "file", path: path.join(ws, "my file.py") });
  });

  it("refuse a relative path that climbs out of the workspace, however it is spelled", async () => {
    for (const href of ["../../etc/passwd", "../outside.txt", "src/../../outside.txt", "..%2Foutside.txt", "..", "src/deep/../../../outside.txt"]) {
      expect(refused(await decide(href)), href).toBe("it leads out of the workspace folder");
    }
    // Out and back in is where it ends up: inside.
    expect(await decide("../ws/README.md")).toEqual({ kind: "file", path: path.join(ws, "README.md") });
  });

  it("refuse a path through a symbolic link that leads out of the workspace, open one that stays in", async () => {
    expect(refused(await decide("leak.txt"))).toBe("it goes through a symbolic link that leads out of the workspace");
    expect(refused(await decide("up/outside.txt"))).toBe("it goes through a symbolic link that leads out of the workspace");
    expect(refused(await decide(`file://${path.join(ws, "leak.txt")}`))).toBe("it goes through a symbolic link that leads out of the workspace");
    // The real path is what opens.
    expect(await decide("app-link.py")).toEqual({ kind: "file", path: path.join(ws, "src", "app.py") });
  });

  it("refuse absolute paths and file URIs outside the workspace, open them inside", async () => {
    expect(refused(await decide("/etc/passwd"))).toBe("it is outside the workspace folders");
    expect(refused(await decide(outside))).toBe("it is outside the workspace folders");
    expect(refused(await decide("//etc/passwd"))).toBe("it is outside the workspace folders");
    expect(refused(await decide("file:///etc/passwd"))).toBe("it is outside the workspace folders");
    expect(refused(await decide("FILE:///etc/passwd"))).toBe("it is outside the workspace folders");
    expect(refused(await decide(`file://${outside}`))).toBe("it is outside the workspace folders");
    expect(refused(await decide(`file://${ws}/../outside.txt`))).toBe("it is outside the workspace folders");
    expect(refused(await decide("file://evil.example.com/share/x"))).toBe("it names a file on another machine (evil.example.com)");
    expect(await decide(path.join(ws, "README.md"))).toEqual({ kind: "file", path: path.join(ws, "README.md") });
    expect(await decide(`file://${path.join(ws, "src", "app.py")}#L2`)).toEqual({ kind: "file", path: path.join(ws, "src", "app.py"), line: 1 });
    expect(await decide(`file://localhost${path.join(ws, "README.md")}`)).toEqual({ kind: "file", path: path.join(ws, "README.md") });
  });

  it("refuse what is not an existing regular file of the workspace", async () => {
    expect(refused(await decide("missing.py"))).toBe("there is no such file in the workspace");
    expect(refused(await decide("~/.ssh/id_rsa"))).toBe("there is no such file in the workspace");
    expect(refused(await decide("src"))).toBe("it is a folder, not a file");
    expect(refused(await decide("#section"))).toBe("it points into the answer, not at a file");
    expect(refused(await decide("   "))).toBe("the link is empty");
    expect(refused(await decide("src/app.py\u0000.txt"))).toMatch(/control characters/);
    expect(refused(await decide("src/app%00.py"))).toMatch(/control characters/);
    expect(refused(await decide("README.md", []))).toMatch(/no workspace folder is open/);
  });

  it("with several workspace folders, open a file of any of them", async () => {
    expect(await decide("notes.md", [ws, other])).toEqual({ kind: "file", path: path.join(other, "notes.md") });
    expect(await decide(path.join(other, "notes.md"), [ws, other])).toEqual({ kind: "file", path: path.join(other, "notes.md") });
    expect(refused(await decide(outside, [ws, other]))).toBe("it is outside the workspace folders");
  });

  it("isInside: strictly below, not the folder itself, not a sibling sharing a prefix", () => {
    expect(isInside("/ws", "/ws/a")).toBe(true);
    expect(isInside("/ws", "/ws")).toBe(false);
    expect(isInside("/ws", "/ws2/a")).toBe(false);
    expect(isInside("/ws", "/ws/..foo")).toBe(true);
    expect(isInside("/ws", "/")).toBe(false);
  });
});
