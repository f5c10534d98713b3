#!/usr/bin/env node
// A small ACP v1 client on the official TypeScript SDK, for tests/acp_external/test_acp_external.py.
//
//   node driver.mjs --cwd DIR --prompt TEXT [--permission KIND_OR_ID] [--timeout-ms N] -- AGENT [ARGS...]
//
// Spawns AGENT as an ACP agent over stdio, then: initialize (fs read/write declared) → session/new
// (cwd DIR) → session/prompt (TEXT). session/request_permission is answered with the first option
// whose kind (or optionId) is KIND_OR_ID (default allow_once; "cancel" answers cancelled).
// fs/read_text_file and fs/write_text_file go to the real disk. Prints one JSON object a line on
// stdout: {"type": "initialize" | "session" | "update" | "permission" | "read" | "write" | "stop"
// | "error" | "exit", ...}. Exits 0 when the prompt turn ended with a stopReason, 1 otherwise.

import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

function parseArgs(argv) {
  const options = { cwd: process.cwd(), prompt: "", permission: "allow_once", timeoutMs: 120000 };
  const split = argv.indexOf("--");
  const flags = split === -1 ? argv : argv.slice(0, split);
  const command = split === -1 ? [] : argv.slice(split + 1);
  for (let i = 0; i < flags.length; i += 2) {
    const [name, value] = [flags[i], flags[i + 1]];
    if (value === undefined) throw new Error(`${name} needs a value`);
    if (name === "--cwd") options.cwd = value;
    else if (name === "--prompt") options.prompt = value;
    else if (name === "--permission") options.permission = value;
    else if (name === "--timeout-ms") options.timeoutMs = Number(value);
    else throw new Error(`unknown flag ${name}`);
  }
  if (command.length === 0) throw new Error("no agent command after --");
  return { ...options, command };
}

const emit = (record) => process.stdout.write(JSON.stringify(record) + "\n");

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const child = spawn(options.command[0], options.command.slice(1), {
    cwd: options.cwd,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.once("error", (error) => emit({ type: "error", message: `spawn: ${error.message}` }));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

  const app = acp
    .client({ name: "lich-acp-external-test-driver" })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const chosen = params.options.find(
        (option) => option.kind === options.permission || option.optionId === options.permission,
      );
      emit({ type: "permission", request: params, chosen: chosen?.optionId ?? null });
      if (!chosen) return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId: chosen.optionId } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      emit({ type: "read", request: params });
      let content = await readFile(params.path, "utf8");
      if (params.line != null || params.limit != null) {
        const start = Math.max((params.line ?? 1) - 1, 0);
        const lines = content.split(/(?<=\n)/);
        content = lines.slice(start, params.limit != null ? start + params.limit : undefined).join("");
      }
      return { content };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      emit({ type: "write", request: params });
      await mkdir(dirname(params.path), { recursive: true });
      await writeFile(params.path, params.content, "utf8");
      return {};
    });

  let ok = false;
  const timer = setTimeout(() => {
    emit({ type: "error", message: `timeout after ${options.timeoutMs} ms` });
    child.kill("SIGKILL");
    process.exit(1);
  }, options.timeoutMs);
  try {
    await app.connectWith(stream, async (agent) => {
      const init = await agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
        clientInfo: { name: "lich-acp-external-test-driver", version: "1.0.0" },
      });
      emit({ type: "initialize", response: init });
      await agent.buildSession(options.cwd).withSession(async (session) => {
        emit({ type: "session", response: session.newSessionResponse });
        session.prompt(options.prompt).catch(() => {}); // its outcome also arrives as a "stop" message
        for (;;) {
          const message = await session.nextUpdate();
          if (message.kind === "stop") {
            emit({ type: "stop", stopReason: message.stopReason, response: message.response });
            ok = true;
            return;
          }
          emit({ type: "update", update: message.update });
        }
      });
    });
  } catch (error) {
    emit({ type: "error", message: String(error?.message ?? error), data: error?.data ?? null });
  }
  // The session is over: closing the agent's stdin is how a client says goodbye.
  const closedAt = Date.now();
  child.stdin.end();
  const grace = setTimeout(() => child.kill("SIGTERM"), 10000);
  const { code, signal } = await exited;
  clearTimeout(grace);
  clearTimeout(timer);
  emit({ type: "exit", code, signal, afterMs: Date.now() - closedAt });
  process.exit(ok ? 0 : 1);
}

main().catch((error) => {
  emit({ type: "error", message: String(error?.stack ?? error) });
  process.exit(1);
});
