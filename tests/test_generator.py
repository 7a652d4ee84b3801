"""The synthetic cluster generator: deterministic, internally consistent, and shaped like a real cluster."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.generate import PRESETS, generate
from lb_pipeline.ingest.validate import validate_snapshot


@pytest.fixture(scope="module")
def day(tmp_path_factory) -> list[Path]:
    return generate(tmp_path_factory.mktemp("gen"), "demo", seed=3)


def _load(snapshot: Path, rel: str):
    return json.loads((snapshot / rel).read_text())


def test_every_generated_snapshot_passes_the_consistency_checker(day):
    assert len(day) == PRESETS["demo"].snapshots
    for snapshot in day:
        assert validate_snapshot(snapshot) == [], snapshot


def test_same_seed_gives_identical_files(tmp_path):
    a = generate(tmp_path / "a", "demo", seed=5, snapshots=2)
    b = generate(tmp_path / "b", "demo", seed=5, snapshots=2)
    c = generate(tmp_path / "c", "demo", seed=6, snapshots=2)
    files = sorted(p.relative_to(a[1]) for p in a[1].rglob("*.json"))
    assert files == sorted(p.relative_to(b[1]) for p in b[1].rglob("*.json"))
    assert all((a[1] / f).read_bytes() == (b[1] / f).read_bytes() for f in files)
    assert (a[1] / "lb/brokers").iterdir() and any(
        (a[1] / f).read_bytes() != (c[1] / f).read_bytes() for f in files if (c[1] / f).exists())


def test_scripted_events_change_the_broker_set(day):
    brokers = [set(_load(s, layout.MANIFEST)["brokers"]) for s in day]
    n = len(day)
    added = brokers[n // 3] - brokers[n // 3 - 1]
    assert len(added) == 1
    (new_broker,) = added
    assert _load(day[n // 3], layout.local_broker_data(new_broker))["numBundles"] == 0
    removed = brokers[2 * n // 3 - 1] - brokers[2 * n // 3]
    assert len(removed) == 1
    events = [e["type"] for s in day for e in _load(s, layout.MANIFEST)["generator"]["events"]]
    assert {"broker-added", "broker-removed", "broker-restarted"} <= set(events)


def test_brokers_are_heterogeneous_and_usage_follows_traffic(day):
    reports = [_load(day[12], f"lb/brokers/{p.name}") for p in (day[12] / "lb/brokers").iterdir()]
    assert len({r["cpu"]["limit"] for r in reports}) > 1
    assert all(r["cpu"]["limit"] % 100 == 0 for r in reports)
    busiest = max(reports, key=lambda r: r["msgRateIn"] + r["msgRateOut"])
    idlest = min(reports, key=lambda r: r["msgRateIn"] + r["msgRateOut"])
    assert busiest["bandwidthOut"]["usage"] > idlest["bandwidthOut"]["usage"]


def test_traffic_follows_a_diurnal_cycle(day):
    def total(s):
        return sum(_load(s, f"lb/brokers/{p.name}")["msgRateIn"] for p in (s / "lb/brokers").iterdir())

    night, afternoon = total(day[3]), total(day[15])
    assert afternoon > 1.3 * night


def test_one_bundle_is_dominated_by_a_single_hot_topic(day):
    topics = [_load(day[0], f"topics/{p.name}") for p in (day[0] / "topics").iterdir()]
    best_share = 0.0
    for doc in topics:
        for bundles in doc.values():
            for domains in bundles.values():
                rates = [t["msgRateIn"] + t["msgRateOut"] for d in domains.values() for t in d.values()]
                if len(rates) >= 2 and sum(rates) > 30_000:
                    best_share = max(best_share, max(rates) / sum(rates))
    assert best_share > 0.8


def test_partitions_are_separate_topics_in_their_own_bundles(day):
    names = [t for p in (day[0] / "topics").iterdir() for b in _load(day[0], f"topics/{p.name}").values()
             for d in b.values() for dom in d.values() for t in dom]
    assert any("-partition-" in n for n in names)


def test_checker_reports_a_topic_under_the_wrong_bundle_and_a_broken_sum(day, tmp_path):
    snap = Path(shutil.copytree(day[0], tmp_path / day[0].parent.name / day[0].name))  # named as ingest reads it
    rel = next(f"topics/{p.name}" for p in (snap / "topics").iterdir() if _load(snap, f"topics/{p.name}"))
    doc = _load(snap, rel)
    ns, bundles = next(iter(doc.items()))
    rng, domains = next(iter(bundles.items()))
    topic = next(iter(domains["persistent"]))
    domains["persistent"][topic]["msgRateIn"] += 1000.0
    (snap / rel).write_text(json.dumps(doc))
    messages = [str(f) for f in validate_snapshot(snap)]
    assert any(topic.split("/")[0] in m or "msg_rate_in" in m for m in messages)
    assert any(f"{ns}/{rng}.msg_rate_in" in m for m in messages)


def test_checker_names_a_truncated_file(day, tmp_path):
    snap = Path(shutil.copytree(day[0], tmp_path / day[0].parent.name / day[0].name))  # named as ingest reads it
    victim = next((snap / "lb/brokers").iterdir())
    victim.write_text(victim.read_text()[:100])
    findings = validate_snapshot(snap)
    assert any(f.file == f"lb/brokers/{victim.name}" and "expected valid JSON" in f.message for f in findings)


def test_checker_names_a_missing_leader_configuration_unless_the_manifest_says_it_is_missing(day, tmp_path):
    snap = Path(shutil.copytree(day[0], tmp_path / day[0].parent.name / day[0].name))  # named as ingest reads it
    manifest = json.loads((snap / "manifest.json").read_text())
    rel = f"config/runtime/{manifest['leader'].replace(':', '_')}.json"
    (snap / rel).unlink()
    assert [(f.file, f.field) for f in validate_snapshot(snap)] == [(rel, "(file)")]
    manifest.update(complete=False, missingParts=[rel])  # the collector could not fetch it, and said so
    (snap / "manifest.json").write_text(json.dumps(manifest))
    assert [f.field for f in validate_snapshot(snap)] == ["complete"]


def test_checker_flags_a_bundle_with_two_owners_but_not_one_without(day, tmp_path):
    snap = Path(shutil.copytree(day[0], tmp_path / day[0].parent.name / day[0].name))  # named as ingest reads it
    owners = [p for p in sorted((snap / "ownership").iterdir()) if json.loads(p.read_text())]
    doc = json.loads(owners[0].read_text())
    dropped = next(iter(doc))
    del doc[dropped]
    owners[0].write_text(json.dumps(doc))
    assert not any(f.field == dropped for f in validate_snapshot(snap))  # Pulsar assigns it on the next lookup
    twice = next(iter(doc))  # still owned by the first broker; now claimed by a second one too
    owners[1].write_text(json.dumps({**json.loads(owners[1].read_text()), twice: doc[twice]}))
    assert any(f.field == twice and "at most one owner" in f.message for f in validate_snapshot(snap))


def test_checker_calls_a_zeroed_load_report_beside_owned_busy_bundles_a_broken_reporter(day, tmp_path):
    """The report says nothing (no bundle, no traffic) while the broker's ownership and topic stats show its bundles
    busy: ingest accepts it, the checker names it (it reported such a snapshot OK before)."""
    snap = Path(shutil.copytree(day[0], tmp_path / day[0].parent.name / day[0].name))
    report = next(p for p in sorted((snap / "lb" / "brokers").iterdir()) if json.loads(p.read_text())["numBundles"])
    doc = json.loads(report.read_text())
    doc.update(lastStats={}, bundles=[], numBundles=0, numTopics=0, msgRateIn=0.0, msgRateOut=0.0,
               msgThroughputIn=0.0, msgThroughputOut=0.0)
    report.write_text(json.dumps(doc))
    (found,) = [f for f in validate_snapshot(snap) if f.field == "lastStats"]
    assert found.file == str(report.relative_to(snap)) and "a broken or stale load reporter" in found.message
    assert found.message.startswith("lists none of the ") and " msg/s, and 0 msg/s" in found.message
    assert not any(f.field == "lastStats" for f in validate_snapshot(day[0]))  # the untouched snapshot


@pytest.mark.parametrize("name, brokers, topics", [("M", 100, 100_000), ("L", 500, 1_000_000)])
def test_large_presets_have_the_documented_size(name, brokers, topics):
    assert (PRESETS[name].brokers, PRESETS[name].topics, PRESETS[name].snapshots) == (brokers, topics, 24)


@pytest.fixture(scope="module")
def fortnight(fortnight_landing) -> list[Path]:
    return fortnight_landing


def _day_totals(snapshots: list[Path]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for s in snapshots:
        for f in (s / "lb/brokers").glob("*.json"):
            totals[s.name[:10]] = totals.get(s.name[:10], 0.0) + json.loads(f.read_text())["msgRateIn"]
    return totals


def test_days_spread_their_snapshots_over_each_day_and_stay_consistent(fortnight):
    assert len(fortnight) == 56
    assert [s.name[11:13] for s in fortnight[:4]] == ["00", "06", "12", "18"]
    assert len({s.name[:10] for s in fortnight}) == 14
    for snapshot in fortnight[::9]:
        assert validate_snapshot(snapshot) == [], snapshot


def test_traffic_grows_from_week_to_week_and_weekends_are_quieter(fortnight):
    totals = _day_totals(fortnight)  # 2026-01-15 is a Thursday: 17-18 and 24-25 are weekends
    days = sorted(totals)
    first_week, second_week = [totals[d] for d in days[:7]], [totals[d] for d in days[7:]]
    assert sum(second_week) > 1.15 * sum(first_week)
    assert totals["2026-01-17"] < 0.85 * totals["2026-01-16"] and totals["2026-01-19"] > totals["2026-01-18"] / 0.85


def test_topics_are_created_over_the_days_and_incidents_are_recorded(fortnight):
    def topics(s: Path) -> int:
        return sum(json.loads(f.read_text())["numTopics"] for f in (s / "lb/brokers").glob("*.json"))

    assert topics(fortnight[-1]) > topics(fortnight[0])
    events = [e for s in fortnight for e in _load(s, layout.MANIFEST)["generator"]["events"]]
    assert any(e.get("incident") for e in events)
    assert {e["type"] for e in events} >= {"broker-added", "broker-removed", "broker-restarted"}


def test_zero_days_is_refused(tmp_path):
    with pytest.raises(ValueError, match="days must be at least 1"):
        generate(tmp_path / "c", "demo", days=0)


def test_the_command_writes_a_denser_day_with_interval_and_refuses_one_it_cannot(tmp_path, capsys):
    """``--snapshots 288`` alone wrote 288 hourly snapshots, twelve days, where the help promised them per day."""
    from lb_pipeline.cli import main

    assert main(["generate", "--out", str(tmp_path), "--snapshots", "3", "--interval", "2", "--quiet"]) == 0
    assert [d.name for d in layout.iter_snapshot_dirs(tmp_path)] == [
        "2026-01-15T00-00-00Z", "2026-01-15T00-02-00Z", "2026-01-15T00-04-00Z"]
    for bad in (["--interval", "0"], ["--interval", "5", "--days", "2"]):
        assert main(["generate", "--out", str(tmp_path / "x"), "--quiet", *bad]) == 2
        assert "--interval takes 1 to 1440 minutes" in capsys.readouterr().err


@pytest.mark.parametrize("cluster, why", [
    ("..", "a cluster name cannot be '..'"), ("", "a cluster name must be a non-empty string"),
    ("east 1", "a cluster name may only hold letters, digits and _ - = : . (Pulsar's NamedEntity rule), got 'east 1'"),
])
def test_the_command_refuses_a_cluster_name_pulsar_refuses_before_force_removes_anything(tmp_path, capsys, cluster, why):
    """``--cluster .. --force`` removed the landing folder's parent; a name ingest reads nothing of wrote a history."""
    from lb_pipeline.cli import main

    landing = tmp_path / "sub" / "landing"
    assert main(["generate", "--out", str(landing), "--snapshots", "1", "--quiet"]) == 0
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["generate", "--out", str(landing), "--snapshots", "1", "--quiet", "--force", "--cluster", cluster]) == 2
    assert capsys.readouterr().err.strip() == f"lb-pipeline: cluster name {cluster!r} refused: {why}"
    assert (tmp_path / "keep.txt").read_text() == "mine" and (landing / "demo-cluster").is_dir()
    assert sorted(p.name for p in landing.iterdir()) == ["demo-cluster"]


def test_an_unknown_balancing_strategy_is_refused_before_force_removes_the_history(tmp_path, capsys):
    """``--force --balance NoShedder`` removed the cluster's snapshots, then raised (a traceback)."""
    from lb_pipeline.cli import main

    landing = tmp_path / "landing"
    assert main(["generate", "--out", str(landing), "--snapshots", "1", "--quiet"]) == 0
    before = sorted(p.name for p in (landing / "demo-cluster").iterdir())
    assert main(["generate", "--out", str(landing), "--snapshots", "2", "--quiet", "--force", "--balance", "NoShedder"]) == 2
    assert "--balance takes a modular strategy" in capsys.readouterr().err
    assert sorted(p.name for p in (landing / "demo-cluster").iterdir()) == before


def test_progress_is_a_line_per_snapshot_when_stderr_is_no_terminal(capsys):
    from pathlib import Path

    from lb_pipeline.snapshots.generate import print_progress

    for done in (1, 2, 3):
        print_progress(done, 3, Path(f"landing/c/s{done}"))
    err = capsys.readouterr().err
    assert "\r" not in err and err.splitlines() == [f"[{d}/3] landing/c/s{d}" for d in (1, 2, 3)]


def _peak_share_of_weakest(c) -> float:
    """The largest share of the weakest broker's CPU one topic needs at the daily peak (the generator's cost model)."""
    from lb_pipeline.snapshots.capacity_model import cpu_points

    weak = int(np.argmin(c.cores * c.speed))
    growth = np.where(c.topic_ns == c.growing_ns, 3.0, 1.0)
    peak = c.base_rate * 1.45 * growth * (1 + c.fanout)
    return float((cpu_points(peak, peak * c.msg_size, c.speed[weak]) / (c.cores[weak] * 100.0)).max())


@pytest.mark.parametrize("name, seed", [("S", 3), ("M", 7)])
def test_without_a_named_scenario_every_topic_fits_the_weakest_broker_at_its_peak(name, seed):
    from lb_pipeline.snapshots.synthetic_cluster import build_cluster

    c = build_cluster(PRESETS[name], seed, 0)
    assert PRESETS[name].scenarios == () and c.hot_topic == -1
    assert _peak_share_of_weakest(c) <= 0.5 + 1e-9


def test_the_hot_topic_scenario_adds_one_topic_no_small_broker_serves_and_says_so(tmp_path):
    from lb_pipeline.snapshots.synthetic_cluster import build_cluster

    assert PRESETS["demo"].scenarios == ("hot-topic",)
    with_it = build_cluster(PRESETS["demo"], 11, 0)
    without = build_cluster(replace(PRESETS["demo"], scenarios=()), 11, 0)
    assert _peak_share_of_weakest(with_it) > 1.0 and _peak_share_of_weakest(without) <= 0.5 + 1e-9
    assert with_it.base_rate[with_it.hot_topic] == 26_000.0
    others = np.arange(len(with_it.base_rate)) != with_it.hot_topic
    assert np.array_equal(with_it.base_rate[others], without.base_rate[others])  # the rest of the day is the same

    (named,) = generate(tmp_path / "a", "demo", seed=11, snapshots=1)
    (plain,) = generate(tmp_path / "b", "demo", seed=11, snapshots=1, scenarios=())
    assert _load(named, "manifest.json")["generator"]["scenarios"] == ["hot-topic"]
    assert _load(plain, "manifest.json")["generator"]["scenarios"] == []
    with pytest.raises(ValueError, match="unknown scenario 'hot'; choose from hot-topic"):
        generate(tmp_path / "c", "demo", snapshots=1, scenarios=("hot",))


def test_the_cap_keeps_the_clusters_traffic_and_the_order_of_the_topics():
    from lb_pipeline.snapshots.capacity_model import servable

    rate = np.r_[20_000.0, 300.0, np.full(198, 100.0), 0.0]
    ones = np.ones(len(rate))
    out = servable(rate, fanout=ones, msg_size=ones * 1024, cores=np.array([4, 16]), speed=np.array([1.0, 1.0]),
                   nic_gbps=np.array([10, 25]))
    assert out.sum() == pytest.approx(rate.sum()) and out[-1] == 0.0
    assert 1_000 < out[0] < 10_000 and out[0] > out[1] > out[2]
    assert out[1] / out[2] == pytest.approx(3.0)  # the uncapped keep their proportions
