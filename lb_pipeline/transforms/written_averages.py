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
    from lb_pipeline.simulation.written_replay import replay

    return replay(pdf, [c.split(" ")[0] for c in SCHEMA.split(", ")])
