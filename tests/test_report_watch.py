"""The collector's watch of the brokers' load reports (``snapshots/report_watch.py``, ``collect --every …
--metadata-store …``): every new write kept, with its resource usage, a deletion kept, and what ingest reads back."""

import json

from tests.test_report_writes import BUNDLE, _parse


class _Store:
    """The reports' nodes as ZooKeeper versions them: each write a new transaction id."""

    def __init__(self):
        self.nodes, self.zxid = {}, 0

    def write(self, broker: str, stats) -> None:
        self.zxid += 1
        data, _, _, version, _ = self.nodes.get(broker, (None, 0, 0, -1, 0))
        self.nodes[broker] = (json.dumps({"lastStats": stats}).encode() if not isinstance(stats, bytes) else stats,
                              self.zxid, 1000 + self.zxid, version + 1, self.zxid)

    def children(self, path):
        return sorted(self.nodes) if path == "/loadbalance/brokers" else []

    def get_versioned(self, path, data=True):
        from lb_pipeline.snapshots.metadata_store import Versioned

        if path == "/loadbalance/brokers":
            return Versioned(b"", 0, 0, 0, self.zxid, 5000)
        got = self.nodes.get(path.rsplit("/", 1)[-1])
        return None if got is None else Versioned(*got[:4], 0, 5000)


def test_the_watcher_keeps_every_new_write_and_a_deletion_and_ingest_reads_them_back():
    from lb_pipeline.snapshots.report_watch import ReportWatcher, lines

    store = _Store()
    stats = {BUNDLE: {"msgRateIn": 1.0, "msgRateOut": 2.0, "msgThroughputIn": 3.0, "msgThroughputOut": 4.0}}
    store.write("h:1", stats)
    watcher = ReportWatcher(store, max_writes=3)
    assert watcher.poll() == 1 and watcher.poll() == 0  # a version already kept is not kept again
    store.write("h:2", {})
    store.write("h:1", {BUNDLE: {**stats[BUNDLE], "msgRateIn": 9.0}})
    assert watcher.poll() == 2
    del store.nodes["h:2"]
    store.zxid += 1
    assert watcher.poll() == 1
    writes, dropped, errors = watcher.take()
    assert dropped == 1 and errors == []  # four kept, three fit: the oldest went
    assert [(w["broker"], w.get("deleted", False)) for w in writes] == [("h:2", False), ("h:1", False), ("h:2", True)]
    good, bad = _parse(lines(writes).encode(), brokers=("h:1",))
    assert bad == [] and [(r["broker"], r["bundle"], r["deleted"], r["msg_rate_in"]) for r in good] == [
        ("h:2", None, False, None), ("h:1", BUNDLE, False, 9.0), ("h:2", None, True, None)]
    assert watcher.take() == ([], 0, [])
    store.write("h:1", b'{"lastStats": {"x": NaN}}')  # what the store holds, kept: ingest quarantines the line
    watcher.poll()
    good, bad = _parse(lines(watcher.take()[0]).encode())
    assert good == [] and bad[0]["field"] == "line 1: lastStats"


def test_the_watcher_keeps_each_writes_resource_usage_beside_its_stats_and_ingest_reads_the_line_as_before():
    from lb_pipeline.snapshots.report_watch import ReportWatcher, lines

    store = _Store()
    stats = {BUNDLE: {"msgRateIn": 1.0, "msgRateOut": 2.0, "msgThroughputIn": 3.0, "msgThroughputOut": 4.0}}
    report = {"lastStats": stats, "cpu": {"usage": 61.5, "limit": 40.0}, "memory": {"usage": 100, "limit": 1024},
              "directMemory": {"usage": "a lot", "limit": 1.0}, "bandwidthIn": [], "numTopics": 3}
    store.write("h:1", json.dumps(report).encode())
    watcher = ReportWatcher(store)
    watcher.poll()
    (write,), _, _ = watcher.take()
    # what the overload check reads, as written; what is not a number is left out
    assert write["usage"] == {"cpu": {"usage": 61.5, "limit": 40.0}, "memory": {"usage": 100, "limit": 1024},
                              "directMemory": {"limit": 1.0}}
    good, bad = _parse(lines([write]).encode(), brokers=("h:1",))
    assert bad == [] and [(r["bundle"], r["msg_rate_out"]) for r in good] == [(BUNDLE, 2.0)]


def test_a_report_holding_a_number_past_a_doubles_range_is_kept_as_written_and_quarantined_by_line():
    """A report whose JSON holds 1e400 (valid JSON, infinite as a double) in its stats or its usage: kept as the
    store holds it, the snapshot's file still written (the writes are JSON again), ingest quarantines that line by
    field and lands the others."""
    from lb_pipeline.snapshots.report_watch import ReportWatcher, lines

    store = _Store()
    store.write("h:1", b'{"lastStats": {"%s": {"msgRateIn": 1e400}}}' % BUNDLE.encode())
    store.write("h:2", b'{"lastStats": {}, "cpu": {"usage": 1e400, "limit": 40.0}}')
    store.write("h:3", {BUNDLE: {"msgRateIn": 1.0, "msgRateOut": 1.0, "msgThroughputIn": 1.0, "msgThroughputOut": 1.0}})
    watcher = ReportWatcher(store)
    watcher.poll()
    writes, _, _ = watcher.take()
    assert [isinstance(w["lastStats"], str) for w in writes] == [True, True, False]
    good, bad = _parse(lines(writes).encode(), brokers=("h:1", "h:2", "h:3"))
    assert [r["broker"] for r in good] == ["h:3"]
    assert [q["field"] for q in bad] == ["line 1: lastStats", "line 2: lastStats"]
