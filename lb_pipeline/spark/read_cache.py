"""A run's reads of small tables, kept: each version of a table partition is read from Delta once per Spark
session, then from Spark's cache.

A read of a Delta table costs Spark jobs of its own every time a query runs on it (the snapshot of its log, the files
of the partition asked for: "Filtering files for query"), however small the table: on the demo night 230 of 681 jobs.
A night reads most tables several times (the assets downstream, the checks, the report). A read is kept under its
table's newest commit (version and the commit file's modification time, so a table deleted and written anew is not
taken for the old one): a write makes a new version and the next read reads it. Tables with a row per topic are
never kept (millions of rows a day on a large cluster); the others are a few MB at most. The newest entries are kept,
the older unpersisted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

ROW_PER_TOPIC = frozenset({("bronze", "topic_stats"), ("silver", "topic_bundle")})  # never kept
ENTRIES = 64  # about three nights' reads of every table


class ReadCache:
    """Keyed DataFrames, cached in Spark on first use; the least recently read beyond ``entries`` unpersisted."""

    def __init__(self, entries: int = ENTRIES):
        self.entries, self._kept, self._lock = entries, OrderedDict(), threading.Lock()

    def get(self, key: tuple, read: Callable[[], object]):
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        df = read().cache()  # lazy: the first query that needs it fills it
        with self._lock:
            df = self._kept.setdefault(key, df)
            self._kept.move_to_end(key)
            old = [self._kept.popitem(last=False)[1] for _ in range(len(self._kept) - self.entries)]
        for gone in old:
            _unpersist(gone)
        return df

    def clear(self) -> None:
        with self._lock:
            old, self._kept = list(self._kept.values()), OrderedDict()
        for gone in old:
            _unpersist(gone)

    def __len__(self) -> int:
        return len(self._kept)


def _unpersist(df) -> None:
    try:
        df.unpersist()
    except Exception:  # noqa: BLE001 - its session stopped: nothing is held any more
        pass


READS = ReadCache()
