"""``gold/capacity_forecast``: per cluster, failure domain and broker, when each resource's daily peak crosses the
overload threshold; headroom when the largest broker or a failure domain is lost; namespaces near their bundle cap.

The input is every snapshot of the look-back window (``silver/broker_usage`` with the limits from the broker
reports): brokers × snapshots, never topics. One pandas group per cluster fits its series (``planning.forecast``).
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.planning.forecast import HORIZON_DAYS, Forecast, forecast
from lb_pipeline.planning.headroom import losses

LOOKBACK_DAYS = 30
# (percent column in silver/broker_usage, limit column in bronze/broker_reports)
RESOURCES = {"cpu": ("cpu_pct", "cpu_limit"), "memory": ("memory_pct", "memory_limit"),
             "direct_memory": ("direct_memory_pct", "direct_memory_limit"),
             "bandwidth_in": ("bandwidth_in_pct", "bandwidth_in_limit"),
             "bandwidth_out": ("bandwidth_out_pct", "bandwidth_out_limit")}
MAX_USAGE = "max_usage"  # the unweighted max usage OverloadShedder compares with the threshold
SCHEMA = (
    "cluster string, snapshot_date string, scope string, subject string, resource string, status string, "
    "method string, history_days int, samples int, current_peak double, p95_daily_peak double, "
    "trend_per_day double, threshold double, days_until_threshold int, days_until_threshold_earliest int, "
    "days_until_threshold_latest int, daily_peaks array<double>, forecast array<double>, "
    "forecast_low array<double>, forecast_high array<double>, lost_brokers array<string>, "
    "usage_after_loss double, headroom double, brokers_to_add int, brokers_to_add_in_30_days int, note string"
)
_COLUMNS = [c.split(" ")[0] for c in SCHEMA.split(", ")]


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


def _row(cluster, day, scope, subject, resource, threshold, f: Forecast | None = None, **values) -> dict:
    row = dict.fromkeys(_COLUMNS)
    row.update(cluster=cluster, snapshot_date=day, scope=scope, subject=subject, resource=resource, threshold=threshold)
    if f is not None:
        row.update(status=f.status, method=f.method, history_days=f.history_days, samples=f.samples,
                   current_peak=f.current_peak, p95_daily_peak=f.p95_daily_peak, trend_per_day=f.trend_per_day,
                   days_until_threshold=f.days_until, days_until_threshold_earliest=f.days_until_earliest,
                   days_until_threshold_latest=f.days_until_latest, daily_peaks=f.daily_peaks, forecast=f.expected,
                   forecast_low=f.low, forecast_high=f.high)
    row.update(values)
    return row


def _series(pdf: pd.DataFrame, value: pd.Series, threshold: float) -> Forecast:
    return forecast(pdf["day_index"].to_numpy(), pdf["hour"].to_numpy(), pdf["dow"].to_numpy(), value.to_numpy(),
                    threshold)


def _pooled(g: pd.DataFrame, resource: str) -> pd.Series:
    """A group's usage of a resource per snapshot: load over capacity (mean of max usage for ``max_usage``)."""
    if resource == MAX_USAGE:
        return g.groupby("snapshot_ts")[MAX_USAGE].mean()
    pct, lim = RESOURCES[resource]
    load = (g[pct] * g[lim]).groupby(g["snapshot_ts"]).sum()
    cap = g[lim].groupby(g["snapshot_ts"]).sum()
    return (load / cap.where(cap > 0)).rename(resource)


def forecast_cluster(pdf: pd.DataFrame, day: str, threshold: float) -> pd.DataFrame:
    """Every forecast and loss row of one cluster's window (``capacity_inputs`` rows)."""
    cluster = str(pdf["cluster"].iloc[0])
    ts = pd.to_datetime(pdf["snapshot_ts"], utc=True)
    first = pd.Timestamp(pdf["snapshot_date"].min(), tz="UTC")
    pdf = pdf.assign(day_index=(ts.dt.normalize() - first).dt.days, hour=ts.dt.hour, dow=ts.dt.dayofweek)
    rows, resources = [], [MAX_USAGE, *RESOURCES]
    for broker, g in pdf.sort_values("snapshot_ts").groupby("broker", sort=True):
        for r in resources:
            rows.append(_row(cluster, day, "broker", broker, r, threshold, _series(g, g[r if r == MAX_USAGE else RESOURCES[r][0]], threshold)))
    times = pdf.drop_duplicates("snapshot_ts").set_index("snapshot_ts")[["day_index", "hour", "dow"]]
    groups = [("cluster", cluster, pdf)] + [("domain", d, g) for d, g in pdf.groupby("domain", sort=True)]
    growth = {}
    for scope, subject, g in groups:
        for r in resources:
            series = _pooled(g, r)
            f = _series(times.loc[series.index], series, threshold)
            rows.append(_row(cluster, day, scope, subject, r, threshold, f))
            if scope == "cluster" and f.status != "not enough history" and f.current_peak > 0:
                growth[r] = max(f.expected[-1] / f.current_peak, 0.0)
    rows += _loss_rows(pdf, cluster, day, threshold, growth)
    return pd.DataFrame(rows, columns=_COLUMNS)


def _loss_rows(pdf: pd.DataFrame, cluster: str, day: str, threshold: float, growth: dict) -> list[dict]:
    """N-1 and failure-domain loss at the last night's busiest snapshot of each resource (and 30 days on). Heap is
    left out: a JVM's heap does not follow the bundles it serves (and Pulsar's max usage ignores it too)."""
    last = pdf[pdf["snapshot_date"] == pdf["snapshot_date"].max()]
    rows = []
    for r, (pct, lim) in RESOURCES.items():
        if r == "memory":
            continue
        load = last[pct] / 100.0 * last[lim]
        if not load.notna().any():  # no broker reported a limit for this resource
            continue
        busiest = load.groupby(last["snapshot_ts"]).sum().idxmax()
        snap = last[last["snapshot_ts"] == busiest].sort_values("broker")
        at = (snap[pct].to_numpy() / 100.0 * snap[lim].to_numpy())
        domains = [d if isinstance(d, str) else None for d in snap["domain"]]
        args = (snap["broker"].tolist(), domains, np.nan_to_num(at), np.nan_to_num(snap[lim].to_numpy()), threshold)
        later = {x.scenario: x for x in losses(*args, growth=growth.get(r, 1.0))} if r in growth else {}
        for x in losses(*args):
            rows.append(_row(cluster, day, "loss", x.scenario, r, threshold, lost_brokers=x.lost,
                             status="ok" if x.headroom >= 0 else "above threshold", method="survivors' capacity",
                             usage_after_loss=x.usage_after, headroom=x.headroom, brokers_to_add=x.brokers_to_add,
                             brokers_to_add_in_30_days=later[x.scenario].brokers_to_add if later else None,
                             note=f"at {busiest:%Y-%m-%d %H:%M} UTC; load spread evenly over the survivors"
                                  + ("" if later else "; no 30-day figure without a forecast")))
    return rows


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
                      config: PulsarConfig | ClusterConfigs) -> DataFrame:
    """``inputs``: ``capacity_inputs`` over the window; ``namespaces``: bronze/namespaces over the window; each
    cluster against the overload threshold and bundle cap of its own configuration (``config``, of ``day``)."""
    configs = ClusterConfigs.of_any(config)

    def own(p: pd.DataFrame) -> PulsarConfig:
        return configs.of(p["cluster"].iloc[0])

    brokers = inputs.groupBy("cluster").applyInPandas(lambda p: forecast_cluster(
        p, day, own(p).get_float("loadBalancerBrokerOverloadedThresholdPercentage")), SCHEMA)
    caps = (namespaces.select("cluster", "namespace", "snapshot_date", "num_bundles").groupBy("cluster")
            .applyInPandas(lambda p: namespace_caps(p, day, own(p).get_int("loadBalancerNamespaceMaximumBundles")),
                           SCHEMA))
    return brokers.unionByName(caps)
