"""Bronze writes its tables two at a time: a chain's tables in turn, every result returned, the first failure raised."""

import threading
import time
from collections import namedtuple

import pytest

from lb_pipeline.ingest.bronze import _write_concurrently


Written = namedtuple("Written", "table rows day")


class _Lake:
    """Records when each table's write starts and ends; fails the tables named in ``failing``."""

    def __init__(self, failing=(), seconds=0.05):
        self.failing, self.seconds, self.events, self.lock = set(failing), seconds, [], threading.Lock()
        self.running = self.most = 0

    def write_partition(self, frame, layer, table, day):
        with self.lock:
            self.events.append(("start", table))
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
            self.events.append(("end", table))
        if table in self.failing:
            raise ValueError(f"{layer}/{table}: disk full")
        return Written(table, len(frame), day)


def test_chains_run_two_at_a_time_each_in_its_order_and_every_table_is_written_and_logged():
    lake, logged = _Lake(), []
    chains = [["topic_stats"], ["broker_reports", "bundle_reports"], ["ownership"], ["config"], ["snapshots"]]
    frames = {name: "x" * len(name) for chain in chains for name in chain}
    results = _write_concurrently(lake, frames, chains, "2026-01-15", logged.append)
    assert results == {name: Written(name, len(name), "2026-01-15") for name in frames}
    assert lake.most == 2
    starts = [t for kind, t in lake.events if kind == "start"]
    assert set(starts[:2]) == {"topic_stats", "broker_reports"}  # the first two chains start first, together
    assert lake.events.index(("end", "broker_reports")) < lake.events.index(("start", "bundle_reports"))
    assert sorted(logged) == sorted(f"bronze/{name}: {len(name)} rows" for name in frames)


def test_a_failing_write_is_raised_and_the_chains_not_started_are_not_written():
    lake = _Lake(failing={"topic_stats"}, seconds=0.2)
    chains = [["topic_stats"], ["ownership"], ["config"], ["namespaces"], ["snapshots"]]
    with pytest.raises(ValueError, match="bronze/topic_stats: disk full"):
        _write_concurrently(lake, {c[0]: "x" for c in chains}, chains, "2026-01-15", lambda _m: None)
    started = {t for kind, t in lake.events if kind == "start"}
    assert {"topic_stats", "ownership"} <= started and "snapshots" not in started
    assert lake.running == 0  # the write already running finished before the error reached the caller
