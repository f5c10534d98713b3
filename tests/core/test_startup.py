"""lich_core.startup.quiet_start: start-up imports run without collections, and what they made is
frozen. Checked in a fresh interpreter: freezing inside the test process would keep its garbage."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json
from lich_core.startup import quiet_start

report = {"enabled_before": gc.isenabled(), "frozen_before": gc.get_freeze_count()}
with quiet_start():
    report["enabled_inside"] = gc.isenabled()
    made = [[index] for index in range(10_000)]  # tracked objects, as imports make
report["enabled_after"] = gc.isenabled()
report["frozen_after"] = gc.get_freeze_count()
gc.disable()
with quiet_start():
    pass
report["stays_disabled"] = not gc.isenabled()
print(json.dumps(report))
"""


def test_the_collector_is_off_inside_and_what_was_made_is_frozen_after() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(done.stdout)
    assert report["enabled_before"] and not report["enabled_inside"] and report["enabled_after"]
    assert report["frozen_after"] >= report["frozen_before"] + 10_000
    assert report["stays_disabled"]  # a caller that had turned it off keeps it off
