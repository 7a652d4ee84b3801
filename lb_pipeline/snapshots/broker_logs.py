"""The leader's load-balancer log lines, kept with the snapshot that follows them (``collect --broker-log``).

What Pulsar's leader did is said only in its log: which bundles a shedding cycle unloaded and where to, which
bundles it split. ``collect --broker-log BROKER=PATH`` keeps the load-balancer lines of that broker's log written
after the cluster's previous snapshot (for its first, the last hour) and up to this one as ``logs/<broker>.log`` (``layout.broker_log``), so a
landing folder holds each line once. Lines are read as Pulsar's log4j2 patterns write them: an ISO-8601 time first
(``2026-12-02T01:30:00.123Z``, ``2026-12-02T01:30:00,123+0000``, ``2026-12-02 01:30:00.123``; no zone is UTC), then
the thread, level, logger and message. Lines without a time (stack traces) and lines of other components are left.
"""

from __future__ import annotations

import re
from pathlib import Path

from lb_pipeline.formats.events import line_time_ms

# the load manager's own messages (ModularLoadManagerImpl, the shedders, BundleSplitStrategy, the leader election,
# the brokers' load-report writes, each placement's candidate count): formats/events.py reads the events among
# them. A placement's line from a lookup's thread (not the shedding cycle's) is an assignment, which preallocates the
# bundle and so changes where the cycle's next unloads go (docs/validation.md). Not the per-topic lines of an unload
# or a lookup (hundreds per bundle moved)
RELEVANT = re.compile(r"Unloading bundle:|No broker available to unload|the same as the current owner|"
                      r"splitting bundle|split namespace bundle|is considered to be unload|Attempting to shed load|"
                      r"Sole namespace bundle|overloaded despite|Found bundle to unload|elected leader|"
                      r"Acquired leadership|load shedding will be performed|Writing local data to metadata store|"
                      r"brokers being considered for assignment of")
MAX_LINE = 64 * 1024  # a longer line is a stack trace or garbage: cut there
FIRST_WINDOW_MS = 3_600_000  # a cluster's first snapshot keeps the last hour of lines


def copy_events(log: str | Path, dest: Path, since_ms: int | None, until_ms: int) -> int:
    """Writes the relevant lines of ``log`` timed in (``since_ms``, ``until_ms``] to ``dest``; returns how many.
    Without a previous snapshot (``since_ms`` None), the last hour before ``until_ms``. ``dest`` is written only
    when a line is kept. The log is read as bytes, line by line (a huge log never sits in memory), invalid UTF-8
    replaced."""
    since = until_ms - FIRST_WINDOW_MS if since_ms is None else since_ms
    kept, out = 0, None
    try:
        with open(log, "rb") as src:
            for raw in src:
                line = raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r\n")
                ts = line_time_ms(line)
                if ts is None or not since < ts <= until_ms or not RELEVANT.search(line):
                    continue
                out = out or open(dest, "w", encoding="utf-8")
                out.write(line + "\n")
                kept += 1
    finally:
        if out is not None:
            out.close()
    return kept
