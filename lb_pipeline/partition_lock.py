"""At most one run of a partition (UTC day) per lake at a time, for the main command (``python -m assets.run``).

Two runs of one day write the same Delta partitions and the same report; started together (cron and a person,
say) they used to fight over commits and both fail. The lock is an exclusive ``flock`` on
``<lake>/.locks/<day>.lock`` (for a lake on an object store, which has no locks, a local folder under
``~/.cache/lb_pipeline/locks/`` named after the lake's URI: runs on other hosts are then kept apart only by Delta's
conflict retries): the kernel releases it when its process ends, even by ``kill -9``, so a crashed run
never leaves a stale lock behind. The file records who holds it, for the message the second run prints.
Runs launched by the Dagster daemon are kept apart by the run queue instead (``.dagster/dagster.yaml``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from lb_pipeline.ingest.landing import local_path


class PartitionBusy(Exception):
    def __init__(self, day: str, lake: str, holder: str):
        self.day, self.lake, self.holder = day, lake, holder
        super().__init__(f"{day} is already being run on {lake} by {holder or 'another process'}; "
                         "left to that run (the day's tables and report come from it)")


@contextmanager
def partition_lock(lake: str | Path, day: str) -> Iterator[None]:
    """Holds the day's lock for the ``with`` block; raises ``PartitionBusy`` at once when another process has it."""
    local = local_path(str(lake))
    folder = Path(local) / ".locks" if local is not None else (
        Path.home() / ".cache" / "lb_pipeline" / "locks" / hashlib.sha256(str(lake).encode()).hexdigest()[:16])
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / f"{day}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PartitionBusy(day, str(lake), os.pread(fd, 200, 0).decode(errors="replace").strip()) from None
        started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}, since {started}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock
