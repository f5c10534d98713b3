"""The chat scenario's scripted model (run.mjs starts it with the repo's Python): the fake provider
of tests/support/fake_provider.py that also appends each request body to a JSONL file, so the
driver can check what a follow-up sent (the history with the first answer).

`python editors/vscode/e2e/chat_provider.py --script turns.json --requests requests.jsonl`
prints "LISTENING http://127.0.0.1:PORT" and serves until killed.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.support.fake_provider import FakeProviderServer, load_script  # noqa: E402

SERVE_FOREVER_S = 3600


class RecordingProvider(FakeProviderServer):
    def __init__(self, turns: list[dict[str, Any]], requests_file: Path) -> None:
        super().__init__(turns, port=0)
        self._requests_file = requests_file
        self._write_lock = threading.Lock()

    def _record(self, request: dict[str, Any]) -> None:
        super()._record(request)
        # One line per request, flushed at once: the driver reads the file while the server runs.
        with self._write_lock, self._requests_file.open("a", encoding="utf-8") as out:
            out.write(json.dumps(request.get("json"), ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--requests", required=True)
    args = parser.parse_args(argv)
    server = RecordingProvider(load_script(args.script), Path(args.requests))
    server.start()
    print(f"LISTENING {server.url}", flush=True)
    try:
        while True:
            time.sleep(SERVE_FOREVER_S)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
