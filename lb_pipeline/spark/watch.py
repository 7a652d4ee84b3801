"""What one step of a night read and wrote under a lake root: each table's newest commit as the step first saw it
(None: no table there), and as its own writes left it (``spark.steps`` resumes a night from them). ``Lake``'s
reads, looks and writes report here; a table's state is asked for only while some step watches it. Steps of the
in-process executor run one at a time, but a step's writes may run in threads: hence a lock, not a context
variable."""

from __future__ import annotations

import threading
from typing import Callable

State = tuple[int, int] | None  # (version, commit time in ms) of a table's newest commit


class Watch:
    def __init__(self, root: str):
        self.root = root.rstrip("/") + "/"
        self.read: dict[str, State] = {}
        self.wrote: dict[str, State] = {}


_WATCHES: list[Watch] = []
_LOCK = threading.Lock()


def watch(root: str) -> Watch:
    """Start recording the tables read and written under ``root`` (until ``unwatch``)."""
    w = Watch(root)
    with _LOCK:
        _WATCHES.append(w)
    return w


def unwatch(w: Watch) -> None:
    with _LOCK:
        if w in _WATCHES:
            _WATCHES.remove(w)


def _watching(path: str) -> list[Watch]:
    with _LOCK:
        return [w for w in _WATCHES if path.startswith(w.root)]


def seen(path: str, state: Callable[[], State]) -> None:
    """A read of (or a look at) the table at ``path``, for the steps watching it: the first state each saw."""
    watches = _watching(path)
    if watches:
        now = state()
        for w in watches:
            w.read.setdefault(path, now)


def written(path: str, state: Callable[[], State]) -> None:
    """A write of the table at ``path``: its state after the write."""
    watches = _watching(path)
    if watches:
        now = state()
        for w in watches:
            w.wrote[path] = now
