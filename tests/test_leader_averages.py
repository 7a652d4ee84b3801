"""The leader's per-bundle averages where the simulation agrees with the recorded cluster, and its sampling cadence."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.balancers import make_balancer
from lb_pipeline.simulation.engine import Simulation
from lb_pipeline.simulation.leader_averages import FIELDS, leader_averages, samples_per_minute
from tests.simulated import START, bundle_names, history_and_model

RUNS = Path(__file__).parent / "fixtures" / "real-runs"


def _row(bundle: str, minute: int, n_short: int, n_long: int, value: float) -> dict:
    row = {"bundle": bundle, "snapshot_ts": START + pd.Timedelta(minutes=minute),
           "short_num_samples": n_short, "long_num_samples": n_long}
    for w in ("short", "long"):
        row.update({f"{w}_{f}": value for f in FIELDS})
    return row


def test_the_cadence_is_how_fast_the_stored_sample_counts_grew_full_windows_and_resets_left_out():
    b = bundle_names(4)
    rows = pd.DataFrame([
        *(_row(b[0], m, 10, n, 1.0) for m, n in ((0, 20), (1, 26), (2, 32))),
        *(_row(b[1], m, 10, n, 1.0) for m, n in ((0, 40), (1, 47), (2, 54))),
        *(_row(b[2], m, 10, 1000, 1.0) for m in range(3)),  # a full long window no longer counts
        *(_row(b[3], m, 10, n, 1.0) for m, n in ((0, 300), (1, 2), (2, 9))),  # dropped and started again
    ])
    # per pair of snapshots the median growth: (6, 7) → 6.5, then (6, 7, 7) → 7
    assert samples_per_minute(rows) == pytest.approx((6.5 + 7) / 2)
    assert samples_per_minute(rows[rows["snapshot_ts"] == START]) is None  # one snapshot shows no growth


def test_without_stored_averages_the_cadence_is_the_logged_report_writes_else_one_a_minute():
    h, _ = history_and_model(n_brokers=2, n_bundles=2, snapshots=3, minutes=1)
    writes = [{"kind": "report-written", "event_ts": START + pd.Timedelta(seconds=10 * k)} for k in range(12)]
    other = [{"kind": "unload", "event_ts": START}]
    logged = leader_averages(h, None, writes + other)
    assert logged.per_minute == pytest.approx(12 / 2) and "logged report writes" in logged.note()
    # and the leader's own sample before each time it stores its averages (every minute here, every 15 by default)
    assert leader_averages(h, None, writes + other, None, 1.0).per_minute == pytest.approx(12 / 2 + 1)
    assert leader_averages(h, None, writes + other, None, 15.0).per_minute == pytest.approx(12 / 2 + 1 / 15)
    assert not logged.stored.any() and "default" in logged.note()
    plain = leader_averages(h, None, other)
    assert plain.per_minute == 1.0 and "one a minute" in plain.note()


def test_samples_since_the_leader_wrote_its_averages_are_taken_again_of_the_snapshots_traffic():
    h, _ = history_and_model(n_brokers=2, n_bundles=2, snapshots=3, minutes=1, rate=lambda s, k: 100.0 * (k + 1))
    rows = pd.DataFrame([_row(h.bundles[0], m, 4, 4 + 6 * m, 7.0) for m in range(3)])
    written = {int(h.times[0]): int(h.times[0]) - 30_000}  # 30 s before the first snapshot: 3 samples at 6 a minute
    got = leader_averages(h, rows, None, written)
    assert got.per_minute == 6.0 and got.stored[:, 0].all() and not got.stored[:, 1].any()
    for w in (ta.SHORT_SAMPLES, ta.LONG_SAMPLES):
        n, avg = ta.update_many(np.array([[4 if w == ta.SHORT_SAMPLES else 4]]), np.full((1, 4), 7.0),
                                h.traffic[0][:1], np.array([[3]]), w)
        assert got.samples[w][0, 0] == n[0, 0] and got.values[w][0, 0] == pytest.approx(avg[0])
        assert got.values[w][1, 0] == pytest.approx([7.0] * 4)  # no write time known: as stored


def test_a_bundle_where_pulsar_had_it_takes_the_leaders_averages_one_placed_elsewhere_keeps_its_own():
    h, model = history_and_model(n_brokers=2, n_bundles=2, snapshots=3, minutes=1, owner=lambda s, k: k,
                                 rate=lambda s, k: 100.0)
    rows = pd.DataFrame([_row(b, 1, 10, 37, 3.0) for b in h.bundles])
    leader = leader_averages(h, rows)
    cfg = PulsarConfig()
    sim = Simulation(h, model, cfg, make_balancer("no-balancing", cfg, 0, h), leader=leader)
    steps = sim.cycles()
    sim.step(steps[0][0])
    sim.owner[1] = 0  # the simulation has bundle 1 on broker 0; Pulsar had it on broker 1
    sim.step(steps[1][0])  # at the second snapshot
    short, long_ = sim.averages.avg[ta.SHORT_SAMPLES], sim.averages.avg[ta.LONG_SAMPLES]
    assert short[0] == pytest.approx([3.0] * 4) and long_[0] == pytest.approx([3.0] * 4)
    assert sim.averages.n[ta.LONG_SAMPLES][0] == 37
    assert short[1] == pytest.approx(h.traffic[1][1]) and sim.averages.n[ta.LONG_SAMPLES][1] == 2  # its own: two samples


def _validated(run: str, monkeypatch=None, plain: bool = False) -> dict:
    import lb_pipeline.simulation.real_validation as rv

    if plain:  # every bundle started afresh, one sample a minute: as before the leader's averages were read
        from lb_pipeline.simulation.leader_averages import leader_averages as original  # never the patched one:
        # patched again on each run, taken from ``rv`` it called the run before's twice (2**runs calls)

        def plain_averages(*a):
            got = original(*a)
            return replace(got, stored=got.stored & False, per_minute=1.0)

        monkeypatch.setattr(rv, "leader_averages", plain_averages)
    day = json.loads((RUNS / run / "recording.json").read_text())["traffic"]["startedAt"][:10]
    return rv.validate_simulation(RUNS / run / "landing", day)


def test_every_recorded_leader_samples_several_times_a_minute_and_the_loop_splits_no_bundle_it_did_not(monkeypatch):
    """Each recorded leader sampled its bundles 5 to 12 times a minute (its stored numSamples), not once. Started
    afresh, one sample a minute, the loop split ``lb/ns-a4``'s whole range in most runs, which no leader did: its
    long-term average was its traffic at once, where the leader's still held the minutes before the producers
    started. From the leader's averages it splits at most one bundle Pulsar did not, over every recorded run."""
    from lb_pipeline.simulation.landing import read_history, read_leader
    from lb_pipeline.simulation.history import build_history

    runs = sorted(p.name for p in RUNS.iterdir() if (p / "recording.json").exists())
    assert len(runs) == 16  # docs/validation.md's first eight, the five recorded after them, the three with report writes
    for run in runs:
        day = json.loads((RUNS / run / "recording.json").read_text())["traffic"]["startedAt"][:10]
        cluster, brokers, bundles, *_ = read_history(RUNS / run / "landing", day)
        averages, events, written, quotas = read_leader(RUNS / run / "landing", day, cluster, [])
        got = leader_averages(build_history(cluster, brokers, bundles), averages, events, written, quotas=quotas)
        assert 4.5 < got.per_minute < 12.5 and "stored numSamples" in got.source, run
    now = {run: _validated(run) for run in runs}
    before = {run: _validated(run, monkeypatch, plain=True) for run in runs}
    wrong = lambda r: r["simulated_splits"] - r["matched_splits"]  # noqa: E731
    assert sum(map(wrong, before.values())) >= 5  # measured 6
    assert sum(map(wrong, now.values())) <= 1


@pytest.mark.parametrize("value", ["abc", "NaN", "1e400", "0.5", "2147483648", "", "0", "-5"])
def test_a_quota_interval_pulsar_would_refuse_is_quarantined_and_one_that_never_stores_adds_no_sample(value):
    """The leader's own samples come from ``loadBalancerResourceQuotaUpdateIntervalMinutes``: a value no broker could
    convert never reaches the configuration (its row is quarantined, the default applies), and one that never
    stores (zero, negative) adds none."""
    from lb_pipeline.formats.cluster import parse_config
    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.simulation.leader_averages import own_samples_per_minute, stored_every

    key = "loadBalancerResourceQuotaUpdateIntervalMinutes"
    rows, problems = parse_config({key: value, "loadBalancerSheddingEnabled": "true"}, "config/runtime/b.json")
    if problems:
        assert [p.field for p in problems] == [key] and [r["key"] for r in rows] == ["loadBalancerSheddingEnabled"]
        assert own_samples_per_minute(stored_every(PulsarConfig())) == pytest.approx(1 / 15)
    else:
        assert own_samples_per_minute(stored_every(PulsarConfig({key: value}))) == 0.0
