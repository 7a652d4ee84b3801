"""The modular leader's bundle averages replayed from every load report the brokers wrote (``bronze/report_writes``,
``collect --every … --metadata-store …``), as the leader took its samples (``simulation.bundle_samples``, the
closed form of ``simulation.leader_samples``): on the probe records the leader's stored copies were rebuilt exactly,
where the estimate from a snapshot a minute cannot follow a moved bundle whose averages the leader restarted from
its new owner's first reports (docs/validation.md).

Per cluster, the writes of the day in the store's order; the leader's stored copies (``bronze/bundle_data``) enter
at the time the snapshot says it wrote them (each batch once, with the leader's own sample before it), those of the
cluster's first snapshot with writes also before every write (what a bundle continues from: the leader held it
before the writes begin). At each snapshot with writes, the averages as they stood after its last write, for the
bundles the snapshot's reports list (``seeded_from`` = ``report-writes``); ``time_averages`` keeps its estimate for
the other snapshots and bundles. Bundles are replayed in ``BUCKETS`` groups a cluster, each with every write's time
(what schedules the leader's samples) and only its own bundles' rows.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.simulation.leader_samples import STATS as _JSON  # time_average.FIELDS → their JSON names
from lb_pipeline.transforms.replay_inputs import kinds

KEYS = ["cluster", "snapshot_ts", "snapshot_date"]
BUCKETS = 16
WRITE = ["broker", "zxid", "write_ms", "version", "deleted"]
STATS = ["bundle", "position", *ta.FIELDS]
COPY = [f"{w}_{c}" for w in ("short", "long") for c in ("num_samples", *ta.FIELDS)]
SCHEMA = ("cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, writes_replayed int, "
          + ", ".join(f"{c} {'int' if c.endswith('num_samples') else 'double'}" for c in COPY))


def written_averages(report_writes: DataFrame, bundle_data: DataFrame, snapshots: DataFrame,
                     bundle_reports: DataFrame, events: DataFrame | None = None) -> DataFrame:
    """Rows of ``SCHEMA`` for each (snapshot with report writes, bundle its reports list); empty without writes.
    ``events`` (``bronze/lb_events``): the leader's split lines, while which its thread was held
    (``leader_samples.busy_from_log``)."""
    bucket = F.pmod(F.xxhash64("bundle"), F.lit(BUCKETS)).cast("int")
    every = report_writes.sparkSession.range(BUCKETS).select(F.col("id").cast("int").alias("bucket"))
    written = (F.col("bundle_data_written_ms") if "bundle_data_written_ms" in snapshots.columns
               else F.lit(None).cast("long"))
    batches = snapshots.select(*KEYS, written.alias("written_ms")).where(F.col("written_ms").isNotNull())
    stored = bundle_data.join(batches, KEYS).select(*KEYS, "bundle", "written_ms", *COPY)
    inputs = dict(
        write=report_writes.select(*KEYS, *WRITE).distinct().crossJoin(every),  # every write, in every bucket
        stats=report_writes.where(F.col("bundle").isNotNull()).select(*KEYS, "zxid", *STATS).withColumn("bucket", bucket),
        stored=stored.withColumn("bucket", bucket), batch=batches.crossJoin(every),
        listed=bundle_reports.select(*KEYS, "bundle").distinct().withColumn("bucket", bucket))
    if events is not None:
        inputs["event"] = (events.where(F.col("kind").startswith("split"))
                           .select(*KEYS, F.col("kind").alias("event"), "event_ts").crossJoin(every))
    return kinds(**inputs).groupBy("cluster", "bucket").applyInPandas(_replay, SCHEMA)


def _replay(pdf: pd.DataFrame) -> pd.DataFrame:
    from lb_pipeline.simulation import bundle_samples
    from lb_pipeline.simulation import leader_samples as ls

    columns = [c.split(" ")[0] for c in SCHEMA.split(", ")]
    writes = pdf[pdf["kind"] == "write"]
    listed = pdf[pdf["kind"] == "listed"]
    if writes.empty or listed.empty:
        return pd.DataFrame(columns=columns)
    per_snapshot = writes.groupby("snapshot_ts")["write_ms"].max()
    first, start = per_snapshot.index.min(), int(writes["write_ms"].min()) - 1
    timeline = _report_events(writes, pdf[pdf["kind"] == "stats"])
    stored, seen = [], set()
    copies_of = dict(tuple(pdf[pdf["kind"] == "stored"].groupby("snapshot_ts")))
    for r in pdf[pdf["kind"] == "batch"].sort_values(["snapshot_ts"]).itertuples(index=False):
        at = start if r.snapshot_ts == first else int(r.written_ms)
        if at in seen:  # a batch two snapshots both hold enters once
            continue
        seen.add(at)
        stored.append({"zxid": -1, "mtime": at, "path": ls.BUNDLE_DATA, "data": None})  # the leader's own sample
        copies = copies_of.get(r.snapshot_ts, pdf.iloc[:0])
        stored += [{"zxid": -1, "mtime": at, "path": ls.BUNDLE_DATA + c.bundle, "data": _copy(c)}
                   for c in copies.itertuples(index=False)]
    logged = pdf[pdf["kind"] == "event"] if "event" in pdf.columns else pdf.iloc[:0]
    busy = ls.busy_from_log([{"kind": r.event, "event_ts": r.event_ts} for r in logged.itertuples(index=False)])
    at = {int(ms) + 1: ts for ts, ms in per_snapshot.items()}
    states = bundle_samples.replay(sorted(stored + timeline, key=lambda e: (e["mtime"], e["zxid"])), at=sorted(at),
                                   busy=busy)
    counts = writes.groupby("snapshot_ts")["zxid"].nunique()
    days = dict(zip(writes["snapshot_ts"], writes["snapshot_date"]))
    rows = []
    for when, ts in at.items():
        state = states[when]
        for bundle in listed.loc[listed["snapshot_ts"] == ts, "bundle"]:
            if bundle not in state:
                continue
            row = {"cluster": pdf["cluster"].iloc[0], "snapshot_ts": ts, "snapshot_date": days[ts], "bundle": bundle,
                   "writes_replayed": int(counts[ts])}
            for w in ("short", "long"):
                n, values = state[bundle][w]
                row[f"{w}_num_samples"] = int(n)
                row.update({f"{w}_{f}": float(x) for f, x in zip(ta.FIELDS, values)})
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _report_events(writes: pd.DataFrame, stats: pd.DataFrame) -> list[dict]:
    """The writes as ``leader_samples`` reads a probe's, one per zxid, with this bucket's bundles in each
    ``lastStats`` in the write's order."""
    from lb_pipeline.simulation.leader_samples import BROKERS

    listed: dict[int, dict] = {}
    for r in stats.sort_values(["zxid", "position"]).itertuples(index=False):
        listed.setdefault(int(r.zxid), {})[r.bundle] = {_JSON[f]: getattr(r, f) for f in ta.FIELDS}
    out = []
    for r in writes.drop_duplicates("zxid").itertuples(index=False):
        write = {"zxid": int(r.zxid), "mtime": int(r.write_ms), "path": BROKERS + r.broker,
                 "version": None if pd.isna(r.version) else int(r.version)}
        write["data"] = None if r.deleted else {"lastStats": listed.get(int(r.zxid), {})}
        out.append(write)
    return out


def _copy(r) -> dict:
    return {f"{w}TermData": {"numSamples": int(getattr(r, f"{w}_num_samples")),
                             **{_JSON[f]: float(getattr(r, f"{w}_{f}")) for f in ta.FIELDS}} for w in ("short", "long")}
