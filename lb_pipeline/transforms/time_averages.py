"""``silver/bundle_time_averages``: the modular leader's per-bundle short- and long-term averages at each snapshot.

The leader keeps a ``BundleData`` per bundle in memory and updates it with one sample of every bundle each time any
broker rewrites its load report (``handleDataNotification`` → ``updateAll`` → ``updateBundleData``), drops the data
of a bundle no report lists, and writes it to the metadata store only every
``loadBalancerResourceQuotaUpdateIntervalMinutes`` (15 by default). So at a snapshot:

* where the snapshot holds the stored ``BundleData`` (``collect --metadata-store``), that is the leader's state when
  it last wrote it (``bundle_data_written_ms``); the samples it took since, one per report write, are applied to it
  with the snapshot's own bundle stats (``seeded_from`` = ``stored``);
* elsewhere the averages are rebuilt from the bundle's values at the snapshot before, one sample per report write
  in between (``samples_since_previous``), or afresh where no report listed the bundle there or only other brokers
  did (it moved, and the leader dropped its data while no report listed it), as ``getBundleDataOrDefault`` starts
  it: from the bundle's ``ResourceQuota`` where an admin set one (``bronze/resource_quotas``: its rates as both
  averages, with a full window of samples, so the quota weighs 9/10 and 999/1000 after the first sample;
  ``resource-quota``; the samples since the cluster's snapshot before applied to it, as if restarted just after it),
  else from Pulsar's default seed (``default``). At a bundle's first snapshot of the day the
  leader may have held it for long: its first sample stands for its past (``default``), quota or not.

The leader's samples per minute come from the brokers' logs where they were collected (``bronze/lb_events``, kind
``report-written``: every broker's, since any write updates the leader) plus its own sample before each time it
stores its averages, else ``samples_per_minute``. Where both a
rebuild and stored values exist, the rebuild is compared with them (``*_rel_diff``).

Where the snapshots hold every report write since the one before (``bronze/report_writes``), the leader's averages
are not estimated but replayed write by write (``written_averages``; ``seeded_from`` = ``report-writes``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lb_pipeline.algorithms.time_average import FIELDS
from lb_pipeline.simulation.leader_averages import QUOTA_COLUMNS, own_samples_per_minute
from lb_pipeline.transforms.written_averages import COPY, written_averages

SNAPSHOT_KEYS = ["cluster", "snapshot_ts", "snapshot_date"]
TIME_AVERAGE_SCHEMA = (
    "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, samples_since_previous int, "
    "seeded_from string, short_num_samples int, short_msg_rate_in double, short_msg_rate_out double, "
    "short_msg_throughput_in double, short_msg_throughput_out double, long_num_samples int, long_msg_rate_in double, "
    "long_msg_rate_out double, long_msg_throughput_in double, long_msg_throughput_out double, "
    "stored_short_msg_rate double, stored_long_msg_rate double, short_msg_rate_rel_diff double, "
    "long_msg_rate_rel_diff double"
)
TIME_AVERAGE_BUCKETS = 16
# time_average.FIELDS → the ResourceQuota column getBundleDataOrDefault sets it from
QUOTA_FIELDS = dict(zip(FIELDS, QUOTA_COLUMNS))


def leader_cadence(snapshots: DataFrame | None, events: DataFrame | None,
                   stored_every: dict[str, float] | None = None) -> DataFrame | None:
    """Per snapshot: when the stored ``BundleData`` was written, and the leader's samples per minute since the
    snapshot before (null without logs): the report writes the brokers' logs show, and its own sample before each
    time it stores its averages, once every ``stored_every[cluster]`` minutes
    (``loadBalancerResourceQuotaUpdateIntervalMinutes``; every report write is logged: ``leader_samples``)."""
    if snapshots is None:
        return None
    written = (F.col("bundle_data_written_ms") if "bundle_data_written_ms" in snapshots.columns
               else F.lit(None).cast("long"))
    times = snapshots.select("cluster", "snapshot_ts", written.alias("written_ms")).withColumn(
        "previous_ts", F.lag("snapshot_ts").over(Window.partitionBy("cluster").orderBy("snapshot_ts")))
    if events is None:
        return times.withColumn("leader_samples_per_minute", F.lit(None).cast("double")).drop("previous_ts")
    writes = (events.where(F.col("kind") == "report-written").groupBy("cluster", "snapshot_ts")
              .agg(F.count(F.lit(1)).alias("_writes")))
    logged = events.select("cluster", "snapshot_ts").distinct().withColumn("_logged", F.lit(True))
    minutes = (F.unix_millis("snapshot_ts") - F.unix_millis("previous_ts")) / 60000.0
    ticks = F.lit(0.0)
    for cluster, every in (stored_every or {}).items():
        ticks = F.when(F.col("cluster") == F.lit(cluster), F.lit(own_samples_per_minute(every))).otherwise(ticks)
    return (times.join(writes, ["cluster", "snapshot_ts"], "left").join(logged, ["cluster", "snapshot_ts"], "left")
            .withColumn("leader_samples_per_minute",
                        F.when(F.col("_logged") & (minutes > 0), F.coalesce("_writes", F.lit(0)) / minutes + ticks))
            .select("cluster", "snapshot_ts", "written_ms", "leader_samples_per_minute"))


def bundle_time_averages(bundle_reports: DataFrame, bundle_data: DataFrame, samples_per_minute: float = 1.0,
                         snapshots: DataFrame | None = None, events: DataFrame | None = None,
                         stored_every: dict[str, float] | None = None,
                         quotas: DataFrame | None = None, report_writes: DataFrame | None = None) -> DataFrame:
    """The leader's averages per bundle and snapshot (module docstring); ``snapshots`` (``bronze/snapshots``) say
    when the stored ones were written, ``events`` (``bronze/lb_events``) how often the brokers reported,
    ``stored_every`` each cluster's ``loadBalancerResourceQuotaUpdateIntervalMinutes``, ``quotas``
    (``bronze/resource_quotas``) what a bundle the leader starts afresh starts from; ``report_writes``
    (``bronze/report_writes``) every report the brokers wrote, where collected: the leader's averages replayed from
    them replace the estimate at the snapshots that hold them (``written_averages``)."""
    rates = bundle_reports.groupBy(*SNAPSHOT_KEYS, "bundle").agg(
        *[F.max(c).alias(c) for c in ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")],
        (F.concat_ws(" ", F.array_sort(F.collect_set("broker"))) if "broker" in bundle_reports.columns
         else F.lit("")).alias("owners"))
    stored = bundle_data.select(*SNAPSHOT_KEYS, "bundle", *[
        F.col(f"{w}_{c}").alias(f"stored_{w}_{c}") for w in ("short", "long")
        for c in ("num_samples", "msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")])
    joined = rates.join(stored, [*SNAPSHOT_KEYS, "bundle"], "left")
    if quotas is not None:  # ResourceQuota → BundleData: its rates, bandwidths as throughputs
        joined = joined.join(quotas.select(*SNAPSHOT_KEYS, "bundle", *[
            F.col(q).alias(f"quota_{f}") for f, q in QUOTA_FIELDS.items()]), [*SNAPSHOT_KEYS, "bundle"], "left")
    # the cluster's snapshot before each one: a bundle no report listed there was dropped by the leader
    times = rates.select("cluster", "snapshot_ts").distinct().withColumn(
        "cluster_previous_ts", F.lag("snapshot_ts").over(Window.partitionBy("cluster").orderBy("snapshot_ts")))
    joined = joined.join(times, ["cluster", "snapshot_ts"], "left")
    cadence = leader_cadence(snapshots, events, stored_every)
    if cadence is None:
        joined = joined.withColumn("written_ms", F.lit(None).cast("long")).withColumn(
            "leader_samples_per_minute", F.lit(None).cast("double"))
    else:
        joined = joined.join(cadence, ["cluster", "snapshot_ts"], "left")
    # many bundles per group (one group per bundle costs a Python round trip each); a bundle stays in one group
    bucket = F.pmod(F.xxhash64("bundle"), F.lit(TIME_AVERAGE_BUCKETS))
    estimate = joined.withColumn("bucket", bucket).groupBy("cluster", "bucket").applyInPandas(
        lambda pdf: _rebuild_time_averages(pdf, samples_per_minute), TIME_AVERAGE_SCHEMA)
    if report_writes is None or snapshots is None:
        return estimate
    return replayed_where_written(estimate, written_averages(report_writes, bundle_data, snapshots, bundle_reports,
                                                             events))


def replayed_where_written(estimate: DataFrame, written: DataFrame) -> DataFrame:
    """The estimate, with the averages replayed from every report write where the snapshot holds them
    (``seeded_from`` = ``report-writes``); the estimate's comparison with the stored values is kept."""
    values = COPY  # every average column, short and long
    keys = [*SNAPSHOT_KEYS, "bundle"]
    joined = estimate.join(written.select(*keys, F.lit(True).alias("_written"),
                                          *[F.col(c).alias(f"_w_{c}") for c in values]), keys, "left")
    columns = [c.split(" ")[0] for c in TIME_AVERAGE_SCHEMA.split(", ")]
    replaced = {c: F.when(F.col("_written"), F.col(f"_w_{c}")).otherwise(F.col(c)).alias(c) for c in values}
    replaced["seeded_from"] = F.when(F.col("_written"), F.lit("report-writes")).otherwise(F.col("seeded_from")).alias(
        "seeded_from")
    return joined.select(*[replaced.get(c, F.col(c)) for c in columns])


def _rebuild_time_averages(pdf, samples_per_minute: float):
    """applyInPandas body: many bundles' snapshots → the leader's short/long averages, vectorised across bundles.

    Rows are sorted by (bundle, time); step ``s`` updates every bundle's ``s``-th snapshot at once from the row
    before it (the same bundle's previous snapshot), so the Python loop runs once per snapshot of the day, not once
    per bundle and snapshot."""
    import numpy as np
    import pandas as pd

    from lb_pipeline.algorithms.time_average import DEFAULT_SEED, FIELDS, LONG_SAMPLES, SHORT_SAMPLES, update_many

    columns = [c.split(" ")[0] for c in TIME_AVERAGE_SCHEMA.split(", ")]
    if pdf.empty:
        return pd.DataFrame(columns=columns)
    pdf = pdf.sort_values(["bundle", "snapshot_ts"], kind="stable").reset_index(drop=True)
    step = pdf.groupby("bundle", sort=False).cumcount().to_numpy()
    stored = pdf["stored_short_num_samples"].notna().to_numpy()
    before = pdf.groupby("bundle", sort=False)["snapshot_ts"].shift(1)
    minutes = ((pdf["snapshot_ts"] - before).dt.total_seconds() / 60.0).fillna(0.0).to_numpy()
    # listed at the cluster's previous snapshot too (else the leader had dropped it: start afresh)
    # and by a broker that listed it there too: a bundle that moved was dropped while no report listed it
    owners = pdf["owners"].fillna("").str.split()
    kept_by = [not isinstance(b, list) or not a or not b or bool(set(a) & set(b))  # (owners unknown: kept)
               for a, b in zip(owners, owners.groupby(pdf["bundle"], sort=False).shift(1))]
    continued = (before == pdf["cluster_previous_ts"]).to_numpy() & (step > 0) & np.array(kept_by, dtype=bool)
    rate = pdf["leader_samples_per_minute"].astype(float).fillna(samples_per_minute).to_numpy()
    k = np.where(step == 0, 1, np.maximum(1, np.round(minutes * rate))).astype(np.int64)
    since_cluster = ((pdf["snapshot_ts"] - pdf["cluster_previous_ts"]).dt.total_seconds() / 60.0).fillna(0.0).to_numpy()
    k_fresh = np.maximum(1, np.round(since_cluster * rate)).astype(np.int64)
    # the samples the leader took between writing the stored BundleData and the snapshot
    ts_ms = (pdf["snapshot_ts"] - pd.Timestamp(0, tz=pdf["snapshot_ts"].dt.tz)).dt.total_seconds().to_numpy() * 1000
    written = pdf["written_ms"].astype(float).to_numpy()
    since = np.where(np.isnan(written), 0.0, ts_ms - written) / 60000.0
    stale = np.where(stored, np.round(np.clip(since, 0.0, None) * rate), 0).astype(np.int64)
    windows = {"short": SHORT_SAMPLES, "long": LONG_SAMPLES}
    x = {f: pdf[f].to_numpy(dtype=float) for f in FIELDS}
    # where the leader starts a bundle afresh during the day: its ResourceQuota with ample history, else the default
    # seed with none (at a bundle's first snapshot of the day the leader may have held it for long: its first sample)
    quota = ((pdf["quota_msg_rate_in"].notna().to_numpy() & (step > 0)) if "quota_msg_rate_in" in pdf.columns
             else np.zeros(len(pdf), dtype=bool))
    seed = {f: np.where(quota, pdf[f"quota_{f}"].to_numpy(dtype=float), DEFAULT_SEED[f]) if quota.any()
            else np.full(len(pdf), DEFAULT_SEED[f]) for f in FIELDS}
    n = {w: np.zeros(len(pdf), dtype=np.int64) for w in windows}
    avg = {(w, f): np.zeros(len(pdf)) for w in windows for f in FIELDS}
    rebuilt_rate = {w: np.full(len(pdf), np.nan) for w in windows}  # msg rate in + out, where rebuilt
    for s in range(int(step.max()) + 1):
        rows = np.flatnonzero(step == s)
        go_on, here = continued[rows], stored[rows]
        for w, window in windows.items():
            if s:  # from the previous snapshot's, or afresh where the leader had dropped it
                fresh_n = np.where(quota[rows], window, 0)  # getBundleDataOrDefault: a quota's window is full
                n0 = np.where(go_on, n[w][rows - 1], fresh_n)
                start = {f: np.where(go_on, avg[(w, f)][rows - 1], seed[f][rows]) for f in FIELDS}
                # afresh: one sample stands for all (they replace the default seed) but a quota's weight depends on
                # how many: those since the cluster's snapshot before (the earliest restart: the quota's least weight)
                kk = np.where(go_on, k[rows], np.where(quota[rows], k_fresh[rows], 1))
                for f in FIELDS:
                    n[w][rows], avg[(w, f)][rows] = update_many(n0, start[f], x[f][rows], kk, window)
                rebuilt_rate[w][rows] = avg[(w, "msg_rate_in")][rows] + avg[(w, "msg_rate_out")][rows]
            else:  # first sight: the first sample replaces the default seed
                zero = np.zeros(len(rows), np.int64)
                for f in FIELDS:
                    n[w][rows], avg[(w, f)][rows] = update_many(zero, np.full(len(rows), DEFAULT_SEED[f]), x[f][rows],
                                                                k[rows], window)
            if here.any():  # the leader's own values, and the samples it took since it wrote them, win
                sel = rows[here]
                n_stored = pdf[f"stored_{w}_num_samples"].to_numpy()[sel].astype(np.int64)
                for f in FIELDS:
                    kept = pdf[f"stored_{w}_{f}"].to_numpy(dtype=float)[sel]
                    n[w][sel], avg[(w, f)][sel] = update_many(n_stored, kept, x[f][sel], stale[sel], window)
    frame = pd.DataFrame({
        "cluster": pdf["cluster"], "snapshot_ts": pdf["snapshot_ts"], "snapshot_date": pdf["snapshot_date"],
        "bundle": pdf["bundle"], "samples_since_previous": np.where(stored, stale, k),
        "seeded_from": np.where(stored, "stored", np.where(continued, None,
                                                            np.where(quota, "resource-quota", "default"))),
        **{f"{w}_num_samples": n[w] for w in windows},
        **{f"{w}_{f}": avg[(w, f)] for w in windows for f in FIELDS},
    })
    for w in windows:
        leader = frame[f"{w}_msg_rate_in"] + frame[f"{w}_msg_rate_out"]
        frame[f"stored_{w}_msg_rate"] = leader.where(pd.Series(stored))
        rebuilt = pd.Series(rebuilt_rate[w], index=frame.index)
        frame[f"{w}_msg_rate_rel_diff"] = (rebuilt - frame[f"stored_{w}_msg_rate"]).abs() / leader.abs().clip(lower=1e-9)
    for col in ("seeded_from", "stored_short_msg_rate", "stored_long_msg_rate", "short_msg_rate_rel_diff",
                "long_msg_rate_rel_diff"):
        frame[col] = frame[col].astype(object).where(frame[col].notna(), None)
    return frame[columns]
