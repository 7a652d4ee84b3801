"""Whether a process of this host still runs, for what a dead process left behind: a writer's temporary snapshot
folder, a run that Dagster still calls STARTED."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether ``pid`` runs on this host. A zombie (exited, not yet reaped by its parent) does not; another user's
    process, or one whose state cannot be read, counts as running (what it holds is left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True  # no /proc: the signal said it exists
