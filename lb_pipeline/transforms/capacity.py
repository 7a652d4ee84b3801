"""``gold/capacity_forecast``: per cluster, failure domain and broker, when each resource's daily peak crosses the
overload threshold; headroom when the largest broker or a failure domain is lost; namespaces near their bundle cap.

The input is every snapshot of the look-back window (``silver/broker_usage`` with the limits from the broker
reports): brokers × snapshots, never topics; for the losses, the last night's bundles (``silver/bundle_stats``) and
load model (``gold/load_model``) too. One pandas group per cluster fits its series (``planning.forecast``) and
sizes its losses (``capacity_loss``); ``capacity_rows`` holds the table's schema.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.planning.forecast import HORIZON_DAYS, PEER_NIGHTS, Forecast, Reach, forecast
from lb_pipeline.transforms.capacity_loss import loss_rows
from lb_pipeline.transforms.capacity_rows import (
    _COLUMNS, MAX_USAGE, MOVES_WITH_BUNDLES, RESOURCES, SCHEMA, row as _row)

LOOKBACK_DAYS = 30


def window(df: DataFrame, day: str, days: int = LOOKBACK_DAYS) -> DataFrame:
    """The rows of the ``days`` nights up to and including ``day`` (a re-run of an old night ignores later ones)."""
    first = (date.fromisoformat(day) - timedelta(days=days - 1)).isoformat()
    return df.where(F.col("snapshot_date").between(first, day))


def capacity_inputs(broker_usage: DataFrame, broker_reports: DataFrame, failure_domains: DataFrame) -> DataFrame:
    """Per snapshot and broker: percent usage of each resource, its limit, and the broker's failure domain."""
    keys = ["cluster", "snapshot_ts", "snapshot_date", "broker"]
    usage = broker_usage.select(*keys, (F.col(MAX_USAGE) * 100.0).alias(MAX_USAGE), *[p for p, _ in RESOURCES.values()])
    limits = broker_reports.select(*keys, *[lim for _, lim in RESOURCES.values()])
    domains = failure_domains.groupBy(*keys).agg(F.min("domain").alias("domain"))
    return usage.join(limits, keys, "left").join(domains, keys, "left")


def _series(pdf: pd.DataFrame, value: pd.Series, threshold: float, reach: Reach | None = None) -> Forecast:
    return forecast(pdf["day_index"].to_numpy(), pdf["dow"].to_numpy(), value.to_numpy(), threshold, reach=reach)


def _pooled(g: pd.DataFrame, resource: str, now: set, reference: pd.DataFrame | None = None) -> pd.Series:
    """A group's usage of a resource per snapshot against the capacity it has now (``now``: the brokers of its last
    snapshot): the load over today's capacity, so that a broker added or removed is an event the forecast reads the
    history through, not a trend (for ``max_usage``: the mean over today's brokers). ``reference``: the rows whose
    last snapshot holds that capacity, when not ``g``'s own (a backtest scoring later nights)."""
    if resource == MAX_USAGE:
        return g[g["broker"].isin(now)].groupby("snapshot_ts")[MAX_USAGE].mean()
    pct, lim = RESOURCES[resource]
    load = (g[pct] * g[lim]).groupby(g["snapshot_ts"]).sum()
    reference = g if reference is None else reference
    last = reference[reference["snapshot_ts"] == reference["snapshot_ts"].max()]
    cap = float(last[lim].sum())
    return (load / cap if cap > 0 else load * np.nan).rename(resource)


def _nightly_peaks(series: dict, days: pd.Series) -> pd.DataFrame:
    """Per subject (column), its daily peaks over the window's last ``PEER_NIGHTS`` nights (``days``: the snapshot
    date of each time stamp)."""
    last = sorted(days.unique())[-PEER_NIGHTS:]
    return pd.DataFrame({k: s.groupby(days.reindex(s.index).to_numpy()).max().reindex(last) for k, s in series.items()},
                        index=last)


def _reach(peaks: pd.DataFrame, subject) -> Reach | None:
    """The peers' reach of one subject (``planning.forecast.Reach``) from ``_nightly_peaks``."""
    own = peaks[subject].to_numpy(float)
    return Reach.of(own, peaks.drop(columns=[subject]).to_numpy(float).T) if peaks.shape[1] > 1 else None


def reach_note(scope: str, reach: Reach, nights: int) -> str:
    return (f"band reaches {reach.below:+.0f}/{reach.above:+.0f} points, how far the other {scope}s' daily peaks "
            f"stood from this one's over the last {nights} night(s): load the balancer moves can land here or leave")


def capacity_events(g: pd.DataFrame) -> str | None:
    """What changed in a group's brokers over the window, for the forecast's note: brokers added and removed."""
    first, last = g["snapshot_ts"].min(), g["snapshot_ts"].max()
    before, now = set(g.loc[g["snapshot_ts"] == first, "broker"]), set(g.loc[g["snapshot_ts"] == last, "broker"])
    if before == now:
        return None
    parts = [f"{len(now - before)} broker(s) added" if now - before else "",
             f"{len(before - now)} removed ({', '.join(sorted(before - now)[:3])})" if before - now else ""]
    return (f"capacity changed in the window: {' and '.join(p for p in parts if p)}; the load before is read against "
            "today's capacity")


BUNDLE_COLUMNS = ["owner_broker", "bundle", "msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out",
                  "topics", "hottest_topic_share"]
MODEL_COLUMNS = ["broker", "resource", "intercept", "coef_rate", "coef_tput_in", "coef_tput_out", "residual_std"]


def forecast_cluster(pdf: pd.DataFrame, day: str, threshold: float) -> pd.DataFrame:
    """Every forecast and loss row of one cluster's window (``capacity_inputs`` rows; with ``kind`` "bundle" and
    "model" rows too, the night's ``silver/bundle_stats`` and ``gold/load_model``, the losses are sized bundle by
    bundle on demand: ``bundle_loss``)."""
    # one order whatever order Spark's plan gave the rows in: the forecasts sum them
    pdf = pdf.sort_values([c for c in ("kind", "snapshot_ts", "broker", "owner_broker", "bundle", "resource")
                           if c in pdf.columns], kind="stable", ignore_index=True)
    bundles = models = None
    if "kind" in pdf:
        bundles, models = pdf[pdf["kind"] == "bundle"], pdf[pdf["kind"] == "model"]
        pdf = pdf[pdf["kind"] == "broker"]
        if pdf.empty:  # bundles or a model of a cluster no broker row of the window has
            return pd.DataFrame([], columns=_COLUMNS)
    cluster = str(pdf["cluster"].iloc[0])
    ts = pd.to_datetime(pdf["snapshot_ts"], utc=True)
    first = pd.Timestamp(pdf["snapshot_date"].min(), tz="UTC")
    pdf = pdf.assign(day_index=(ts.dt.normalize() - first).dt.days, dow=ts.dt.dayofweek)
    rows, resources = [], [MAX_USAGE, *RESOURCES]
    tonight = set(pdf.loc[pdf["snapshot_date"] == pdf["snapshot_date"].max(), "broker"])
    stamps = pdf.drop_duplicates("snapshot_ts").set_index("snapshot_ts")
    dates, times = stamps["snapshot_date"], stamps[["day_index", "dow"]]
    brokers = [(b, g.set_index("snapshot_ts")) for b, g in pdf.sort_values("snapshot_ts").groupby("broker", sort=True)]
    for r in resources:
        column = r if r == MAX_USAGE else RESOURCES[r][0]
        peaks = _nightly_peaks({b: g[column] for b, g in brokers}, dates) if r in MOVES_WITH_BUNDLES else None
        for broker, g in brokers:
            if broker not in tonight:  # removed before the last night: no forecast for a broker that is gone
                continue
            reach = _reach(peaks, broker) if peaks is not None else None
            f = _series(g, g[column], threshold, reach)
            rows.append(_row(cluster, day, "broker", broker, r, threshold, f,
                             note=reach_note("broker", reach, len(peaks)) if f.reached else None))
    domains = [(d, g, set(g.loc[g["snapshot_ts"] == g["snapshot_ts"].max(), "broker"]))
               for d, g in pdf.groupby("domain", sort=True)]
    growth = {}
    now = set(pdf.loc[pdf["snapshot_ts"] == pdf["snapshot_ts"].max(), "broker"])
    for r in resources:
        pooled = {d: _pooled(g, r, members).dropna() for d, g, members in domains}
        peaks = _nightly_peaks(pooled, dates) if len(domains) > 1 and r in MOVES_WITH_BUNDLES else None
        groups = [("cluster", cluster, pdf, _pooled(pdf, r, now).dropna(), None)] + \
            [("domain", d, g, pooled[d], _reach(peaks, d) if peaks is not None else None) for d, g, _ in domains]
        for scope, subject, g, series, peers in groups:
            f = _series(times.loc[series.index], series, threshold, peers)
            note = "; ".join(n for n in (capacity_events(g), reach_note(scope, peers, len(peaks)) if f.reached else None) if n)
            rows.append(_row(cluster, day, scope, subject, r, threshold, f, note=note or None))
            if scope == "cluster" and f.status != "not enough history" and f.current_peak > 0:
                growth[r] = max(f.expected[-1] / f.current_peak, 0.0)
    rows += loss_rows(pdf, cluster, day, threshold, growth, bundles, models)
    return pd.DataFrame(rows, columns=_COLUMNS)


def namespace_caps(namespaces: pd.DataFrame, day: str, max_bundles: int) -> pd.DataFrame:
    """Per namespace: bundles now, bundles added per day over the window, days until
    ``loadBalancerNamespaceMaximumBundles`` at that rate."""
    rows = []
    per_day = namespaces.groupby(["cluster", "namespace", "snapshot_date"])["num_bundles"].max().reset_index()
    for (cluster, ns), g in per_day.sort_values("snapshot_date").groupby(["cluster", "namespace"], sort=True):
        counts = g["num_bundles"].to_numpy(float)
        n_days = (date.fromisoformat(g["snapshot_date"].iloc[-1]) - date.fromisoformat(g["snapshot_date"].iloc[0])).days
        rate = (counts[-1] - counts[0]) / n_days if n_days else None
        left = max_bundles - counts[-1]
        until = 0 if left <= 0 else (int(np.ceil(left / rate)) if rate and rate > 0 else None)
        until = until if until is None or until <= HORIZON_DAYS else None  # as for usage: within a year or never
        status = "not enough history" if not n_days else ("above threshold" if left <= 0 else "ok")
        rows.append(_row(cluster, day, "namespace", ns, "bundles", float(max_bundles), status=status,
                         method="split rate" if n_days else "count", history_days=len(g), samples=len(g),
                         current_peak=counts[-1], p95_daily_peak=float(counts.max()), trend_per_day=rate,
                         days_until_threshold=until, daily_peaks=counts.tolist()))
    return pd.DataFrame(rows, columns=_COLUMNS)


def capacity_forecast(inputs: DataFrame, namespaces: DataFrame, day: str,
                      config: PulsarConfig | ClusterConfigs, bundles: DataFrame | None = None,
                      model: DataFrame | None = None) -> DataFrame:
    """``inputs``: ``capacity_inputs`` over the window; ``namespaces``: bronze/namespaces over the window; each
    cluster against the overload threshold and bundle cap of its own configuration (``config``, of ``day``).
    ``bundles`` (``silver/bundle_stats``) and ``model`` (``gold/load_model``) of ``day``: the losses sized bundle by
    bundle on demand (without them, the load spread evenly over the survivors)."""
    configs = ClusterConfigs.of_any(config)

    def own(p: pd.DataFrame) -> PulsarConfig:
        return configs.of(p["cluster"].iloc[0])

    if bundles is not None and model is not None:
        inputs = (inputs.withColumn("kind", F.lit("broker"))
                  .unionByName(bundles.where(F.col("snapshot_date") == day)
                               .select("cluster", "snapshot_ts", "snapshot_date", *BUNDLE_COLUMNS)
                               .withColumn("kind", F.lit("bundle")), allowMissingColumns=True)
                  .unionByName(model.where(F.col("snapshot_date") == day).select("cluster", *MODEL_COLUMNS)
                               .withColumn("kind", F.lit("model")), allowMissingColumns=True))
    brokers = inputs.groupBy("cluster").applyInPandas(lambda p: forecast_cluster(
        p, day, own(p).get_float("loadBalancerBrokerOverloadedThresholdPercentage")), SCHEMA)
    caps = (namespaces.select("cluster", "namespace", "snapshot_date", "num_bundles").groupBy("cluster")
            .applyInPandas(lambda p: namespace_caps(p, day, own(p).get_int("loadBalancerNamespaceMaximumBundles")),
                           SCHEMA))
    return brokers.unionByName(caps)
