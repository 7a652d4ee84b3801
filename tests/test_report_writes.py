"""Every load report the brokers wrote (``lb/report-writes.jsonl``, ``bronze/report_writes``): the leader's averages
replayed write by write instead of estimated from a snapshot a minute, and what that does to the nightly replay of a
real cluster (tests/fixtures/real-probe-burst: three brokers of Pulsar 4.0.7 under ThresholdShedder, `lb/ns-c16`
moved by hand six times; its probe's writes put into its snapshots by tests/fixtures/probe_to_report_writes.py)."""

import json
from pathlib import Path

import pytest

from lb_pipeline.ingest.files import parse_file
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.simulation import leader_samples as ls

RUN = Path(__file__).parent / "fixtures" / "real-probe-burst"
SNAP = "file:/landing/c/2026-01-01T00-00-00Z"
BUNDLE = "t/n/0x00000000_0xffffffff"


def _parse(content: bytes, brokers=("h:1",)):
    return parse_file(TABLES["report_writes"], f"{SNAP}/lb/report-writes.jsonl", content, manifests={SNAP: list(brokers)})


def test_each_write_lands_a_row_per_bundle_and_a_bad_line_is_quarantined_by_line_and_field():
    stats = {"msgRateIn": 1.0, "msgRateOut": 2, "msgThroughputIn": 3, "msgThroughputOut": 4}
    lines = [{"zxid": 5, "mtime": 1000, "broker": "h:1", "version": 2, "lastStats": {BUNDLE: stats, "t/n/0x80000000_0xffffffff": stats}},
             {"zxid": 6, "mtime": 1001, "broker": "h:2", "deleted": True},  # a broker that stopped since: kept
             {"zxid": 7, "mtime": 1002, "broker": "h:1", "version": "x", "lastStats": {}},
             {"zxid": 8, "mtime": 1003, "broker": "h:1", "version": 3, "lastStats": {"bad": stats}},
             {"zxid": 9, "mtime": 1004, "broker": "h:1", "version": 4, "lastStats": {BUNDLE: {**stats, "msgRateIn": -1}}},
             {"zxid": 10, "mtime": 1005, "broker": "h:1", "version": 5, "lastStats": {}}]
    content = "\n".join(json.dumps(x) for x in lines[:2]) + "\nnot json\n" + "\n".join(json.dumps(x) for x in lines[2:])
    good, bad = _parse(content.encode())
    assert [(r["zxid"], r["bundle"], r["position"], r["deleted"]) for r in good] == [
        (5, BUNDLE, 0, False), (5, "t/n/0x80000000_0xffffffff", 1, False), (6, None, None, True), (10, None, None, False)]
    assert good[0]["msg_rate_out"] == 2.0 and good[0]["write_ms"] == 1000 and good[0]["version"] == 2
    assert [(q["field"], q["reason"][:30]) for q in bad] == [
        ("line 3", "expected valid JSON, got Expec"), ("line 4: version", "expected a number, got a strin"),
        ("line 5: lastStats[bad]", "expected a bundle name tenant/"),
        ("line 6: lastStats[t/n/0x00000000_0xffffffff].msgRateIn", "expected a number >= 0, got -1")]


@pytest.fixture(scope="module")
def lakes(spark, tmp_path_factory):
    """Each record's landing ingested once: name → (lake, day)."""
    from lb_pipeline.ingest.bronze import ingest_day
    from lb_pipeline.spark.lake import Lake

    made = {}

    def lake_of(run: Path):
        if run.name not in made:
            lake = Lake(str(tmp_path_factory.mktemp(run.name) / "lake"))
            day = next(run.glob("landing/*/*/manifest.json")).parent.name[:10]
            result = ingest_day(spark, lake, str(run / "landing"), day)
            assert result.quarantine.rows == 0
            made[run.name] = lake, day
        return made[run.name]

    return lake_of


@pytest.fixture(scope="module")
def probed_lake(lakes):
    return lakes(RUN)


def _averages(spark, lake, day, with_writes: bool):
    """``silver/bundle_time_averages`` as the night computes it, with or without the report writes."""
    from lb_pipeline.simulation.leader_averages import stored_every
    from lb_pipeline.transforms.config import cluster_configs
    from lb_pipeline.transforms.time_averages import bundle_time_averages

    def read(t):
        return lake.read(spark, "bronze", t, day)

    configs = cluster_configs(read("config"), read("snapshots"), reports=read("broker_reports"))
    return bundle_time_averages(read("bundle_reports"), read("bundle_data"), snapshots=read("snapshots"),
                                events=read("lb_events"), stored_every={c: stored_every(configs[c]) for c in configs},
                                quotas=read("resource_quotas"),
                                report_writes=read("report_writes") if with_writes else None)


def test_the_averages_are_the_leaders_replayed_from_every_write_at_each_snapshot(spark, probed_lake):
    """At every snapshot every bundle's averages are those the leader held after the snapshot's last write, as
    ``leader_samples`` replays the probe's every write (which rebuilt the leader's stored copies exactly:
    test_leader_samples), where the estimate from the snapshots alone is off for the bundles moved by hand."""
    lake, day = probed_lake
    rows = _averages(spark, lake, day, True).toPandas()
    assert set(rows["seeded_from"]) == {"report-writes"}
    writes = lake.read(spark, "bronze", "report_writes", day).groupBy("snapshot_ts").agg({"write_ms": "max"}).collect()
    last = {r[0]: r[1] for r in writes}
    probe = [w for w in ls.read(RUN / "probe.jsonl.gz")]
    events = lake.read(spark, "bronze", "lb_events", day).select("kind", "event_ts").collect()
    _, _, states = ls.replay(probe, at=sorted(ms + 1 for ms in last.values()),
                             busy=ls.busy_from_log([r.asDict() for r in events]))
    diffs = []
    for r in rows.itertuples(index=False):
        ts = r.snapshot_ts.to_pydatetime().replace(tzinfo=None)
        state = states[last[next(k for k in last if k.replace(tzinfo=None) == ts)] + 1].get(r.bundle)
        if state is None or r.snapshot_ts == rows["snapshot_ts"].min():  # the probe saw the cluster's start
            continue
        for w in ("short", "long"):
            n, values = state[w]
            want = values[0] + values[1]
            got = getattr(r, f"{w}_msg_rate_in") + getattr(r, f"{w}_msg_rate_out")
            diffs.append((abs(got - want) / max(want, 1e-9), abs(getattr(r, f"{w}_num_samples") - n)))
    # the leader's own sample before each batch it stores is known only for the batches a snapshot holds: measured,
    # 438 of 754 averages exact, the rest within 0.75 % and two samples
    assert len(diffs) > 600 and sum(d < 1e-9 and k == 0 for d, k in diffs) > len(diffs) / 2
    assert max(d for d, _ in diffs) < 0.01 and max(k for _, k in diffs) <= 2
    from lb_pipeline.report.trust import inputs_note

    averages = _averages(spark, lake, day, True)
    note = inputs_note(lake.read(spark, "bronze", "snapshots", day), lake.read(spark, "bronze", "bundle_data", day),
                       averages)
    assert note.startswith("The leader's bundle averages (BundleData) were replayed from every load report") and (
        f"at each of the {rows['snapshot_ts'].nunique()} snapshots" in note)
    times = sorted(rows["snapshot_ts"].unique())
    cut = times[len(times) // 2].to_pydatetime()
    alone = _averages(spark, lake, day, False)
    mixed = averages.where(averages.snapshot_ts >= cut).unionByName(alone.where(alone.snapshot_ts < cut))
    note = inputs_note(lake.read(spark, "bronze", "snapshots", day), lake.read(spark, "bronze", "bundle_data", day),
                       mixed)
    assert f"every load report the brokers wrote at {len(times) - len(times) // 2} of the {len(times)} snapshots" in note
    estimate = _averages(spark, lake, day, False).toPandas().set_index(["snapshot_ts", "bundle"])
    both = rows.set_index(["snapshot_ts", "bundle"]).join(estimate, rsuffix="_estimate")
    off = (both["long_msg_rate_in"] - both["long_msg_rate_in_estimate"]).abs() > 0.05 * both["long_msg_rate_in"]
    assert off.sum() >= 5  # the moved bundles whose averages the leader restarted


# record → (predicted, confirmed, all to the logged broker) from every write; confirmed from the snapshots alone
REPLAYED = {"real-probe-burst": ((9, 9), 8), "writes-unequal-threshold": ((8, 8), 8)}


@pytest.mark.parametrize("run", sorted(REPLAYED))
def test_the_nightly_replay_from_every_write_predicts_the_unloads_the_leader_logged(spark, lakes, run):
    """Measured (docs/validation.md). real-probe-burst: from every write 9 predicted, 9 confirmed of the 10 logged,
    each to the logged broker; from the snapshots alone 8 confirmed. writes-unequal-threshold (recorded with the
    collector running through it, `collect --every 60 --metadata-store`, and scored untouched): 8 predicted, 8
    confirmed of the 9 logged, each to the logged broker (the miss: the leader's first unload after its election);
    the snapshots alone give the same there (its two hot topics are no tie). writes-threshold, the daemon night's
    record, is held to its 6 of 6 by test_real_runs."""
    from lb_pipeline.report.trust import replay_vs_recorded
    from lb_pipeline.transforms import gold, silver
    from lb_pipeline.transforms.config import cluster_configs

    lake, day = lakes(RUN.parent / run if run.startswith("real-probe") else RUN.parent / "real-runs" / run)

    def read(t):
        return lake.read(spark, "bronze", t, day)

    configs = cluster_configs(read("config"), read("snapshots"), reports=read("broker_reports"))
    layouts = silver.layouts(read("namespaces"), read("ownership"))
    scores = {}
    for with_writes in (True, False):
        decisions = gold.shedding_decisions(read("broker_reports"), read("bundle_reports"),
                                            _averages(spark, lake, day, with_writes), read("ownership"), layouts,
                                            read("config"), read("failure_domains"), configs, events=read("lb_events"),
                                            topic_stats=read("topic_stats"))
        scores[with_writes] = replay_vs_recorded(read("ownership"), layouts, decisions, configs, "lbtest",
                                                 read("broker_reports"), read("lb_events"))
    every, alone = scores[True], scores[False]
    (predicted, confirmed), before = REPLAYED[run]
    assert every["against"] == "logged" and every["moved"] == alone["moved"]
    assert (every["predicted"], every["confirmed"], every["destination_agrees"]) == (predicted, confirmed, confirmed)
    assert every["precision"] >= 0.8 and every["recall"] >= 0.8
    assert every["selections_agree"] >= 0.85 * every["selections"]
    assert alone["confirmed"] == before <= every["confirmed"]


def _synthetic(brokers: int, per: int, minutes: int, seed: int = 7) -> list[dict]:
    """Report writes of a made-up cluster: every 5-10 s a broker, a bundle moving now and then (listed by its old
    and new owner until the old one writes again), broker 0 stopping half-way (its report deleted, its bundles
    taken by the others) and a new broker starting (its report created)."""
    import random

    rnd = random.Random(seed)
    owner = {f"t/n/0x{i:08x}_0x{i + 1:08x}": f"10.0.0.{i % brokers}:8080" for i in range(brokers * per)}
    rate = {b: rnd.uniform(1, 500) for b in owner}
    late = "t/n/0xf0000000_0xffffffff"  # listed from minute 2 on, its stored copy there from the start
    rate[late] = 75.0
    writes, version, end = [], {}, 1_000_000 + minutes * 60_000
    due = {f"10.0.0.{k}:8080": 1_000_000 + rnd.randint(0, 5000) for k in range(brokers)}
    stopped = started = False
    stored_at = 999_000
    while True:
        broker, t = min(due.items(), key=lambda kv: kv[1])
        if t > end:
            return writes
        if t > stored_at:  # the leader stores its copies once a minute (here: made-up values)
            for b in [*owner, late]:
                copy = {"numSamples": 7, "msgRateIn": rnd.uniform(1, 500), "msgRateOut": 1.0,
                        "msgThroughputIn": 100.0, "msgThroughputOut": 90.0}
                writes.append({"zxid": len(writes) + 1, "mtime": stored_at, "path": ls.BUNDLE_DATA + b,
                               "data": {"shortTermData": copy, "longTermData": {**copy, "numSamples": 70}}})
            stored_at += 60_000
        if late not in owner and t > 1_000_000 + 120_000:
            owner[late] = broker
        if not stopped and t > 1_000_000 + minutes * 30_000:  # broker 0 stops
            stopped, gone = True, "10.0.0.0:8080"
            writes.append({"zxid": len(writes) + 1, "mtime": t, "path": ls.BROKERS + gone, "data": None})
            del due[gone]
            for b in [b for b, o in owner.items() if o == gone]:
                owner[b] = rnd.choice(list(due))
            continue
        if stopped and not started and t > 1_000_000 + minutes * 40_000:
            started = True
            due["10.0.0.99:8080"] = t + 1
        if rnd.random() < 0.03:
            owner[rnd.choice(list(owner))] = broker
        stats = {b: {"msgRateIn": rate[b] * rnd.uniform(0.9, 1.1), "msgRateOut": rate[b],
                     "msgThroughputIn": rate[b] * 100, "msgThroughputOut": rate[b] * 90}
                 for b, o in owner.items() if o == broker}
        version[broker] = version.get(broker, -1) + 1
        writes.append({"zxid": len(writes) + 1, "mtime": t, "path": ls.BROKERS + broker, "version": version[broker],
                       "data": {"lastStats": stats}})
        due[broker] = t + rnd.randint(5000, 10000)


@pytest.mark.parametrize("source", ["real-probe", "real-probe-burst", "synthetic"])
def test_the_closed_form_replay_is_the_sample_by_sample_one(source):
    """``bundle_samples.replay`` (a step per write of a bundle's owners) gives what ``leader_samples.replay`` (a
    step per bundle per leader task, which rebuilt every stored copy of the probe records) gives, at every time
    asked: on both probe records (with a split holding the leader's thread, and without) and on a made-up cluster
    with moves, a broker stopping and one starting."""
    from lb_pipeline.simulation import bundle_samples

    writes = ls.read(Path(__file__).parent / "fixtures" / source / "probe.jsonl.gz") if source != "synthetic" \
        else _synthetic(6, 8, 6)
    t0, t1 = min(w["mtime"] for w in writes), max(w["mtime"] for w in writes)
    at = list(range(t0 - 1000, t1 + 2000, 2500))
    for busy in ((), [(t0 + 5000, t0 + 16000)]):
        _, _, want = ls.replay(writes, at=at, busy=busy)
        got = bundle_samples.replay(writes, at=at, busy=busy)
        assert all(set(got[t]) == set(want[t]) for t in at)
        assert sum(len(want[t]) for t in at) > 1000
        for t in at:
            for bundle, windows in want[t].items():
                for w, (n, values) in windows.items():
                    assert got[t][bundle][w][0] == n
                    assert got[t][bundle][w][1] == pytest.approx(values, rel=1e-12)


def test_a_transaction_on_two_lines_refuses_both_whichever_listed_bundles():
    """A copy of a write that lists no bundle, beside the write that lists some, had landed both (the (transaction,
    position) rule cannot see it: the empty copy has no position) and the write was replayed twice."""
    stats = {"msgRateIn": 1.0, "msgRateOut": 2, "msgThroughputIn": 3, "msgThroughputOut": 4}
    lines = [{"zxid": 5, "mtime": 1000, "broker": "h:1", "version": 2, "lastStats": {BUNDLE: stats}},
             {"zxid": 6, "mtime": 1001, "broker": "h:1", "version": 3, "lastStats": {BUNDLE: stats}},
             {"zxid": 5, "mtime": 1000, "broker": "h:1", "version": 2, "lastStats": {}}]
    good, bad = _parse("\n".join(json.dumps(x) for x in lines).encode())
    assert [r["zxid"] for r in good] == [6]
    assert [(q["field"], q["reason"]) for q in bad] == [
        (f"line {n}: zxid", "transaction 5 is on lines 1, 3: a write is one transaction, and which is it cannot be told")
        for n in (1, 3)]
