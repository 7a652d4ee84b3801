"""Capacity forecasts on scripted histories whose answer is known: trend, weekly cycle, jumps and outliers, N-1 and
failure-domain loss, namespaces near their bundle cap, and too little history said as such."""

from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.planning.forecast import Reach, forecast
from lb_pipeline.planning.headroom import losses, survive
from lb_pipeline.transforms import capacity

START = datetime(2026, 1, 5, tzinfo=timezone.utc)  # a Monday


def _series(days: int, level=40.0, trend=1.0, daily=10.0, weekend=0.0, noise=0.5, seed=1, per_day=24):
    rng = np.random.default_rng(seed)
    times = [START + timedelta(days=d, hours=h * 24 // per_day) for d in range(days) for h in range(per_day)]
    day = np.array([(t - START).days for t in times])
    hour = np.array([t.hour for t in times])
    dow = np.array([t.weekday() for t in times])
    value = (level + trend * day + daily * np.sin(2 * np.pi * (hour - 9) / 24) - weekend * (dow >= 5)
             + rng.normal(0, noise, len(times)))
    return times, day, hour, dow, value


def test_a_growing_broker_crosses_the_threshold_when_the_trend_says():
    _, day, hour, dow, value = _series(10)
    f = forecast(day, dow, value, threshold=85.0)
    # peak on day d is 40 + d + 10: it reaches 85 on day 35, 26 days after the last recorded day (9)
    assert f.status == "ok" and f.method == "trend of daily peaks"
    assert f.trend_per_day == pytest.approx(1.0, abs=0.05)
    assert f.days_until == pytest.approx(26, abs=1)
    assert f.days_until_earliest <= f.days_until <= f.days_until_latest
    assert len(f.daily_peaks) == 10 and len(f.expected) == 30
    assert all(lo <= e <= hi for lo, e, hi in zip(f.low, f.expected, f.high))


def test_a_flat_broker_never_crosses_and_a_hot_one_already_has():
    _, day, hour, dow, value = _series(7, trend=0.0)
    flat = forecast(day, dow, value, threshold=85.0)
    assert flat.days_until is None and flat.status == "ok"
    hot = forecast(day, dow, value + 40, threshold=85.0)
    assert hot.status == "above threshold" and hot.days_until == 1


def test_uncertainty_widens_with_the_distance_and_with_noise():
    _, day, hour, dow, value = _series(10, noise=0.5)
    calm = forecast(day, dow, value, threshold=85.0)
    _, day, hour, dow, value = _series(10, noise=5.0)
    noisy = forecast(day, dow, value, threshold=85.0)
    width = lambda f: np.array(f.high) - np.array(f.low)  # noqa: E731
    assert (np.diff(width(calm)) > 0).all()
    assert width(noisy)[0] > 3 * width(calm)[0]
    assert noisy.days_until_earliest < calm.days_until_earliest


def test_weekly_seasonality_only_from_two_weeks_on():
    _, day, hour, dow, value = _series(21, trend=0.2, weekend=15.0)
    f = forecast(day, dow, value, threshold=85.0)
    assert f.method == "trend of daily peaks + weekend"
    # day 21 is a Monday: the forecast dips on the weekend that follows (forecast days 6 and 7)
    assert f.expected[5] < f.expected[4] - 10 and f.expected[7] > f.expected[6] + 10
    _, day, hour, dow, value = _series(10, weekend=15.0)
    assert forecast(day, dow, value, threshold=85.0).method == "trend of daily peaks"


def test_one_pinned_day_does_not_tilt_the_trend():
    _, day, hour, dow, value = _series(10, trend=0.5)
    value = np.where(day == 2, value + 60, value)  # one day a single hot bundle pinned the broker
    f = forecast(day, dow, value, threshold=85.0)
    assert f.trend_per_day == pytest.approx(0.5, abs=0.1)
    assert f.expected[0] == pytest.approx(40 + 0.5 * 10 + 10, abs=1.5)  # day 10's peak as if day 2 had been calm


def test_a_series_whose_peaks_jumped_gets_the_band_its_history_earned():
    """The band must hold what the series' own past forecasts missed: a broker whose bundles the balancer moved in
    and out (its daily peak jumping 30 points from one day to the next) cannot get the narrow band of a smooth
    trend, as the fit's residuals alone would give it."""
    _, day, hour, dow, value = _series(12, trend=0.3, noise=0.5)
    smooth = forecast(day, dow, value, threshold=85.0)
    jumps = np.isin(day, [4, 5, 9])
    jumpy = forecast(day, dow, np.where(jumps, value + 30, value), threshold=85.0)
    width = lambda f: np.array(f.high) - np.array(f.low)  # noqa: E731
    assert width(jumpy)[0] > 30 and width(jumpy)[0] > 5 * width(smooth)[0]
    # the smooth series' own past forecasts all fell inside its band, so it was not widened
    assert width(smooth)[0] < 6


def test_the_band_holds_about_nine_of_ten_next_week_peaks_when_whole_days_vary():
    """Six days of hourly samples whose days differ as a whole (traffic that is higher or lower all day, sd 4
    points): the band of the next seven daily peaks holds them about 90 % of the time. Fitted to the samples (as
    if 144 independent points) it held 58 %."""
    inside = total = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        day = np.repeat(np.arange(13), 24)
        hour = np.tile(np.arange(24), 13)
        value = (40 + 0.5 * day + 10 * np.sin(2 * np.pi * (hour - 9) / 24) + rng.normal(0, 4, 13)[day]
                 + rng.normal(0, 1, len(day)))
        known = day < 6
        f = forecast(day[known], day[known] % 7, value[known], threshold=85.0)
        peaks = np.array([value[day == d].max() for d in range(6, 13)])
        inside += int(((np.array(f.low[:7]) <= peaks) & (peaks <= np.array(f.high[:7]))).sum())
        total += 7
    assert 0.8 <= inside / total <= 0.97


def _hopping(days: int, hot_every: int | None) -> pd.DataFrame:
    """Three brokers at about 30 % each night; with ``hot_every``, a hot bundle (60 points) sits on broker-0 or
    broker-1 in turn (``hot_every`` nights each) and broker-2 never gets it."""
    rows = []
    for d in range(days):
        for h in range(0, 24, 6):
            t = START + timedelta(days=d, hours=h)
            for b in range(3):
                hot = hot_every is not None and b == (d // hot_every) % 2
                pct = 30.0 + 0.2 * d + (60.0 if hot else 0.0) + (b - 1) * 0.5
                rows.append({"cluster": "c", "snapshot_ts": t.replace(tzinfo=None),
                             "snapshot_date": t.date().isoformat(), "broker": f"broker-{b}", "max_usage": pct,
                             "domain": f"zone-{b}", **{p: pct for p, _ in capacity.RESOURCES.values()},
                             **{lim: 100.0 for _, lim in capacity.RESOURCES.values()}})
    return pd.DataFrame(rows)


def test_a_brokers_band_reaches_the_peaks_its_peers_had_when_load_hops_between_them():
    """Where the balancer moves a hot bundle between brokers, a broker's own smooth history says nothing of the
    night it gets the bundle: its band (and its failure domain's) reaches the peaks the others had over the last
    nights, clipped to what usage can be, and the row says so. Heap does not move with bundles; the cluster's band,
    whose load stays in it, is its own."""
    out = capacity.forecast_cluster(_hopping(10, hot_every=3), "2026-01-14", 85.0)
    row = lambda scope, subject, r="max_usage": out[(out.scope == scope) & (out.subject == subject)  # noqa: E731
                                                   & (out.resource == r)].iloc[0]
    quiet = row("broker", "broker-2")
    assert max(quiet.daily_peaks) < 35 and min(quiet.forecast_high) >= 88
    assert quiet.days_until_threshold > 200 and quiet.days_until_threshold_earliest == 1  # its own trend: slow
    assert min(quiet.forecast_low) >= 0 and max(quiet.forecast_high) <= 100
    assert "band reaches -1/+60 points" in quiet.note and "brokers' daily peaks" in quiet.note
    assert "over the last 7 night(s)" in quiet.note
    assert min(row("domain", "zone-2").forecast_high) >= 88 and "domains' daily peaks" in row("domain", "zone-2").note
    heap = row("broker", "broker-2", "memory")
    assert max(heap.forecast_high) < 60 and heap.note is None
    assert row("cluster", "c").note is None


def test_a_band_clipped_to_what_usage_can_be_still_holds_its_expected_peak():
    _, day, hour, dow, value = _series(6, level=30.0, trend=-5.0)  # falling towards 0 and past it
    f = forecast(day, dow, value, threshold=85.0, reach=Reach(below=-20.0, above=70.0, top=100.0))
    assert f.reached and min(f.low) >= 0.0 and max(f.high) <= 100.0 and f.expected[-1] == 0.0  # not below nothing
    assert all(lo <= e <= hi for lo, e, hi in zip(f.low, f.expected, f.high))


def test_brokers_whose_peaks_stay_together_keep_a_narrow_band():
    out = capacity.forecast_cluster(_hopping(10, hot_every=None), "2026-01-14", 85.0)
    brokers = out[(out.scope == "broker") & (out.resource == "max_usage")]
    assert len(brokers) == 3
    for _, b in brokers.iterrows():
        assert b.forecast_high[0] - b.forecast_low[0] < 10 and b.days_until_threshold_earliest > 200
        assert b.note is None


def test_too_little_history_is_said_rather_than_extrapolated():
    _, day, hour, dow, value = _series(2)
    f = forecast(day, dow, value, threshold=85.0)
    assert f.status == "not enough history" and f.days_until is None and f.expected == []
    assert f.current_peak == pytest.approx(value[day == 1].max())
    empty = forecast([], [], [], threshold=85.0)
    assert empty.status == "not enough history" and empty.samples == 0


def test_losing_a_broker_puts_its_load_on_the_survivors():
    load, limit = np.array([50.0, 50.0, 50.0]), np.array([100.0, 100.0, 100.0])
    usage, headroom, add = survive(load, limit, np.array([True, False, False]), 85.0)
    assert usage == pytest.approx(75.0) and headroom == pytest.approx(10.0) and add == 0
    usage, headroom, add = survive(load * 1.2, limit, np.array([True, False, False]), 85.0)
    # 180 on 200: 90 %; 180 / 0.85 = 211.8 of capacity needed, one more broker of 100
    assert usage == pytest.approx(90.0) and headroom == pytest.approx(-5.0) and add == 1
    for threshold in (0.0, -10.0):  # every broker with load is overloaded then: no number of brokers is enough
        usage, headroom, add = survive(load, limit, np.array([True, False, False]), threshold)
        assert usage == pytest.approx(75.0) and headroom == pytest.approx(threshold - 75.0) and add is None
    assert survive(load * 0, limit, np.array([True, False, False]), 0.0)[2] == 0


def test_loss_scenarios_are_the_largest_broker_then_each_domain():
    out = losses(["b0", "b1", "b2", "b3"], ["a", "a", "b", "b"], [10, 20, 30, 40], [100, 200, 100, 100], 85.0)
    assert [x.scenario for x in out] == ["largest broker", "domain a", "domain b"]
    assert out[0].lost == ["b1"] and out[0].usage_after == pytest.approx(100 * 100 / 300)
    assert out[1].lost == ["b0", "b1"] and out[1].usage_after == pytest.approx(50.0)
    assert out[1].brokers_to_add == 0 and out[2].usage_after == pytest.approx(100 * 100 / 300)
    assert losses(["b0"], [None], [10], [100], 85.0) == []


def test_a_namespace_splitting_towards_its_cap_is_counted_down():
    ns = pd.DataFrame({"cluster": "c", "namespace": ["t/a"] * 3 + ["t/b"] * 3,
                       "snapshot_date": ["2026-01-05", "2026-01-06", "2026-01-07"] * 2,
                       "num_bundles": [100, 104, 108, 16, 16, 16]})
    rows = capacity.namespace_caps(ns, "2026-01-07", 128).set_index("subject")
    assert rows.loc["t/a", "trend_per_day"] == pytest.approx(4.0)
    assert rows.loc["t/a", "days_until_threshold"] == 5
    assert pd.isna(rows.loc["t/b", "days_until_threshold"]) and rows.loc["t/b", "status"] == "ok"
    one_day = capacity.namespace_caps(ns[ns.snapshot_date == "2026-01-07"], "2026-01-07", 128)
    assert set(one_day["status"]) == {"not enough history"}


def _inputs(days: int) -> pd.DataFrame:
    rows = []
    times, day, hour, dow, value = _series(days, per_day=6)
    for b, (domain, scale) in enumerate([("zone-a", 1.0), ("zone-a", 0.5), ("zone-b", 0.8)]):
        for t, v in zip(times, value):
            pct = v * scale
            rows.append({"cluster": "c", "snapshot_ts": t.replace(tzinfo=None), "snapshot_date": t.date().isoformat(),
                         "broker": f"broker-{b}", "max_usage": pct, "domain": domain,
                         **{p: pct for p, _ in capacity.RESOURCES.values()},
                         **{lim: 100.0 * (b + 1) for _, lim in capacity.RESOURCES.values()}})
    return pd.DataFrame(rows)


def test_a_cluster_gets_broker_domain_cluster_and_loss_rows(spark):
    pdf = _inputs(5)
    df = spark.createDataFrame(pdf.drop(columns=["max_usage"]).assign(max_usage=pdf["max_usage"] / 100.0))
    usage = df.select("cluster", "snapshot_ts", "snapshot_date", "broker", "max_usage",
                      *[p for p, _ in capacity.RESOURCES.values()])
    reports = df.select("cluster", "snapshot_ts", "snapshot_date", "broker", *[lim for _, lim in capacity.RESOURCES.values()])
    domains = df.select("cluster", "snapshot_ts", "snapshot_date", "broker", "domain")
    ns = spark.createDataFrame([("c", "t/a", d, 8) for d in sorted(pdf.snapshot_date.unique())],
                               "cluster string, namespace string, snapshot_date string, num_bundles int")
    day = pdf.snapshot_date.max()
    out = capacity.capacity_forecast(capacity.capacity_inputs(usage, reports, domains), ns, day, PulsarConfig()).toPandas()
    counts = out.groupby("scope").size().to_dict()
    assert counts == {"broker": 18, "domain": 12, "cluster": 6, "loss": 12, "namespace": 1}  # no heap loss rows
    b0 = out[(out.subject == "broker-0") & (out.resource == "max_usage")].iloc[0]
    assert b0.status == "ok" and b0.trend_per_day == pytest.approx(1.0, abs=0.25) and b0.days_until_threshold > 0
    n1 = out[(out.scope == "loss") & (out.subject == "largest broker") & (out.resource == "cpu")].iloc[0]
    assert list(n1.lost_brokers) == ["broker-2"] and n1.usage_after_loss > b0.current_peak * 0.5
    assert (out.snapshot_date == day).all()


def _fleet(days: int, added_on: int | None = None, removed_on: int | None = None) -> pd.DataFrame:
    """A steady load of 120 CPU units a snapshot over brokers of 100: broker-0 and broker-1 throughout, broker-2
    from ``added_on`` (the load then shared by three), broker-1 gone from ``removed_on``."""
    rows = []
    for d in range(days):
        for h in range(0, 24, 4):
            t = START + timedelta(days=d, hours=h)
            live = ["broker-0"] + (["broker-1"] if removed_on is None or d < removed_on else []) \
                + (["broker-2"] if added_on is not None and d >= added_on else [])
            for b in live:
                pct = 120.0 / len(live)
                rows.append({"cluster": "c", "snapshot_ts": t.replace(tzinfo=None), "snapshot_date": t.date().isoformat(),
                             "broker": b, "max_usage": pct, "domain": None,
                             **{p: pct for p, _ in capacity.RESOURCES.values()},
                             **{lim: 100.0 for _, lim in capacity.RESOURCES.values()}})
    return pd.DataFrame(rows)


def test_a_broker_added_is_an_event_the_forecast_reads_the_history_through_not_a_falling_trend():
    out = capacity.forecast_cluster(_fleet(6, added_on=3), "2026-01-10", 85.0)
    cpu = out[(out.scope == "cluster") & (out.resource == "cpu")].iloc[0]
    # 120 units against today's 300 every day: flat; against the capacity of the day it fell from 60 % to 40 %
    assert cpu.trend_per_day == pytest.approx(0.0, abs=1e-6) and cpu.current_peak == pytest.approx(40.0)
    assert "capacity changed in the window: 1 broker(s) added" in cpu.note


def test_a_broker_removed_before_the_last_night_gets_no_forecast_and_the_cluster_says_it_went():
    out = capacity.forecast_cluster(_fleet(6, removed_on=3), "2026-01-10", 85.0)
    assert set(out[out.scope == "broker"].subject) == {"broker-0"}
    cpu = out[(out.scope == "cluster") & (out.resource == "cpu")].iloc[0]
    assert "1 removed (broker-1)" in cpu.note and cpu.current_peak == pytest.approx(120.0)


def test_losses_of_brokers_sharing_a_host_are_marked_as_no_capacity_advice():
    """Brokers on one host each report the host's CPU and NIC: a loss sized from their reports counts one machine
    once per broker on it."""
    pdf = _inputs(5)
    one_host = pdf.assign(broker=pdf["broker"].map({"broker-0": "10.0.0.1:8080", "broker-1": "10.0.0.1:8081",
                                                    "broker-2": "10.0.0.2:8080"}))
    shared = capacity.forecast_cluster(one_host, pdf.snapshot_date.max(), 85.0)
    losses = shared[shared.scope == "loss"]
    assert len(losses) and losses.note.str.contains(
        "not capacity advice: 10.0.0.1:8080, 10.0.0.1:8081 share 10.0.0.1 and each reports the host's usage").all()
    apart = capacity.forecast_cluster(pdf, pdf.snapshot_date.max(), 85.0)
    assert not apart.note.fillna("").str.contains("capacity advice").any()


def test_a_later_night_is_read_against_the_capacity_the_forecast_had():
    """The backtest scores a later night of a resource against the capacity of the forecast's last snapshot, as the
    forecast read its history (a broker removed after it does not make the same load look heavier)."""
    fleet = _fleet(6, removed_on=4)
    before = fleet[fleet.snapshot_date <= "2026-01-08"]
    later = capacity._pooled(fleet, "cpu", set(), reference=before)
    assert later.max() == pytest.approx(60.0)  # 120 units on the 200 the forecast knew, not on the 100 left
    assert capacity._pooled(fleet, "cpu", set()).max() == pytest.approx(120.0)

