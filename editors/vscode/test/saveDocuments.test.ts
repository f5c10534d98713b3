import { describe, expect, it, vi } from "vitest";
import { SaveDocumentsCapability, saveDocuments, type SavableDocument } from "../src/saveDocuments";

function doc(uri: string, isDirty: boolean, saveResult: boolean | Error = true): SavableDocument & { save: ReturnType<typeof vi.fn> } {
  return {
    uri: { toString: () => uri },
    isDirty,
    save: vi.fn(async () => {
      if (saveResult instanceof Error) {
        throw saveResult;
      }
      return saveResult;
    }),
  };
}

const identity = (uri: string): string => uri;

describe("lich/saveDocuments", () => {
  it("saves exactly the requested dirty documents", async () => {
    const a = doc("file:///ws/a.py", true);
    const b = doc("file:///ws/b.py", true); // dirty but not requested: must stay unsaved
    const c = doc("file:///ws/c.py", false);
    const result = await saveDocuments({ uris: ["file:///ws/a.py", "file:///ws/c.py"] }, [a, b, c], identity);
    expect(a.save).toHaveBeenCalledOnce();
    expect(b.save).not.toHaveBeenCalled();
    expect(c.save).not.toHaveBeenCalled(); // clean: nothing to write
    expect(result).toEqual({ saved: ["file:///ws/a.py", "file:///ws/c.py"], failed: [] });
  });

  it("counts documents that are not open as saved (disk already has them)", async () => {
    const result = await saveDocuments({ uris: ["file:///ws/closed.py"] }, [], identity);
    expect(result).toEqual({ saved: ["file:///ws/closed.py"], failed: [] });
  });

  it("matches URIs after normalisation (percent-encoding differences)", async () => {
    const a = doc("file:///c:/ws/a b.py", true);
    const normalise = (uri: string): string => decodeURIComponent(uri).toLowerCase();
    const result = await saveDocuments({ uris: ["file:///C%3A/ws/a%20b.py"] }, [a], normalise);
    expect(a.save).toHaveBeenCalledOnce();
    expect(result.saved).toEqual(["file:///C%3A/ws/a%20b.py"]);
  });

  it("reports failures per document and keeps saving the rest", async () => {
    const bad = doc("file:///ws/bad.py", true, new Error("disk full"));
    const refused = doc("file:///ws/refused.py", true, false);
    const good = doc("file:///ws/good.py", true);
    const result = await saveDocuments({ uris: ["file:///ws/bad.py", "file:///ws/refused.py", 42, "file:///ws/good.py"] }, [bad, refused, good], identity);
    expect(good.save).toHaveBeenCalledOnce();
    expect(result.saved).toEqual(["file:///ws/good.py"]);
    expect(result.failed).toEqual([
      { uri: "file:///ws/bad.py", reason: "disk full" },
      { uri: "file:///ws/refused.py", reason: "save returned false" },
      { uri: "42", reason: "not a URI string" },
    ]);
  });

  it("ignores closed documents and malformed params", async () => {
    const closed = { ...doc("file:///ws/a.py", true), isClosed: true };
    expect(await saveDocuments({ uris: ["file:///ws/a.py"] }, [closed], identity)).toEqual({ saved: ["file:///ws/a.py"], failed: [] });
    expect(closed.save).not.toHaveBeenCalled();
    expect(await saveDocuments(undefined, [], identity)).toEqual({ saved: [], failed: [] });
    expect(await saveDocuments({ uris: "file:///x" }, [], identity)).toEqual({ saved: [], failed: [] });
  });
});

describe("SaveDocumentsCapability", () => {
  it("declares experimental.lich.saveDocuments and keeps other experimental capabilities", () => {
    const capabilities: { experimental?: unknown } = { experimental: { other: 1, lich: { foo: true } } };
    new SaveDocumentsCapability().fillClientCapabilities(capabilities);
    expect(capabilities.experimental).toEqual({ other: 1, lich: { foo: true, saveDocuments: true } });
    const empty: { experimental?: unknown } = {};
    new SaveDocumentsCapability().fillClientCapabilities(empty);
    expect(empty.experimental).toEqual({ lich: { saveDocuments: true } });
  });
});
