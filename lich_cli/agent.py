"""Agent commands of the `lich` CLI (dispatched from lich_cli/main.py through COMMANDS).

    lich "task" [--work-dir D] [--model M] [--provider-kind K] [--base-url U] [--max-turns N]
                [--config FILE] [--thread ID|latest] [--record FILE] [--quiet]
    lich init [--work-dir D]            write a commented .lich/config.json (never overwrites)
    lich config [--work-dir D] [--json] effective config, secrets masked, with each key's source
    lich threads [--work-dir D] [--json] the workspace's threads, newest first (docs/conversations.md)
    lich sessions [--work-dir D] [--json] the same threads, with run and message counts
    lich mcp list|add|enable|disable|remove   the MCP servers of the user config (docs/mcp.md)

A run prints the model's text on stdout as it streams and progress lines on stderr; it exits 0
when the model answered, 1 on budget exhaustion, cancellation (Ctrl-C) or an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from lich_cli import mcp as mcp_cli
from lich_cli.common import CLI_FLAGS_SOURCE, cli_root, load_cli_config, warn_problems
from lich_core.agent.events import (
    AgentEvent,
    BudgetExhausted,
    CompressEnd,
    CompressStart,
    FinalAnswer,
    LlmRetry,
    LlmStart,
    PluginWarning,
    RunEnd,
    RunError,
    RunStart,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
)
from lich_core.agent.sessions import LATEST, InvalidThreadId, SessionError, SessionStore
from lich_core.config import Config, mask_secrets, workspace_config_path
from lich_core.hashline.read_state import ReadState
from lich_core.project_rules import load_project_rules, render_project_rules

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
PROGRESS_ERROR_MAX_CHARS = 200
PROGRESS_ARGS_MAX_CHARS = 80


# --- shared option handling ---


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--work-dir", default=None, help="workspace root (default: current directory)"
    )
    parser.add_argument(
        "--config", default=None, help="extra config file, read before the workspace's own"
    )


def _load(
    args: argparse.Namespace, overrides: dict[str, Any] | None = None, *, quiet: bool = False
) -> Config:
    return load_cli_config(args, overrides, quiet=quiet)


def apply_provider_flags(
    config: Config, *, model: str | None, kind: str | None, base_url: str | None
) -> None:
    """Point the chat role at the provider the flags describe.

    With providers configured, the first chat provider is copied with the flags applied and
    becomes the only one. Without, the flags feed the default provider (LICH_MODEL,
    LICH_PROVIDER_KIND, LICH_BASE_URL), which is the CLI process's own environment.
    """
    if not (model or kind or base_url):
        return
    settings = config.settings
    providers = settings.providers
    if not providers:
        for name, value in (
            ("LICH_MODEL", model),
            ("LICH_PROVIDER_KIND", kind),
            ("LICH_BASE_URL", base_url),
        ):
            if value:
                os.environ[name] = value
        return
    chat_names = settings.models.get("chat") or []
    by_name = {entry.get("name") or entry.get("kind"): entry for entry in providers}
    first = by_name.get(chat_names[0]) if chat_names else None
    entry = dict(first or providers[0])
    if kind and kind != entry.get("kind"):
        entry = {
            k: v
            for k, v in entry.items()
            if k in ("api_key", "api_key_env", "headers", "timeout_ms")
        }
        entry["kind"] = kind
    if model:
        entry["model"] = model
    if base_url:
        entry["base_url"] = base_url
    entry["name"] = "cli"
    config["providers"] = [entry]
    config["models"] = {}
    config.sources["providers"] = CLI_FLAGS_SOURCE


# --- lich "task" ---


class ProgressPrinter:
    """Renders run events: streamed text to `out`, one-line progress to `err`."""

    def __init__(
        self, out: TextIO, err: TextIO, *, quiet: bool = False, model_description: str = ""
    ) -> None:
        self.out = out
        self.err = err
        self.quiet = quiet
        # "openai_compat gpt-4o-mini @ https://...": the run_start event only names the provider.
        self.model_description = model_description
        self._streamed_this_turn = False
        self._out_needs_newline = False
        self._out_gone = False

    def __call__(self, event: AgentEvent) -> None:
        data = event.data
        if isinstance(data, RunStart):
            self.on_run_start(data)
        elif isinstance(data, LlmStart):
            self._streamed_this_turn = False
        elif isinstance(data, TextDelta):
            self.on_text_delta(data)
        elif isinstance(data, LlmRetry):
            self.on_llm_retry(data)
        elif isinstance(data, FinalAnswer):
            self.on_final(data)
        elif isinstance(data, ToolCallStart):
            self.on_tool_call_start(data)
        elif isinstance(data, ToolCallEnd):
            self.on_tool_call_end(data)
        elif isinstance(data, CompressStart):
            self._progress(f"lich: compressing context (~{data.estimated_tokens} tokens)")
        elif isinstance(data, CompressEnd):
            self.on_compress_end(data)
        elif isinstance(data, BudgetExhausted):
            self._warn(
                f"lich: turn budget exhausted ({data.max_turns} model calls); raise --max-turns to go on"
            )
        elif isinstance(data, RunError):
            self._warn(f"lich: error: {data.message}")
        elif isinstance(data, PluginWarning):
            self._warn(f"lich: warning: {data.message}")
        elif isinstance(data, RunEnd):
            self.on_run_end(data)

    def _progress(self, line: str) -> None:
        if self.quiet:
            return
        self._end_out_line()
        self.err.write(line + "\n")
        self.err.flush()

    def _warn(self, line: str) -> None:
        self._end_out_line()
        self.err.write(line + "\n")
        self.err.flush()

    def _end_out_line(self) -> None:
        if self._out_needs_newline:
            self._write_out("\n")
            self._out_needs_newline = False

    def _write_out(self, text: str) -> None:
        """Write and flush `text` to `out`; once its reader is gone (`lich "task" | head -1`), the
        rest of the answer goes nowhere and the run ends as it would have (no traceback)."""
        if self._out_gone:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self._out_gone = True
            with contextlib.suppress(OSError, ValueError):
                # What is still buffered is flushed into /dev/null, at exit too.
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())

    def on_run_start(self, data: RunStart) -> None:
        resumed = " (resumed)" if data.resumed else ""
        # RunStart.model is the provider chain's name ("default", "claude > local"), not a model.
        described = f" ({self.model_description})" if self.model_description else ""
        self._progress(
            f"lich: provider {data.model or '?'}{described}, up to {data.max_turns} turns{resumed}"
        )

    def on_text_delta(self, data: TextDelta) -> None:
        text = data.text
        self._write_out(text)
        self._streamed_this_turn = True
        self._out_needs_newline = not text.endswith("\n")

    def on_llm_retry(self, data: LlmRetry) -> None:
        if data.action == "retry":
            what = f"retrying in {data.delay_s:.1f} s (attempt {data.attempt + 1} of {data.max_attempts})"
        else:
            what = f"trying {data.next_provider}"
        line = f"lich: {data.provider} failed ({data.kind}): {what}"
        if data.discarded_chars:
            # Printed text cannot be taken back: say where the restarted answer begins.
            self._streamed_this_turn = False
            self._warn(line + "; the answer restarts below")
        else:
            self._progress(line)

    def on_final(self, data: FinalAnswer) -> None:
        text = data.text
        if not self._streamed_this_turn and text:
            # A provider that does not stream: the answer arrives whole.
            self._write_out(text)
            self._out_needs_newline = not text.endswith("\n")
        self._end_out_line()

    def on_tool_call_start(self, data: ToolCallStart) -> None:
        args = json.dumps(data.arguments, ensure_ascii=False)
        if len(args) > PROGRESS_ARGS_MAX_CHARS:
            args = args[: PROGRESS_ARGS_MAX_CHARS - 3] + "..."
        self._progress(f"-> {data.name} {args}")

    def on_tool_call_end(self, data: ToolCallEnd) -> None:
        took = f"{data.duration_ms:.0f} ms"
        if data.ok:
            self._progress(f"   ok {data.name} ({took})")
        else:
            error = " ".join((data.error or "").split())[:PROGRESS_ERROR_MAX_CHARS]
            self._progress(f"   failed {data.name} ({took}): {error}")

    def on_compress_end(self, data: CompressEnd) -> None:
        if data.ok:
            self._progress(f"lich: compressed ~{data.before_tokens} -> ~{data.after_tokens} tokens")
        else:
            self._progress(f"lich: compression skipped: {data.error}")

    def on_run_end(self, data: RunEnd) -> None:
        self._end_out_line()
        self._progress(
            f"lich: {data.stopped_reason} after {data.turns_used} turn(s) "
            f"(tokens in {data.usage.input_tokens}, out {data.usage.output_tokens})"
        )


def run_parser(*, overview: bool = False) -> argparse.ArgumentParser:
    """`lich "task"`'s options; `overview`: without usage and description, for `lich --help`."""
    parser = argparse.ArgumentParser(
        prog="lich",
        description=None if overview else "Run the agent on a task (one shot).",
        usage=argparse.SUPPRESS if overview else None,
        add_help=not overview,
    )
    parser.add_argument("task", nargs="*", help="what to do ('-' reads the task from stdin)")
    _add_common(parser)
    parser.add_argument("--model", default=None, help="model name for the chat provider")
    parser.add_argument(
        "--provider-kind", default=None, choices=("openai_compat", "anthropic", "ollama")
    )
    parser.add_argument("--base-url", default=None, help="provider base URL")
    parser.add_argument(
        "--max-turns", type=int, default=None, help="model calls allowed (default 25)"
    )
    continuing = parser.add_mutually_exclusive_group()
    continuing.add_argument(
        "--thread",
        default=None,
        metavar="ID|latest",
        help="continue a thread (see `lich threads`); an unknown one fails before any model call",
    )
    continuing.add_argument(
        "--resume",
        default=None,
        metavar="ID|latest",
        help="continue a saved session (as --thread; an unknown one ends the run in an error)",
    )
    parser.add_argument(
        "--record", default=None, metavar="FILE", help="record model turns as a replay JSONL file"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    return parser


def task_options_help() -> str:
    """The task's arguments and options as `lich "task" --help` lists them (for `lich --help`)."""
    return run_parser(overview=True).format_help().strip()


def cmd_run(argv: list[str]) -> int:
    parser = run_parser()
    args = parser.parse_args(argv)
    task = " ".join(args.task).strip()
    if task == "-":
        task = sys.stdin.read().strip()
    if not task:
        parser.print_usage(sys.stderr)
        print('lich: give a task, e.g. lich "explain src/main.py"', file=sys.stderr)
        return EXIT_USAGE
    overrides = {"max_turns": args.max_turns} if args.max_turns is not None else None
    config = _load(args, overrides)
    apply_provider_flags(config, model=args.model, kind=args.provider_kind, base_url=args.base_url)
    resume = args.resume
    if args.thread is not None:
        try:
            resume = resolve_thread(config, args.thread)
        except ThreadRefError as err:
            print(f"lich: {err}", file=sys.stderr)
            return EXIT_FAILED
    return asyncio.run(_run_task(config, task, resume=resume, record=args.record, quiet=args.quiet))


class ThreadRefError(Exception):
    """A --thread that names no thread of this workspace; the message is one line."""


def resolve_thread(config: Config, ref: str) -> str:
    """The thread id `ref` (an id or "latest") names, checked before anything is built or sent:
    a mistyped id must not cost a model call to find out; one that is no thread id at all
    (`invalid_thread_id:`, the core's one rule) names no file either."""
    store = SessionStore.for_config(config)
    try:
        return store.resolve(ref)
    except InvalidThreadId as err:
        raise ThreadRefError(str(err)) from err
    except SessionError as err:
        message = str(err)
        if not message.startswith("session_not_found:"):
            raise ThreadRefError(message) from err  # the store itself is unreadable: say why
        where = "no threads in this workspace; " if ref == LATEST else ""
        raise ThreadRefError(f"unknown_thread: {ref} ({where}see `lich threads`)") from err


def _mentions(config: Config, task: str) -> tuple[str | None, Any]:
    """The files the task's `@path` / `@path:a-b` mentions attach (from disk: the CLI has no
    buffers), as the editor's lich.ask does, and a read state that counts them as read. A
    mention not attached (refused by the read guard, not found) is named on stderr."""
    # Here, not at the top: it loads the tools' file reading (~13 ms), which only a prompt with
    # mentions needs (`lich threads`, `lich config` start without it).
    from lich_core.agent.mentions import DiskSource, resolve_mentions

    root = Path(config.settings.work_dir or os.getcwd()).resolve()
    mentioned = resolve_mentions(task, root, DiskSource())
    for note in mentioned.notes:
        print(f"lich: not attached: {note}", file=sys.stderr)
    read_state = ReadState()
    for path in mentioned.paths:
        read_state.record(path)
    return mentioned.text() or None, read_state


async def _run_task(
    config: Config, task: str, *, resume: str | None, record: str | None, quiet: bool
) -> int:
    from lich_core.agent.factory import build_agent
    from lich_core.approvals import CliApprovalCheck
    from lich_core.providers.base import ProviderError
    from lich_core.vocabulary import CancelToken

    try:
        model = compress_model = None
        if record:
            from lich_core.providers.factory import build_model
            from lich_core.providers.replay import RecordingModel

            model = RecordingModel(build_model(config, "chat"), record)
            compress_model = build_model(config, "compress")
        # Nothing here can ask: an "ask" entry is a refusal that says what would have run.
        approvals = CliApprovalCheck(config.settings.approval)
        agent = build_agent(
            config, model=model, compress_model=compress_model, call_checks=[approvals]
        )
    except ProviderError as err:
        print(f"lich: {err}", file=sys.stderr)
        return EXIT_FAILED
    cancel = CancelToken()
    describe = getattr(agent.model, "describe", None)
    printer = ProgressPrinter(
        sys.stdout, sys.stderr, quiet=quiet, model_description=describe() if describe else ""
    )
    context, read_state = _mentions(config, task)
    run_task = asyncio.ensure_future(
        agent.run(
            task,
            on_event=printer,
            cancel=cancel,
            resume=resume,
            context=context,
            read_state=read_state,
            project_rules=None if resume is not None else _project_rules(config),
            run_record={"face": "cli"},
        )
    )
    remove_handler = _install_interrupt(cancel, run_task)
    try:
        result = await run_task
    except asyncio.CancelledError:
        print("lich: aborted", file=sys.stderr)
        return EXIT_FAILED
    finally:
        remove_handler()
        if agent.runtime.mcp is not None:
            await agent.runtime.aclose()  # the MCP servers this run started
        await _close_http()
    if result.session_id and not quiet and worth_resuming(result.messages):
        print(
            f'lich: thread {result.session_id} (continue with: lich --thread {result.session_id} "...")',
            file=sys.stderr,
        )
    return EXIT_OK if result.stopped_reason == "final" else EXIT_FAILED


def _project_rules(config: Config) -> str | None:
    """The repository's rules for a new thread's first turn (the root's only: a CLI task names
    no file), as the editor's lich.ask gives them; None when turned off or there are none."""
    if not config.settings.project_rules:
        return None
    root = Path(config.settings.work_dir or os.getcwd())
    return render_project_rules(load_project_rules(root)) or None


def worth_resuming(messages: list[Any]) -> bool:
    """A session is worth resuming once the model answered in it at least once: a run that
    failed before any answer (provider unreachable, Ctrl-C at once) saved only the prompt."""
    return any(getattr(message, "role", None) == "assistant" for message in messages)


def _install_interrupt(cancel: Any, run_task: asyncio.Future[Any]) -> Callable[[], None]:
    """First Ctrl-C cancels the run cleanly (stopped "aborted"); a second one stops it at once."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_interrupt() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            print("\nlich: cancelling (Ctrl-C again to stop at once)", file=sys.stderr)
            cancel.cancel("interrupted")
        else:
            run_task.cancel()

    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError, ValueError):
        return lambda: None  # no signal handlers here (Windows, non-main thread)

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGINT)
        # asyncio resets SIGINT to default_int_handler: give back whatever the caller had.
        if previous is not None:
            signal.signal(signal.SIGINT, previous)

    return remove


async def _close_http() -> None:
    try:
        from lich_core.providers.http import aclose_client
    except ImportError:
        return
    await aclose_client()


# --- lich init ---

CONFIG_TEMPLATE = """\
// lich configuration for this workspace (JSON with // comments).
// Every setting below is commented out: as written, this file changes nothing. Keys not set here
// come from your user config ($XDG_CONFIG_HOME/lich/config.json, by default
// ~/.config/lich/config.json), then LICH_* environment variables, then built-in defaults, so set
// here only what this repository needs to differ. `lich config` shows the effective value of every
// key and its source.
// To use an example, remove the // before its "key": line; put a comma after each setting but
// the last (plain JSON: no comma after the last one).
// "work_dir" is never read from this file: the root is the folder holding .lich/ (or --work-dir).
// This file belongs to the repository, so it is untrusted until you run `lich trust` (or trust it
// from the editor): until then it may only narrow settings, and keys that load code, choose a
// provider, run a program, send data or read and write elsewhere (plugins, providers, models,
// session_dir, threads_max, system_prompt, web_search, test_command, docs_dir, mcp_servers,
// completion) are ignored. Any change to it, or to a plugin it names, needs trusting again, and
// `lich trust` lists what it changes from your own settings. See docs/trust.md.
{
  // Model providers. With none configured, lich uses LICH_PROVIDER_KIND / LICH_BASE_URL /
  // LICH_MODEL, else OpenAI when OPENAI_API_KEY is set, Anthropic when ANTHROPIC_API_KEY is
  // set, else Ollama on localhost. Listed providers form a chain: rate limits and network errors
  // are retried, anything else fails over to the next one. Prefer api_key_env to api_key.
  // Entry keys: name, kind, base_url, model, api_key, api_key_env, path (replay), timeout_ms,
  // headers, stream, max_tokens. Other entries, for example:
  //   {"name": "claude", "kind": "anthropic", "model": "claude-sonnet-4-0", "api_key_env": "ANTHROPIC_API_KEY"}
  //   {"name": "local", "kind": "ollama", "base_url": "http://localhost:11434", "model": "llama3.1"}
  // See docs/providers.md.
  // "providers": [{"name": "openai", "kind": "openai_compat", "base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"}]

  // Which providers serve each role, by name; "compress" falls back to the chat chain.
  // "models": {"chat": ["claude", "openai"], "compress": ["local"]}

  // Model calls per task (default 25); tool calls asked for on the last turn are not run.
  // "max_turns": 25

  // Replaces the default system prompt:
  // "system_prompt": "You are a careful engineer working in this repository."

  // "all" (the default), or a list of tool names (see `lich tools`).
  // "tools_enabled": ["read_file", "grep_files", "find_files", "list_dir"]

  // Granted capabilities; leave out to grant all of:
  // file/read, file/write, file/edit, process/exec, image/eval, net/fetch, mcp/call
  // "capabilities": ["file/read", "file/edit"]

  // Default timeout of one `terminal` command, in ms (default 60000, at most 300000).
  // "terminal_timeout_ms": 60000

  // Summarise older turns when the estimated context reaches this share of the budget.
  // "context_budget_tokens": 100000
  // "compress_threshold": 0.8

  // Threads (JSONL, one file per thread; `lich threads`, lich --thread ID|latest "...").
  // Default: this workspace's folder in your user state dir, never the repository (docs/trust.md).
  // "session_dir": ".lich/sessions"
  // Threads kept per workspace (older ones are deleted; 0 keeps all; needs trust here).
  // "threads_max": 100

  // Python plugins (trusted code, runs in-process): paths relative to this workspace, or
  // {"path": ..., "settings": {...}, "models": ["compress"]}. See docs/plugins.md.
  // "plugins": ["./.lich/plugins/my_plugin.py"]

  // Where web_search sends queries: DuckDuckGo's HTML endpoint (the default), or a SearXNG
  // instance's JSON API (needs trust here; a SearXNG on a private address also needs
  // LICH_ALLOW_PRIVATE_URLS=1). See docs/tools.md.
  // "web_search": {"kind": "searxng", "url": "https://searx.example.org", "api_key_env": "SEARXNG_TOKEN"}

  // The command run_tests runs (bash -lc, in the root; needs trust here). Default: pytest when
  // this looks like a Python project. See docs/tools.md.
  // "test_command": "npm test --"

  // Where docs_search and docs_read look (needs trust here). Default: docs/ in this workspace.
  // "docs_dir": "documentation"

  // MCP servers whose tools the agent may call (as mcp_<server>_<tool>; needs trust here). stdio:
  // {command, args, env, cwd}, started without a shell; HTTP: {url, headers_env}, https or
  // loopback only. Package runners (npx, uvx, ...) need "allow_runner": true. See docs/mcp.md.
  // "mcp_servers": {"files": {"command": "python", "args": ["-m", "my_files_server"]}, "search": {"url": "https://mcp.example.org/mcp", "headers_env": {"Authorization": "SEARCH_MCP_AUTH"}}}

  // Language server (see docs/lsp.md). "apply" (the default): each edit at once; "review": one
  // edit to confirm at the end of a task.
  // "edit_mode": "review"
  // How review mode shows the changes: "hunks" (each change a diagnostic to accept or reject),
  // "batch" (one edit to confirm at the end of the task), or "auto".
  // "review_style": "auto"
  // Per tool name or capability: "allow", "ask" or "deny".
  // "approval": {"process/exec": "ask", "net/fetch": "deny"}
  // Extra code actions offered on a selection.
  // "code_actions": [{"title": "Add docstrings", "prompt": "Add docstrings to the selection", "kind": "refactor.rewrite.lich"}]
  // The repository's AGENTS.md (else CLAUDE.md, .github/copilot-instructions.md) in each task's
  // context, labelled as repository text; false turns it off (see docs/agent.md).
  // "project_rules": false
  // Open each finished task's markdown transcript in the editor (the chat views show the answer).
  // "show_transcript": true
  // Prompts lich.ask offers when invoked without one.
  // "quick_prompts": ["Explain this code", "Find bugs in this code", "Add tests for this code"]
  // Set to "never" to ignore settings that need trust and never be offered to trust them.
  // "workspace_trust": "never"
  // Inline completions (ghost text) from a fill-in-the-middle model; off while unset (needs
  // trust here). An entry like a provider's plus "format": "completions" (OpenAI-compatible
  // /completions: llama.cpp, vLLM, DeepSeek, Mistral), "generate" (Ollama) or "chat" (a chat-only
  // model, Anthropic's). See docs/completions.md.
  // "completion": {"kind": "ollama", "model": "qwen2.5-coder:1.5b-base"}
  // Quiet time after a keystroke before a completion is asked for, and the characters of the
  // buffer before and after the cursor the model is given (this file may only raise the wait
  // and lower the sizes until trusted).
  // "completion_debounce_ms": 75
  // "completion_prefix_chars": 6000
  // "completion_suffix_chars": 2000
  // Next edit suggestions (the edit you are about to make, anywhere near the cursor); off while
  // unset (needs trust here). An entry like "completion"'s plus "format": "zeta" (Zed's open
  // Zeta model over OpenAI-compatible /completions) or "chat" (any chat model). See
  // docs/next-edit.md.
  // "next_edit": {"kind": "openai_compat", "base_url": "http://127.0.0.1:8000/v1", "model": "zed-industries/zeta", "format": "zeta"}
  // How files the editor does not have open are written: "auto" (the default), "editor" or "disk".
  // "disk_write_policy": "editor"
}
"""

GITIGNORE_TEMPLATE = "# lich session logs and per-workspace state stay local\nsessions/\nstate/\n"


def cmd_init(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich init", description="Write a commented .lich/config.json."
    )
    parser.add_argument(
        "--work-dir", default=None, help="workspace root (default: current directory)"
    )
    args = parser.parse_args(argv)
    target = workspace_config_path(cli_root(args))
    if target.exists():
        print(f"lich: {target} already exists; not overwritten", file=sys.stderr)
        return EXIT_FAILED
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "x", encoding="utf-8") as handle:  # "x": never clobber, even in a race
            handle.write(CONFIG_TEMPLATE)
    except FileExistsError:
        print(f"lich: {target} already exists; not overwritten", file=sys.stderr)
        return EXIT_FAILED
    gitignore = target.parent / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(GITIGNORE_TEMPLATE, encoding="utf-8")
    print(f"lich: wrote {target}")
    return EXIT_OK


# --- lich config ---


def cmd_config(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich config", description="Show the effective configuration."
    )
    _add_common(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print {config, sources, problems, broken_files, trust, user_config} as JSON",
    )
    args = parser.parse_args(argv)
    from lich_core.config import KEYS, user_config_path

    # Quiet: the problems are this command's own output (the dropped section, `problems`).
    config = _load(args, quiet=True)
    masked = mask_secrets(dict(config))
    trust = config.trust
    user_file = user_config_path()
    files = {"user_config": {"path": str(user_file), "exists": user_file.is_file()}}
    if args.json:
        print(
            json.dumps(
                {
                    "config": masked,
                    "sources": config.sources,
                    "problems": [problem.to_json() for problem in config.problems],
                    "broken_files": [problem.to_json() for problem in config.broken_files],
                    "trust": trust.to_json(),
                    **files,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    print(f"# effective configuration for {config.settings.work_dir} (secrets masked)")
    width = max(len(key) for key in masked)
    for key in sorted(masked):
        value = json.dumps(masked[key], ensure_ascii=False)
        # An unknown key stays in the config (a tool's ctx.settings sees it) but sets nothing.
        unknown = "" if key in KEYS else "; unknown key: no effect"
        print(f"{key:<{width}} = {value}  # {config.sources.get(key, '?')}{unknown}")
    if args.config:
        print(f"# --config file: {args.config}")
    print(f"# user config: {user_file} ({'read' if user_file.is_file() else 'not found'})")
    print(
        f"# workspace config: {trust.config_path} ({trust.state}{', changed since trusted' if trust.changed else ''})"
    )
    print_dropped(config)
    for item in trust.ignored:
        print(f"# ignored {item.key}: would {item.what}")
    if trust.state == "untrusted" and trust.ignored:
        print("# run `lich trust` to apply the ignored settings (see docs/trust.md)")
    try:
        from lich_core.providers.factory import describe_model

        print(f"# chat model: {describe_model(config, 'chat')}")
        print(f"# compress model: {describe_model(config, 'compress')}")
    except ImportError:
        pass
    return EXIT_OK


def print_dropped(config: Config) -> None:
    """`# dropped (N):` and one line per value that was not applied as written: its source, key
    path, what is wrong with it and what lich does instead (an unknown key: that it has no effect)."""
    problems = [*config.broken_files, *config.problems]
    if not problems:
        return
    print(f"# dropped ({len(problems)}): values not applied as written, and why")
    for problem in problems:
        where = f"{problem.source}: {problem.path}" if problem.path else problem.source
        print(f"#   {where}: {problem.detail}; {problem.outcome}")


# --- lich threads, lich sessions ---


def cmd_threads(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich threads",
        description="List this workspace's threads (conversations), newest first; continue one "
        'with lich --thread ID "follow-up".',
    )
    _add_common(parser)
    parser.add_argument(
        "--json", action="store_true", help="print [{thread, title, turns, updated}] as JSON"
    )
    args = parser.parse_args(argv)
    store = SessionStore.for_config(_load(args))
    infos = store.list()
    if args.json:
        rows = [
            {
                "thread": info.session_id,
                "title": info.title,
                "turns": info.turns,
                "updated": info.modified,
            }
            for info in infos
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    if not infos:
        print(f"no threads in {store.directory}")
        return EXIT_OK
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.modified))
        turns = "turn " if info.turns == 1 else "turns"
        print(f"{info.session_id}  {when}  {info.turns:>3} {turns}  {info.title}")
    return EXIT_OK


def cmd_sessions(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich sessions", description="List saved sessions, newest first."
    )
    _add_common(parser)
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    args = parser.parse_args(argv)
    store = SessionStore.for_config(_load(args))
    infos = store.list()
    if args.json:
        print(json.dumps([info.to_dict() for info in infos], indent=2, ensure_ascii=False))
        return EXIT_OK
    if not infos:
        print(f"no sessions in {store.directory}")
        return EXIT_OK
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.modified))
        print(
            f"{info.session_id}  {when}  {info.runs} run(s)  {info.messages:>3} msgs  {info.title}"
        )
    return EXIT_OK


# --- lich mcp ---


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr with exit status 2 (not argparse's usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(
            EXIT_USAGE,
            f"lich: {self.prog.removeprefix('lich ')}: {message} (see `{self.prog} --help`)\n",
        )


def _mcp_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="lich mcp",
        description="List the MCP servers lich uses, and edit those of your user config (see docs/mcp.md).",
    )
    sub = parser.add_subparsers(dest="action", metavar="{list,add,enable,disable,remove}")
    listing = sub.add_parser(
        "list",
        help="the servers of the effective config",
        description="The MCP servers of the effective config (user config, environment, and the workspace "
        "file once trusted), with transport, state, source and command line or URL.",
    )
    _add_common(listing)
    listing.add_argument(
        "--json", action="store_true", help="print {servers, ignored, user_config} as JSON"
    )
    add = sub.add_parser(
        "add",
        help="add a server to the user config",
        description="Add a server to your user config: a local program (--command, talks MCP over stdio) or an "
        "HTTP server (--url). Arguments that start with '-' go as --arg=-x, or after `--`.",
    )
    add.add_argument("name", metavar="NAME", help="server name: lowercase letters, digits and _")
    transport = add.add_mutually_exclusive_group(required=True)
    transport.add_argument("--command", metavar="CMD", help="the program to start (stdio)")
    transport.add_argument(
        "--url", metavar="URL", help="the server's URL (https, or http on loopback)"
    )
    add.add_argument(
        "--arg", action="append", default=[], metavar="A", help="an argument of CMD (repeatable)"
    )
    add.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="an environment variable for CMD (repeatable)",
    )
    add.add_argument("--cwd", metavar="DIR", help="the folder CMD runs in")
    add.add_argument(
        "--allow-runner", action="store_true", help="allow a package runner (npx, uvx, ...) as CMD"
    )
    add.add_argument(
        "--header-env",
        action="append",
        default=[],
        metavar="HEADER=VAR",
        help="send HEADER with the value of environment variable VAR (repeatable)",
    )
    add.add_argument("--disabled", action="store_true", help="add it switched off")
    add.add_argument("--force", action="store_true", help="replace a server of the same name")
    for action, what in (("enable", "switch on"), ("disable", "switch off"), ("remove", "delete")):
        edit = sub.add_parser(
            action,
            help=f"{what} a server of the user config",
            description=f"{what.capitalize()} a server of your user config.",
        )
        edit.add_argument("name", metavar="NAME")
        edit.add_argument(
            "--work-dir",
            default=None,
            help="workspace root, to say when NAME is only in its .lich/config.json",
        )
    return parser


def cmd_mcp(argv: list[str]) -> int:
    tail: list[str] = []
    if "--" in argv:  # `lich mcp add NAME --command CMD -- -y --flag`: the rest are CMD's arguments
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1 :]
    args = _mcp_parser().parse_args(argv)
    try:
        if args.action is None:
            raise mcp_cli.McpCliError(
                "mcp: say what to do: list, add, enable, disable or remove (see `lich mcp --help`)",
                EXIT_USAGE,
            )
        if tail and not (args.action == "add" and args.command is not None):
            raise mcp_cli.McpCliError(
                f"mcp {args.action}: arguments after -- are only for `add --command`", EXIT_USAGE
            )
        if args.action == "list":
            return _mcp_list(args)
        from lich_core.config import user_config_path

        path = user_config_path()
        if args.action == "add":
            entry = mcp_cli.build_entry(
                command=args.command,
                args=[*args.arg, *tail],
                env=mcp_cli.parse_pairs(args.env, "--env"),
                cwd=args.cwd,
                allow_runner=args.allow_runner,
                url=args.url,
                headers_env=mcp_cli.parse_pairs(
                    args.header_env, "--header-env", left="HEADER", right="VAR"
                ),
                enabled=not args.disabled,
            )
            outcome = mcp_cli.add_server(path, args.name, entry, force=args.force)
        else:
            workspace_file = workspace_config_path(cli_root(args))
            if args.action == "remove":
                outcome = mcp_cli.remove_server(path, args.name, workspace_file=workspace_file)
            else:
                outcome = mcp_cli.set_server_enabled(
                    path, args.name, args.action == "enable", workspace_file=workspace_file
                )
    except mcp_cli.McpCliError as err:
        print(f"lich: {err.message}", file=sys.stderr)
        return err.exit_code
    print(outcome.message)
    if outcome.warning:
        print(outcome.warning, file=sys.stderr)
    return EXIT_OK


def _mcp_list(args: argparse.Namespace) -> int:

    from lich_core.config import user_config_path

    config = _load(args, quiet=True)  # the ignored servers are listed below, not summarised
    warn_problems(config)
    user_file = user_config_path()
    trust = config.trust
    candidates: list[tuple[str, Path]] = []
    if args.config:
        candidates.append((str(args.config), Path(args.config)))
    if trust.state == "trusted":
        candidates.append((str(trust.config_path), trust.config_path))
    candidates.append((str(user_file), user_file))
    rows = mcp_cli.server_rows(config, candidates)
    ignored = mcp_cli.ignored_servers(config)
    if args.json:
        print(
            json.dumps(
                {"servers": rows, "ignored": ignored, "user_config": str(user_file)},
                indent=2,
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    if rows:
        print(mcp_cli.render_rows(rows))
        for row in rows:
            if row["enabled"] and row["refused"]:
                print(f"# {row['refused']}")
    else:
        print(
            f"no MCP servers configured (user config: {user_file}); add one with "
            "`lich mcp add NAME --command PROGRAM` or `lich mcp add NAME --url URL` (see docs/mcp.md)"
        )
    for item in ignored:
        print(f"# ignored in {trust.config_path} ({trust.state}): would {item['what']}")
    if ignored and trust.state == "untrusted":
        print("# run `lich trust` to apply it (see docs/trust.md)")
    return EXIT_OK


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "run": cmd_run,
    "init": cmd_init,
    "config": cmd_config,
    "threads": cmd_threads,
    "sessions": cmd_sessions,
    "mcp": cmd_mcp,
}
