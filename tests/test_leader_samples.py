"""The modular leader's averages rebuilt from every load report the brokers wrote (tests/fixtures/real-probe: a real
three-broker Pulsar 4.0.7 cluster under ThresholdShedder, recorded by ``record-real.sh`` with ``PROBE=1``)."""

import json
import statistics
from pathlib import Path

import pytest

from lb_pipeline.formats.events import parse_lb_events
from lb_pipeline.simulation import leader_samples as ls

RUN = Path(__file__).parent / "fixtures" / "real-probe"


@pytest.fixture(scope="module")
def writes():
    return ls.read(RUN / "probe.jsonl.gz")


def _logged(kind: str | None, run: Path = RUN) -> list[dict]:
    """The brokers' logged events of ``kind`` (every kind: None; ``bronze/lb_events``' parser), each once: a
    snapshot's logs hold the lines since the snapshot before, and a line read twice is one event."""
    found = {}
    for log in run.glob("landing/*/*/logs/*.log"):
        rows, _ = parse_lb_events(log.read_text().splitlines(), log.stem)
        found.update({(r["broker"], r["event_ts"], r["kind"], r["bundle"], r["detail"]): r for r in rows
                      if kind in (None, r["kind"])})
    return sorted(found.values(), key=lambda r: r["event_ts"])


def _unloads() -> list[tuple[int, str, str]]:
    """(epoch ms, bundle, broker) of every unload the leader logged."""
    return [(round(r["event_ts"].timestamp() * 1000), r["bundle"], r["from_broker"]) for r in _logged("unload")
            if r["strategy"] == "ThresholdShedder"]


def test_every_stored_bundle_data_is_the_replay_of_the_reports_written_before_it(writes):
    """Each time a broker rewrote its report the leader sampled every bundle any report listed, in its brokers'
    map order, and once more before storing its copies: replayed so, every stored copy of the workload's bundles
    is reproduced, sample count and averages (float rounding apart), moves and overlaps included."""
    checks, _, _ = ls.replay(writes, busy=ls.busy_from_log(_logged(None)))
    workload = [c for c in checks if c.bundle.startswith("lb/")]
    assert len(workload) >= 400 and {c.window for c in workload} == {"short", "long"}
    assert [c for c in workload if c.stored_samples != c.rebuilt_samples] == []
    assert max(c.relative_error for c in workload) < 1e-12
    # the long window never filled: its averages are exact running means of every sample since the bundle appeared
    assert max(c.stored_samples for c in workload if c.window == "long") > 50


def test_a_moved_bundle_first_reports_more_than_it_carries_then_settles(writes):
    """The new owner's first report of a moved bundle carries more than the old owner reported (the clients'
    reconnection in a short stats window); its next report is back to the old rate. Whether the leader's averages
    start again from that first sample depends on which broker wrote first: the old owner without the bundle (it
    is dropped, the sample is its whole history) or the new owner with it (its averages go on)."""
    _, firsts, _ = ls.replay(writes)
    assert len(firsts) >= 12
    ratios = [f.ratio for f in firsts]
    assert min(ratios) > 1.0 and statistics.median(ratios) > 1.2 and max(ratios) > 2.0
    settled = [f for f in firsts if f.second is not None]
    assert all(abs(f.second / f.before - 1) < 0.15 for f in settled)
    assert 0 < sum(f.restarted for f in firsts) < len(firsts)


def test_the_leaders_averages_when_it_shed_put_the_bundle_it_unloaded_first(writes):
    """ThresholdShedder unloads a broker's bundles by their short-term throughput, highest first: at each logged
    unload the rebuilt averages rank the unloaded bundle first among the broker's bundles not unloaded within the
    grace period, where two hot bundles of the same traffic differed by a few per cent (the pair's order)."""
    unloads = _unloads()
    assert len(unloads) >= 3
    _, _, states = ls.replay(writes, at=[t for t, _, _ in unloads])
    assert "GracePeriod" not in json.loads((RUN / "recording.json").read_text())["overrides"]
    grace_ms = 120_000  # pulsar-real's loadBalancerSheddingGracePeriodMinutes (2)
    unloaded: dict[str, int] = {}
    margins = []
    for t, bundle, broker in unloads:
        report = next(w["data"] for w in reversed(writes) if w["mtime"] < t and w["path"] == ls.BROKERS + broker)
        averages = states[t]
        throughput = {b: sum(averages[b]["short"][1][2:]) for b in report["bundles"]
                      if b in averages and b.startswith("lb/") and t - unloaded.get(b, -10**15) > grace_ms}
        ranked = sorted(throughput, key=throughput.get, reverse=True)
        assert ranked[0] == bundle, (t, bundle, ranked[:3])
        margins.append(throughput[ranked[0]] / throughput[ranked[1]] - 1)
        unloaded[bundle] = t
    assert min(margins) < 0.1  # a near tie the snapshots alone could not order


class _Stat:
    def __init__(self, zxid: int):
        self.mzxid, self.mtime, self.version = zxid, 1_000 + zxid, zxid


class _Store:
    """``get_children``/``get`` as kazoo answers them, over path → (bytes, zxid)."""

    def __init__(self, nodes: dict[str, tuple[bytes, int]]):
        self.nodes = nodes

    def get_children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        kids = {p[len(path) + 1:].split("/")[0] for p in self.nodes if p.startswith(path + "/")}
        if not kids and path not in self.nodes:
            raise NoNodeError(path)
        return sorted(kids)

    def get(self, path: str):
        raw, zxid = self.nodes[path]
        return raw, _Stat(zxid)

    def exists(self, path: str):
        stat = _Stat(max(z for _, z in self.nodes.values()))
        stat.pzxid = stat.mzxid
        return stat


def test_the_probe_keeps_each_write_once_in_the_stores_order_cut_to_what_the_leader_reads(tmp_path):
    import importlib.util
    from io import StringIO

    spec = importlib.util.spec_from_file_location("probe_reports", Path(__file__).parent / "fixtures" / "probe_reports.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    report = lambda rate: json.dumps({"msgRateIn": rate, "lastStats": {"t/n/0x0_0x1": {"msgRateIn": rate}},  # noqa: E731
                                      "bundles": ["t/n/0x0_0x1"], "memory": {"usage": 1}}).encode()
    store = _Store({"/loadbalance/brokers/b:8080": (report(1.0), 7), "/loadbalance/brokers/a:8080": (report(2.0), 5),
                    "/loadbalance/bundle-data/t/n/0x0_0x1": (b'{"shortTermData": {}}', 6)})
    seen, out = {}, StringIO()
    assert probe.poll(store, seen, out, bundle_data=True) == 3
    assert probe.poll(store, seen, out, bundle_data=True) == 0  # nothing written since
    store.nodes["/loadbalance/brokers/b:8080"] = (report(3.0), 9)
    assert probe.poll(store, seen, out, bundle_data=False) == 1
    got = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [w["zxid"] for w in got] == [5, 6, 7, 9]
    assert got[0]["data"] == {"msgRateIn": 2.0, "lastStats": {"t/n/0x0_0x1": {"msgRateIn": 2.0}},
                              "bundles": ["t/n/0x0_0x1"]}  # the broker's memory is not what the leader samples
    assert got[1]["path"] == "/loadbalance/bundle-data/t/n/0x0_0x1" and got[-1]["data"]["msgRateIn"] == 3.0
    # a broker stopped: its report is gone, and the probe says so once
    del store.nodes["/loadbalance/brokers/a:8080"]
    store.nodes["/loadbalance/brokers/b:8080"] = (report(4.0), 12)
    assert probe.poll(store, seen, out, bundle_data=False) == 2
    assert probe.poll(store, seen, out, bundle_data=False) == 0
    gone = [json.loads(line) for line in out.getvalue().splitlines()][-2:]
    assert [(w["path"], w["data"]) for w in gone] == [("/loadbalance/brokers/a:8080", None),
                                                    ("/loadbalance/brokers/b:8080", gone[1]["data"])]
    assert gone[0]["zxid"] == 12 and gone[1]["data"]["msgRateIn"] == 4.0
    # the leader's replay reads what the probe wrote
    (tmp_path / "probe.jsonl").write_text(out.getvalue())
    assert [w["zxid"] for w in ls.read(tmp_path / "probe.jsonl")] == [5, 6, 7, 9, 12, 12]


def test_the_logged_report_writes_and_the_stored_writes_are_every_sample_the_leader_took(writes):
    """Every report write left its log line, and the leader's samples of a bundle that lived through the record are
    those writes and one more before each time it stored its averages: the cadence the simulation and
    ``silver/bundle_time_averages`` take from the logs when no stored BundleData shows it."""
    reports = [w for w in writes if w["path"].startswith(ls.BROKERS)]
    assert len(_logged("report-written")) == len(reports)
    stored = [w for w in writes if w["path"].startswith(ls.BUNDLE_DATA + "lb/ns-c16/0x10000000_0x20000000")]
    first, last = stored[0], stored[-1]  # a bundle no move or split touched
    reports_between = sum(1 for w in reports if first["mtime"] < w["mtime"] <= last["mtime"])
    ticks_between = len(stored) - 1
    grown = last["data"]["longTermData"]["numSamples"] - first["data"]["longTermData"]["numSamples"]
    assert grown == reports_between + ticks_between


def _config(run: Path):
    """The configuration the record's brokers ran: Pulsar 4.0.7's defaults and the record's overrides."""
    from lb_pipeline.model.config import PulsarConfig

    lines = json.loads((run / "recording.json").read_text())["overrides"].splitlines()
    pairs = [line.split("=", 1) for line in lines if "=" in line and not line.lstrip().startswith("#")]
    return PulsarConfig(profile="pulsar-4.0.7").overridden(**{k.strip(): v.strip() for k, v in pairs})


def _logged_candidates(run: Path) -> list[tuple[int, str]]:
    """(epoch ms, bundle) of each line the leader logged for a bundle it considered splitting. A line two snapshots'
    logs both hold is one line; the same line twice in one log is two (a bundle two reports list, checked twice)."""
    from collections import Counter

    found: Counter = Counter()
    for log in run.glob("landing/*/*/logs/*.log"):
        rows, _ = parse_lb_events(log.read_text().splitlines(), log.stem)
        here = Counter((r["event_ts"], r["bundle"], r["detail"]) for r in rows if r["kind"] == "split-candidate")
        found |= here  # the larger count of each line
    return sorted((round(t.timestamp() * 1000), b) for (t, b, _), n in found.items() for _ in range(n))


def test_every_split_the_leader_considered_is_found_on_its_rebuilt_averages_at_the_report_write_that_ran_it(writes):
    """The leader checks for bundles to split after each report write (``updateAll``). Run on the rebuilt samples
    at every write, the project's ``BundleSplitterTask`` finds exactly the bundles the leader logged as split
    candidates, at the write that ran each check, and none at any other write."""
    checks = ls.split_checks(writes, _config(RUN))
    # a check per notification: a write, and two for a report created or deleted (and the parent's ChildrenChanged)
    reports = [w for w in writes if w["path"].startswith(ls.BROKERS)]
    assert len(checks) == len(reports) + sum(1 for w in reports if w["version"] == 0 or w["data"] is None)
    predicted = [(c.mtime, bundle) for c in checks for bundle, _, _ in c.hot]
    logged = _logged_candidates(RUN)
    assert len(logged) >= 3
    ran = [(max(c.mtime for c in checks if c.mtime <= t), bundle) for t, bundle in logged]
    assert sorted(ran) == sorted(predicted)


BURST = Path(__file__).parent / "fixtures" / "real-probe-burst"


def test_a_moved_hot_bundle_is_split_from_its_new_owners_first_report():
    """The burst record (loadBalancerNamespaceBundleMaxMsgRate=380, 1.1 to 1.5 times a hot ``lb/ns-c16`` bundle's
    steady rate; six moves of the namespace by hand): the leader's split checks found on the rebuilt samples are
    all among those it logged, and every ``lb/ns-c16`` bundle split for its rate right after a move was split at
    the new owner's first report of it, whose rate passed the limit where the old owner's never had."""
    from collections import Counter

    config = _config(BURST)
    limit = config.get_float("loadBalancerNamespaceBundleMaxMsgRate")
    writes = ls.read(BURST / "probe.jsonl.gz")
    checks = ls.split_checks(writes, config)
    predicted = Counter(bundle for c in checks for bundle, _, _ in c.hot)
    logged = Counter(bundle for _, bundle in _logged_candidates(BURST))
    assert sum(logged.values()) >= 25 and predicted - logged == Counter()
    assert sum(predicted.values()) >= sum(logged.values()) - 2  # measured: 26 of 28 (docs/validation.md)
    _, firsts, _ = ls.replay(writes)
    after_move = []
    for c in checks:
        for bundle, why, rate in c.hot:
            move = next((f for f in firsts if f.bundle == bundle and f.moved_ms == c.mtime), None)
            if bundle.startswith("lb/ns-c16/") and why == ("MsgRate",) and move is not None:
                after_move.append(bundle)
                assert move.before < limit < move.first and rate > limit, (bundle, move)
    assert len(set(after_move)) >= 3


def test_the_burst_records_averages_follow_the_leaders_queue_and_a_stopped_brokers_two_notifications():
    """On the burst record the start-up splits held the leader's thread for 11 s and broker c stopped at the end.
    Each report write queues an ``updateAll`` on that one thread, which reads the reports current when it runs;
    a report deleted (or created) notifies twice (``Deleted`` and the parent's ``ChildrenChanged``). Replayed so,
    every stored copy after the start-up's first minute is rebuilt but for bundles already off there, the last
    batch after c stopped included; without either, far more are off."""
    writes = ls.read(BURST / "probe.jsonl.gz")
    busy = ls.busy_from_log(_logged(None, BURST))
    assert sum(end - start for start, end in busy) > 11_000

    def off(checks):
        return [c for c in checks if c.bundle.startswith("lb/")
                and (c.stored_samples != c.rebuilt_samples or c.relative_error > 1e-12)]

    checks = [c for c in ls.replay(writes, busy=busy)[0] if c.bundle.startswith("lb/")]
    assert len(checks) > 600
    first_batch = min(c.mtime for c in checks) + ls.BATCH_MS
    early = {c.bundle for c in off(checks) if c.mtime <= first_batch}
    late = {c.bundle for c in off(checks) if c.mtime > first_batch} - early
    assert len(off(checks)) <= 80 and len(early) <= 6 and len(late) <= 1  # measured: 76 copies, 6 + 1 bundles
    last = max(c.mtime for c in checks)
    assert [c for c in off(checks) if c.mtime > last - ls.BATCH_MS and c.bundle not in early] == []
    without_queue = off(ls.replay(writes)[0])
    without_departure = off(ls.replay([w for w in writes if w["data"] is not None], busy=busy)[0])
    assert len(without_queue) > len(off(checks)) + 20 and len(without_departure) > len(off(checks)) + 20
