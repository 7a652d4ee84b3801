"""The floor: a plain PySpark job doing the irreducible work of a night on the same files, as the yardstick
``bench_pipeline.py`` divides the pipeline's time by.

Irreducible: every ``broker-stats topics`` file read once with an explicit schema (Spark's native JSON parser; the
names-as-keys levels are maps), the CRC-32 of every topic checked against the bundle range it is reported under,
per-bundle aggregates per snapshot, broker usage from the load reports, two Delta writes. No validation, no
quarantine, no replays: anything the pipeline does beyond this is what the ratio measures. Files are named per
snapshot folder (no recursive globbing), with the session settings the pipeline uses.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F

from lb_pipeline.ingest.reading import small_files
from lb_pipeline.snapshots.layout import iter_snapshot_dirs

TOPIC = ("struct<msgRateIn:double, msgRateOut:double, msgThroughputIn:double, msgThroughputOut:double, "
         "producerCount:bigint>")
TOPICS_FILE = f"map<string, map<string, map<string, map<string, {TOPIC}>>>>"  # ns → range → domain → topic
USAGE = "struct<usage:double, `limit`:double>"
BROKER_FILE = (f"cpu {USAGE}, memory {USAGE}, directMemory {USAGE}, bandwidthIn {USAGE}, bandwidthOut {USAGE}, "
               "msgRateIn double, msgRateOut double")
_WHERE = r"([^/]+)/(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)/"  # <cluster>/<ts>/ in every file path


def _with_snapshot(df):
    path = F.input_file_name()
    return (df.withColumn("cluster", F.regexp_extract(path, _WHERE, 1))
              .withColumn("snapshot_ts", F.to_timestamp(F.regexp_extract(path, _WHERE, 2), "yyyy-MM-dd'T'HH-mm-ss'Z'"))
              .withColumn("snapshot_date", F.date_format("snapshot_ts", "yyyy-MM-dd")))


def floor_job(spark, landing: str | Path, day: str, out: str | Path) -> dict[str, int]:
    """Run the floor for ``day``; returns the rows of its two tables (reading the landing folder with the split
    planning the pipeline's ingest uses)."""
    with small_files(spark):
        return _floor(spark, landing, day, out)


def _floor(spark, landing, day, out) -> dict[str, int]:
    dirs = [d for d in iter_snapshot_dirs(landing, day)]
    topics = _with_snapshot(spark.read.text([f"file:{d}/topics" for d in dirs], wholetext=True))
    doc = F.from_json("value", TOPICS_FILE)
    rows = (topics.select("cluster", "snapshot_ts", "snapshot_date", F.explode(doc).alias("namespace", "ranges"))
                  .select("*", F.explode("ranges").alias("bundle_range", "domains"))
                  .select("*", F.explode("domains").alias("domain", "topics"))
                  .select("cluster", "snapshot_ts", "snapshot_date", "namespace", "bundle_range",
                          F.explode("topics").alias("topic", "s")))
    bounds = F.split("bundle_range", "_")
    lo, hi = (F.conv(F.substring(bounds[i], 3, 8), 16, 10).cast("bigint") for i in (0, 1))
    h = F.crc32(F.encode("topic", "UTF-8"))
    inside = (h >= lo) & ((h < hi) | ((hi == 0xFFFFFFFF) & (h == hi)))
    bundles = rows.groupBy("cluster", "snapshot_ts", "snapshot_date", "namespace", "bundle_range").agg(
        F.count(F.lit(1)).alias("topics"), F.sum((~inside).cast("int")).alias("misplaced_topics"),
        *(F.sum(f"s.{c}").alias(c) for c in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")),
        F.sum("s.producerCount").alias("producers"))

    reports = _with_snapshot(spark.read.schema(BROKER_FILE).option("multiLine", True)
                             .json([f"file:{d}/lb/brokers" for d in dirs]))
    pct = [F.when(F.col(f"{r}.limit") > 0, F.col(f"{r}.usage") / F.col(f"{r}.limit") * 100)
           for r in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")]
    usage = reports.select("cluster", "snapshot_ts", "snapshot_date", F.input_file_name().alias("file"),
                           F.greatest(*pct).alias("max_usage"), "msgRateIn", "msgRateOut")
    written = {}
    for name, df in (("bundle_stats", bundles), ("broker_usage", usage)):
        path = f"{out}/{name}"
        (df.write.format("delta").mode("overwrite").partitionBy("snapshot_date")
           .option("replaceWhere", f"snapshot_date = '{day}'").save(path))
        written[name] = spark.read.format("delta").load(path).where(F.col("snapshot_date") == day).count()
    return written
