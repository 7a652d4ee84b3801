"""ThresholdShedder's history taken from the leader's log (``algorithms/shedding/logged_history.py``), checked against the two
real probe records, which hold every load report the brokers wrote (the leader's copies at each cycle)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.threshold_shedder import ThresholdShedder
from lb_pipeline.formats.events import parse_lb_events
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation import leader_samples as ls
from lb_pipeline.algorithms.shedding.logged_history import LoggedHistory, from_events

FIXTURES = Path(__file__).parent / "fixtures"
PROBES = [FIXTURES / "real-probe", FIXTURES / "real-probe-burst"]


def _shed_lines(run: Path) -> list[tuple[int, str, float, float]]:
    """(epoch ms, broker, history, average) of every ThresholdShedder line the leader logged, each once (a line can
    land in two snapshots' logs)."""
    rows = [r for log in run.glob("landing/*/*/logs/*.log")
            for r in parse_lb_events(log.read_text().splitlines(), log.stem)[0]]
    return sorted({(int(ms), broker, float(h) / 100, float(a) / 100) for broker, ms, h, a in from_events(rows)[0]})


def _copies_at(writes: list[dict], ms: int) -> dict[str, dict]:
    """Each broker's load report as last written at ``ms``: the leader's copy in that cycle (the probe keeps CPU
    only; memory and bandwidth, 2-20 % in the leader's lines, are below it at every logged cycle)."""
    out = {}
    for w in writes:
        broker = w["path"].rsplit("/", 1)[1]
        if w["path"].startswith("/loadbalance/brokers/") and w["mtime"] <= ms:
            if w.get("data"):
                out[broker] = {**w["data"], "lastStats": w["data"].get("lastStats") or {}}
            else:
                out.pop(broker, None)  # deleted: the broker left
    return out


@pytest.mark.parametrize("run", PROBES, ids=lambda p: p.name)
def test_from_each_logged_history_the_next_logged_cycle_is_the_leaders_to_the_last_digit(run):
    """The leader logs a shedding broker's history and the average at each cycle it sheds in. Anchored on one such
    line and stepped with the leader's copies of the reports, the replay's ThresholdShedder gives the history and the
    average the leader logged at its next cycle (the average whatever the other brokers' split, which the log does
    not give)."""
    writes, config = ls.read(run / "probe.jsonl.gz"), PulsarConfig()
    lines = _shed_lines(run)
    pairs = [(a, b) for a, b in zip(lines, lines[1:]) if 55_000 < b[0] - a[0] < 65_000 and a[1] == b[1]]
    assert len(pairs) >= (1 if run.name == "real-probe" else 6), lines
    for (_, broker, history, average), (ms, _, next_history, next_average) in pairs:
        reports = _copies_at(writes, ms)
        shedder = ThresholdShedder({b: 0.3 for b in reports})  # any split of the others: the log does not give it
        shedder.anchor(broker, history, average, list(reports))
        assert math.isclose(sum(shedder.history.values()) / len(reports), average, rel_tol=1e-12)
        got = shedder.update_all(LoadData(reports, {}).frame(config), config)
        assert math.isclose(shedder.history[broker], next_history, rel_tol=1e-9), (ms, shedder.history, next_history)
        assert math.isclose(got, next_average, rel_tol=1e-9), (ms, got, next_average)


def test_the_leaders_first_cycles_explain_why_the_replay_without_the_log_predicted_nothing():
    """real-probe: the leader's history of broker a at its first logged shed (43.5 %) comes from its first cycle,
    before the record's first snapshot: the leader broker's start-up CPU (50 %). Seeded at the first snapshot
    instead, as a record that starts late must, the history is 25 % there, under the average + 10 %."""
    run = FIXTURES / "real-probe"
    writes, config = ls.read(run / "probe.jsonl.gz"), PulsarConfig()
    first = min(datetime.strptime(d.name, "%Y-%m-%dT%H-%M-%SZ").replace(tzinfo=timezone.utc).timestamp() * 1000
                for d in (run / "landing").glob("*/20*"))
    (elected,) = set(from_events([r for log in run.glob("landing/*/*/logs/*.log")
                                  for r in parse_lb_events(log.read_text().splitlines(), log.stem)[0]])[1])
    ms, broker, history, average = _shed_lines(run)[0]
    interval = 60_000
    cycles = [elected + k * interval for k in range(1, (ms - elected) // interval + 1)]
    assert cycles[-1] == ms - (ms - elected) % interval and cycles[0] < first < cycles[1]

    def run_from(start: int) -> ThresholdShedder:
        shedder = ThresholdShedder()
        for t in (c for c in cycles if c >= start):
            shedder.update_all(LoadData(_copies_at(writes, t), {}).frame(config), config)
        return shedder

    leader = run_from(cycles[0])
    assert math.isclose(leader.history[broker], history, rel_tol=0.01)  # the log's 43.5 %, from every cycle
    late = run_from(cycles[1])  # the cycles a record that starts after the first one sees
    assert late.history[broker] < 0.30 < history
    assert late.history[broker] < sum(late.history.values()) / len(late.history) + 0.10


def test_the_anchor_keeps_the_others_proportions_and_never_goes_negative():
    shedder = ThresholdShedder({"a": 0.5, "b": 0.2, "c": 0.6})
    shedder.anchor("a", 0.4, 0.3, ["a", "b", "c"])  # the others hold 0.5 between them, 1 : 3
    assert shedder.history == pytest.approx({"a": 0.4, "b": 0.125, "c": 0.375})
    shedder.anchor("b", 0.9, 0.2, ["a", "b", "c"])  # inconsistent (the logged broker alone is above the total)
    assert shedder.history == pytest.approx({"a": 0.0, "b": 0.9, "c": 0.0})
    fresh = ThresholdShedder()
    fresh.anchor("a", 0.4, 0.3, ["a", "b", "c"])  # nothing held yet: shared evenly
    assert fresh.history == pytest.approx({"a": 0.4, "b": 0.25, "c": 0.25})


def test_a_logged_line_is_taken_once_after_the_last_election_and_before_the_snapshot():
    state = LoggedHistory()
    lines = [["a", "1000", "40.0", "20.0"], ["a", "5000", "45.0", "21.0"], ["b", "9000", "50.0", "22.0"]]
    assert state.latest(6000, lines, 500) == ("a", 5000, 0.45, 0.21)  # the last one logged by then
    assert state.latest(6000, lines, 500) is None  # taken already
    assert state.latest(10_000, lines, 500) == ("b", 9000, 0.5, 0.22)
    state.reset()
    assert state.latest(20_000, lines, 9500) is None  # every line is another load manager's: before the election


@pytest.mark.parametrize("line", [
    ["a", "1000", "NaN", "20"], ["a", "1000", "Infinity", "20"], ["a", "1000", "-5", "20"], ["a", "1000", "1e400", "20"],
    ["a", "1000", "40", None], ["a", "x", "40", "20"], [None, "1000", "40", "20"], ["a", "1000", "40"], "a,1000,40,20",
    [["a"], "1000", "40", "20"], ["a", "1000", "2e6", "20"],
])
def test_a_hostile_logged_line_is_not_taken(line):
    state = LoggedHistory()
    assert state.latest(5000, [line], None) is None
    shedder = ThresholdShedder({"a": 0.1, "b": 0.2})
    assert state.apply(shedder, 5000, [line], None, ["a", "b"], lambda: None, 60_000) is None
    assert shedder.history == {"a": 0.1, "b": 0.2}


def test_the_cycles_between_the_line_and_the_replays_cycle_are_stepped_with_the_snapshots_usage():
    steps = []
    shedder = ThresholdShedder({"a": 0.1, "b": 0.2})
    note = LoggedHistory().apply(shedder, 250_500, [["a", "10000", "40", "25"]], None, ["a", "b"],
                                 lambda: steps.append(1), 60_000)  # the cycle about to run, drifted half a second
    assert len(steps) == 3 and "stepped 3 cycle(s)" in note  # the leader's cycles at 70, 130 and 190 s
    assert shedder.history == pytest.approx({"a": 0.4, "b": 0.1})
    assert LoggedHistory().apply(shedder, 70_000, [["a", "10000", "40", "25"]], None, ["a", "b"],
                                 lambda: steps.append(1), 60_000) == \
        "ThresholdShedder's history from the leader's log (a 40.0%, average 25.0%)"
    assert len(steps) == 3  # the cycle about to run is the next after the line's: nothing between
    # a broker the snapshot does not have is not taken
    assert LoggedHistory().apply(shedder, 50_000, [["z", "10000", "40", "25"]], None, ["a", "b"], lambda: None, 60_000) is None


@pytest.mark.spark
def test_the_nightly_replay_takes_a_brokers_history_from_the_leaders_log_and_no_longer_calls_it_an_estimate(lake, spark):
    """The demo day replayed with one ThresholdShedder line in the logs of a snapshot (the busiest broker far above
    the average): from that snapshot the replay's history of the broker is the leader's, and the broker sheds there,
    a choice the replay no longer marks as an estimate. Lines before the leader's election, and lines whose numbers
    are not numbers, change nothing and stop nothing."""
    from pyspark.sql import functions as F

    from lb_pipeline.transforms import gold, silver
    from lb_pipeline.transforms.config import cluster_configs
    from tests.conftest import DEMO_DAY

    def read(layer, table):
        return lake.read(spark, layer, table, DEMO_DAY)

    configs = cluster_configs(read("bronze", "config"), read("bronze", "snapshots"))
    reports = read("bronze", "broker_reports")
    times = sorted(r[0] for r in reports.select("snapshot_ts").distinct().collect())
    at = times[2]
    busiest = (reports.where(F.col("snapshot_ts") == at)
               .orderBy((F.col("msg_throughput_in") + F.col("msg_throughput_out")).desc()).first().broker)
    cluster = reports.first().cluster

    def replay(lines):
        events = spark.createDataFrame(
            [(cluster, ts, DEMO_DAY, kind, broker, event_ts, detail) for ts, kind, broker, event_ts, detail in lines],
            "cluster string, snapshot_ts timestamp, snapshot_date string, kind string, from_broker string, "
            "event_ts timestamp, detail string").withColumn("bundle", F.lit(None).cast("string"))
        return {(r.snapshot_ts, r.broker): r for r in gold.shedding_decisions(
            reports, read("bronze", "bundle_reports"), read("silver", "bundle_time_averages"), read("bronze", "ownership"),
            silver.layouts(read("bronze", "namespaces"), read("bronze", "ownership")), read("bronze", "config"),
            read("bronze", "failure_domains"), configs, events=events).where("strategy = 'ThresholdShedder'").collect()}

    def shed(history, average):
        return (f"max resource usage above avgUsage and threshold {history}% > {average}% + 10.0% -- Offloading at "
                f"least 9 MByte/s of traffic, left throughput 1 MByte/s (cpu: 99.00%)")

    logged = at - timedelta(seconds=30)  # the leader's cycle before the snapshot
    plain = replay([])
    anchored = replay([(at, "shed-attempt", busiest, logged, shed("99.5", "30.0")),
                       (at, "shed-attempt", busiest, logged, "above avgUsage and threshold 1.2.3% > 9e999% + x")])
    got = anchored[(at, busiest)]
    assert (at, busiest) not in plain or plain[(at, busiest)].warming_up
    assert not got.warming_up and got.value > 0.89 and got.destination != busiest
    assert f"history from the leader's log ({busiest} 99.5%, average 30.0%)" in got.cycle_note
    # the line is the end of a cycle the leader logged: its next cycle comes an interval later, 30 s after the
    # snapshot, and the replay's cycle (the grace period's clock, the unload's time) is that one
    assert "the first at the leader's next cycle, 30.0 s after the snapshot" in got.cycle_note
    assert got.unload_ts == at + timedelta(seconds=30, milliseconds=1)
    assert all(r.unload_ts == r.snapshot_ts for r in plain.values())
    # the same line logged before the leader's election is another load manager's state
    before = replay([(at, "leader", busiest, logged + timedelta(seconds=10), None),
                     (at, "shed-attempt", busiest, logged, shed("99.5", "30.0"))])
    # logged half an hour before the snapshot: stepped with the snapshot's usage through the cycles since
    earlier = replay([(at, "shed-attempt", busiest, at - timedelta(minutes=30), shed("99.5", "30.0"))])
    assert (at, busiest) not in earlier or earlier[(at, busiest)].value < got.value
    if (at, busiest) in earlier:
        assert "stepped 29 cycle(s) since" in earlier[(at, busiest)].cycle_note
    assert {k: (r.bundle, r.warming_up) for k, r in before.items()} == {k: (r.bundle, r.warming_up) for k, r in plain.items()}


def test_the_replays_cycle_is_the_leaders_next_one_scheduled_from_its_log():
    """The leader's shedding task runs an interval after its last cycle ends (a fixed delay): the replay's cycle
    for a snapshot is the first such time after it; without a logged cycle or election, the snapshot's own time.
    An anchor logged after the snapshot (a later snapshot's line) is not used. A bundle unloaded in the anchor's
    cycle is out of a grace period of two intervals at the second cycle after it, as the leader found it."""
    from lb_pipeline.transforms.leader_state import latest_anchor, next_cycle

    assert next_cycle(None, 100_000, 60_000) == 100_000
    # each cycle starts an interval after the one before it ended, a millisecond after its last line at least
    assert next_cycle(52_000, 100_000, 60_000) == 112_001
    assert next_cycle(52_000, 111_000, 60_000) == 112_001
    assert next_cycle(52_000, 3_700_000, 60_000) == 3_712_061  # an hour on, the same schedule
    assert latest_anchor(None, 52_000, 100_000) == 52_000
    assert latest_anchor(52_000, 30_000, 100_000) == 52_000
    assert latest_anchor(52_000, 150_000, 100_000) == 52_000
    assert latest_anchor(52_000, "52000", 100_000) == latest_anchor(52_000, True, 100_000) == 52_000  # not a number: ignored
    from lb_pipeline.model.java_values import grace_cutoff

    unloaded = 52_000  # its line is the anchor
    at = next_cycle(unloaded, unloaded + 110_000, 60_000)
    assert not unloaded < grace_cutoff(at - 60_000, 2)  # still held back at the first cycle after it
    assert unloaded < grace_cutoff(at, 2)  # forgotten at the second


def test_the_lines_are_read_from_event_rows_whatever_their_detail_holds():
    """``from_events`` (the closed loop's reader, from ``bronze/lb_events`` rows or the nightly job's pandas copy of
    them): ThresholdShedder's lines and the elections; an OverloadShedder line, a detail that is missing, NaN or not
    text is no line."""
    t = datetime(2026, 12, 5, 3, 52, 6, tzinfo=timezone.utc)
    rows = [{"kind": "leader", "event_ts": t - timedelta(minutes=8), "from_broker": None, "detail": None},
            {"kind": "shed-attempt", "event_ts": t, "from_broker": "a:8080",
             "detail": "max resource usage above avgUsage and threshold 43.47% > 21.0% + 10.0% -- Offloading at least"},
            {"kind": "shed-attempt", "event_ts": t, "from_broker": "a:8080", "detail": "max resource usage of 58%"},
            {"kind": "shed-attempt", "event_ts": t, "from_broker": "a:8080", "detail": float("nan")},
            {"kind": "shed-attempt", "event_ts": t, "from_broker": "a:8080"},
            {"kind": "shed-attempt", "event_ts": t, "from_broker": "a:8080", "detail": 12}]
    ms = round(t.timestamp() * 1000)
    assert from_events(rows) == ([["a:8080", str(ms), "43.47", "21.0"]], [ms - 8 * 60_000])
