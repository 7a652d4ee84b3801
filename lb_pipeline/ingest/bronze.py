"""Bronze: snapshot files → flat Delta rows, on Spark.

Each bronze table reads only its own files (``binaryFile`` with a glob), and parses them in the Python workers
with ``mapInPandas``: Pulsar's JSON uses names as object keys, so letting Spark infer a schema would make one
struct field per topic. Every row carries cluster, snapshot timestamp, snapshot date and source file.

Anything that cannot be used goes to ``bronze/quarantine`` with the file, the field, the reason and the raw text:
a bad file never stops the good ones, and nothing is silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

from lb_pipeline.ingest import cluster_parsers as cp
from lb_pipeline.ingest import parsers as p
from lb_pipeline.snapshots.layout import ISOLATION_POLICIES, NAMESPACE_GLOBS, TS_FORMAT, broker_from_file_stem

COMMON = "cluster string, snapshot_ts timestamp, snapshot_date string, source_file string"
QUARANTINE_COLUMNS = "_field string, _reason string, _raw string"
QUARANTINE_SCHEMA = (
    "cluster string, snapshot_ts timestamp, snapshot_date string, source_file string, bronze_table string, "
    "field string, reason string, raw string, raw_truncated boolean"
)
MAX_RAW_BYTES = 1 << 20  # quarantined text kept in the table; the file itself stays in the landing folder
_SNAPSHOT_PATH = re.compile(r"/([^/]+)/(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z)/(.+)$")


@dataclass(frozen=True)
class BronzeTable:
    name: str
    globs: tuple[str, ...]  # relative to a snapshot directory
    schema: str  # table columns after COMMON
    parse: Callable[[object, str], tuple[list[dict], list[p.Problem]]]  # (json, relative path) → rows


def _stem(relative: str) -> str:
    return relative.rsplit("/", 1)[-1][: -len(".json")]


def _between(relative: str, prefix: str) -> str:
    return relative[len(prefix) : -len(".json")]


def _brokers(doc, rel):
    rows, problems, _, _ = p.parse_local_broker_data(doc, broker_from_file_stem(_stem(rel)))
    return rows, problems


def _bundle_reports(doc, rel):
    _, _, rows, problems = p.parse_local_broker_data(doc, broker_from_file_stem(_stem(rel)))
    return rows, problems


def _config(doc, rel):
    if rel == ISOLATION_POLICIES:
        return cp.parse_isolation_policies(doc)
    source = "dynamic" if rel == "config/dynamic.json" else "runtime:" + broker_from_file_stem(_stem(rel))
    return cp.parse_config(doc, source)


_TA = ("num_samples int, max_samples int, msg_rate_in double, msg_rate_out double, msg_throughput_in double, "
       "msg_throughput_out double")
TABLES: dict[str, BronzeTable] = {t.name: t for t in (
    BronzeTable("snapshots", ("manifest.json",),
                "format_version int, snapshot_timestamp_ms long, pulsar_version string, load_manager string, "
                "leader string, brokers array<string>, complete boolean, missing_parts array<string>, tool string",
                lambda doc, rel: cp.parse_manifest(doc)),
    BronzeTable("broker_reports", ("lb/brokers/*.json",),
                "broker string, cpu_usage double, cpu_limit double, memory_usage double, memory_limit double, "
                "direct_memory_usage double, direct_memory_limit double, bandwidth_in_usage double, "
                "bandwidth_in_limit double, bandwidth_out_usage double, bandwidth_out_limit double, "
                "msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double, "
                "num_topics int, num_bundles int, num_consumers int, num_producers int, last_update_ms long, "
                "start_timestamp_ms long, broker_version string, load_manager string, bundles array<string>",
                _brokers),
    BronzeTable("bundle_reports", ("lb/brokers/*.json",),
                "broker string, bundle string, namespace string, bundle_range string, msg_rate_in double, "
                "msg_rate_out double, msg_throughput_in double, msg_throughput_out double, consumer_count int, "
                "producer_count int, topics int, cache_size long",
                _bundle_reports),
    BronzeTable("bundle_data", ("lb/bundle-data/*/*/*.json",),
                "bundle string, namespace string, bundle_range string, topics int, "
                + ", ".join(f"short_{c}" for c in _TA.split(", ")) + ", "
                + ", ".join(f"long_{c}" for c in _TA.split(", ")),
                lambda doc, rel: p.parse_bundle_data(doc, _between(rel, "lb/bundle-data/"))),
    BronzeTable("topic_stats", ("topics/*.json",),
                "broker string, namespace string, bundle_range string, bundle string, topic string, domain string, "
                "msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double, "
                "producer_count int, consumer_count int, subscription_count int, average_msg_size double, "
                "storage_size long, backlog_size long, msg_in_count long, bytes_in_count long",
                lambda doc, rel: p.parse_topic_stats(doc, broker_from_file_stem(_stem(rel)))),
    BronzeTable("ownership", ("ownership/*.json",),
                "broker string, bundle string, namespace string, bundle_range string, assignment string, "
                "is_active boolean",
                lambda doc, rel: p.parse_ownership(doc, broker_from_file_stem(_stem(rel)))),
    BronzeTable("namespaces", NAMESPACE_GLOBS,
                "namespace string, boundaries array<string>, num_bundles int, anti_affinity_group string",
                lambda doc, rel: cp.parse_namespace(doc, _between(rel, "namespaces/"))),
    BronzeTable("config", ("config/dynamic.json", "config/runtime/*.json", ISOLATION_POLICIES),
                "source string, key string, value string", _config),
    BronzeTable("failure_domains", ("cluster/failure-domains.json",), "domain string, broker string",
                lambda doc, rel: cp.parse_failure_domains(doc)),
)}


def locate(path: str) -> tuple[str, datetime, str] | None:
    """``…/<cluster>/<YYYY-MM-DDTHH-MM-SSZ>/<relative>`` → (cluster, snapshot time, relative path)."""
    m = _SNAPSHOT_PATH.search(path)
    if not m:
        return None
    try:
        ts = datetime.strptime(m.group(2), TS_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:  # digits in the right places, but no real time (2026-01-15T25-61-00Z)
        return None
    return m.group(1), ts, m.group(3)


def parse_file(table: BronzeTable, path: str, content: bytes, manifests: dict[str, list[str] | None] | None = None,
               ) -> tuple[list[dict], list[dict]]:
    """Parse one file into (good rows, quarantine rows); never raises for bad input.

    ``manifests`` maps each complete snapshot directory of the day to the brokers its manifest lists; a file of
    another directory (no manifest: incomplete or still being written) is quarantined whole, and rows about a
    broker the manifest does not list are quarantined row by row.
    """
    where = locate(path)
    if where is None:
        return [], [_quarantine(table, path, None, None, "(path)", "expected <cluster>/<YYYY-MM-DDTHH-MM-SSZ>/… in the path", content)]
    cluster, ts, rel = where
    common = {"cluster": cluster, "snapshot_ts": ts, "snapshot_date": ts.strftime("%Y-%m-%d"), "source_file": path}
    snapshot_dir = path[: -len(rel) - 1]
    if manifests is not None and table.name != "snapshots" and manifests.get(snapshot_dir) is None:
        reason = ("the snapshot's manifest.json is itself quarantined" if snapshot_dir in manifests else
                  "the snapshot directory has no manifest.json (incomplete or still being written)")
        return [], [_quarantine(table, path, cluster, ts, "manifest.json", reason, content)]
    try:
        doc = p.load_json(content)
        rows, problems = table.parse(doc, rel)
        if table.name == "snapshots" and rows:
            declared, second = rows[0]["snapshot_timestamp_ms"], int(ts.timestamp() * 1000)
            if declared // 1000 * 1000 != second:  # the directory names the snapshot's second (ms dropped)
                rows, problems = [], [p.Problem("snapshotTimestampMs", f"expected a time within the directory's second "
                                                f"{second}..{second + 999}, got {declared}", whole_file=True)]
    except p.FileProblem as exc:
        rows, problems = [], [exc.problem]
    except p.RowProblem as exc:  # a structural problem at the top of the file
        rows, problems = [], [p.Problem(exc.problem.field, exc.problem.reason, whole_file=True)]
    if manifests is not None and table.name != "snapshots" and rows and "broker" in rows[0]:
        listed = set(manifests[snapshot_dir])
        unknown = [r for r in rows if r["broker"] not in listed]
        if unknown:
            rows = [r for r in rows if r["broker"] in listed]
            problems = problems + [p.Problem("broker", f"expected a broker listed in manifest.json, got {unknown[0]['broker']!r} "
                                            f"({len(unknown)} row(s))", whole_file=not rows)]
    good = [{**common, **r} for r in rows]
    bad = [_quarantine(table, path, cluster, ts, pr.field, pr.reason, content if pr.whole_file or len(content) <= 4096 else None)
           for pr in problems]
    return good, bad


def _table_of(path: str) -> BronzeTable:
    """The bronze table whose globs match a file (for quarantine records of files Spark never read)."""
    import fnmatch

    rel = (locate(path) or (None, None, path))[2]
    return next((t for t in TABLES.values() if any(fnmatch.fnmatch(rel, g) for g in t.globs)), TABLES["snapshots"])


def _quarantine(table, path, cluster, ts, field, reason, content) -> dict:
    raw = None
    truncated = False
    if content is not None:
        truncated = len(content) > MAX_RAW_BYTES
        raw = content[:MAX_RAW_BYTES].decode("utf-8", errors="replace")
    return {"cluster": cluster, "snapshot_ts": ts, "snapshot_date": ts.strftime("%Y-%m-%d") if ts else None,
            "source_file": path, "bronze_table": table.name, "field": field, "reason": reason, "raw": raw,
            "raw_truncated": truncated}


def _parsed_schema(table: BronzeTable) -> str:
    return f"{COMMON}, {table.schema}, {QUARANTINE_COLUMNS}, _qtable string, _truncated boolean"


def _column_names(ddl: str) -> list[str]:
    names, depth, current = [], 0, ""
    for ch in ddl:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(current.strip().split(" ")[0])
            current = ""
        else:
            current += ch
    names.append(current.strip().split(" ")[0])
    return names


def _mapper(table: BronzeTable, manifests: dict[str, list[str]] | None):
    columns = _column_names(_parsed_schema(table))

    def run(batches: Iterator) -> Iterator:
        import pandas as pd

        for batch in batches:
            out = []
            for path, content in zip(batch["path"], batch["content"]):
                good, bad = parse_file(table, path, bytes(content), manifests)
                out.extend(good)
                for q in bad:
                    out.append({"cluster": q["cluster"], "snapshot_ts": q["snapshot_ts"],
                                "snapshot_date": q["snapshot_date"], "source_file": q["source_file"],
                                "_field": q["field"], "_reason": q["reason"], "_raw": q["raw"],
                                "_qtable": q["bronze_table"], "_truncated": q["raw_truncated"]})
            frame = pd.DataFrame(out, columns=columns)
            for col in columns:
                # Missing values must reach Arrow as None: an all-null column would be float64 NaN (unreadable as
                # string) and a NaN inside a list column breaks the array conversion.
                if frame[col].isna().all():
                    frame[col] = pd.Series([None] * len(frame), dtype=object)
                elif frame[col].dtype == object:
                    frame[col] = frame[col].where(frame[col].notna(), None)
            yield frame

    return run


def read_files(spark, landing: str, day: str, globs: tuple[str, ...]):
    """Whole files of one day's snapshots (``path``, ``content``); an empty frame when none match."""
    from pyspark.errors import AnalysisException

    frames = []
    for g in globs:
        try:
            frames.append(spark.read.format("binaryFile").load(f"{landing.rstrip('/')}/*/{day}T*/{g}").select("path", "content"))
        except AnalysisException as exc:  # Spark raises when a glob matches nothing
            if "PATH_NOT_FOUND" not in str(exc) and "Path does not exist" not in str(exc):
                raise
    if not frames:
        return spark.createDataFrame([], "path string, content binary")
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def parse_table(spark, landing: str, day: str, table: BronzeTable, manifests: dict[str, list[str]] | None = None):
    """All rows (good and quarantined) of one bronze table for one day, parsed in the Python workers."""
    return read_files(spark, landing, day, table.globs).mapInPandas(_mapper(table, manifests), _parsed_schema(table))


def list_day(spark, landing: str, day: str, hadoop: bool | None = None) -> tuple[list[str], list[str]]:
    """(empty snapshot directories, zero-length files) of one day, as Spark names paths (``file:/…``).

    Spark's file scans skip zero-length files, so they are found here and quarantined instead of disappearing.
    A local landing folder is listed in Python; other file systems through Hadoop's FileSystem (metadata only;
    each file costs a py4j round trip, ~4 ms, which object-store latency dwarfs but a local disk does not).
    """
    local = _local_path(landing)
    if local is not None and not hadoop:
        return _list_day_local(local, day)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    pattern = jvm.org.apache.hadoop.fs.Path(f"{landing.rstrip('/')}/*/{day}T*")
    fs = pattern.getFileSystem(conf)
    empty_dirs, empty_files = [], []
    for st in fs.globStatus(pattern) or []:
        if not st.isDirectory():
            continue
        files = fs.listFiles(st.getPath(), True)
        seen = False
        while files.hasNext():
            f = files.next()
            seen = True
            if f.getLen() == 0:
                empty_files.append(f.getPath().toString())
        if not seen:
            empty_dirs.append(st.getPath().toString())
    return sorted(empty_dirs), sorted(empty_files)


def _local_path(landing: str) -> str | None:
    """The local folder behind ``/x``, ``file:/x`` or ``file:///x``; None for other schemes (``s3a://…``)."""
    if landing.startswith("file:"):
        return re.sub(r"^file:(//)?", "", landing)
    return None if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", landing) else landing


def _list_day_local(landing: str, day: str) -> tuple[list[str], list[str]]:
    import glob
    import os

    empty_dirs, empty_files = [], []
    for snapshot in glob.glob(os.path.join(glob.escape(os.path.abspath(landing)), "*", f"{day}T*")):
        if not os.path.isdir(snapshot):
            continue
        seen = False
        for root, _dirs, files in os.walk(snapshot):
            for name in files:
                seen = True
                path = os.path.join(root, name)
                if os.path.getsize(path) == 0:
                    empty_files.append(f"file:{path}")
        if not seen:
            empty_dirs.append(f"file:{snapshot}")
    return sorted(empty_dirs), sorted(empty_files)


def good_rows(parsed, table: BronzeTable):
    from pyspark.sql import functions as F

    return parsed.where(F.col("_reason").isNull()).select(*_column_names(f"{COMMON}, {table.schema}"))


def quarantined_rows(parsed):
    from pyspark.sql import functions as F

    return parsed.where(F.col("_reason").isNotNull()).select(
        "cluster", "snapshot_ts", "snapshot_date", "source_file", F.col("_qtable").alias("bronze_table"),
        F.col("_field").alias("field"), F.col("_reason").alias("reason"), F.col("_raw").alias("raw"),
        F.col("_truncated").alias("raw_truncated"),
    )


@dataclass(frozen=True)
class IngestResult:
    day: str
    tables: dict  # table name → WriteResult
    quarantine: object  # WriteResult of bronze/quarantine
    quarantined_by_table: dict[str, int]


def ingest_day(spark, lake, landing: str, day: str, tables: list[str] | None = None,
               log: Callable[[str], None] = lambda _msg: None) -> IngestResult:
    """Rewrite one day's partition of every bronze table (and of ``bronze/quarantine``) from the landing folder.

    Idempotent: the same files give the same partition contents, and a re-run replaces the partition.
    """
    from pyspark.sql import functions as F

    names = tables or list(TABLES)
    snapshots = parse_table(spark, landing, day, TABLES["snapshots"]).persist()
    # One small row per snapshot: complete directories with their brokers; None where the manifest is bad.
    manifests: dict[str, list[str] | None] = {
        r["source_file"][: -len("/manifest.json")]: None if r["_reason"] else list(r["brokers"] or [])
        for r in snapshots.select("source_file", "brokers", "_reason").collect()
    }
    parsed_frames = [snapshots if name == "snapshots" else parse_table(spark, landing, day, TABLES[name], manifests).persist()
                     for name in names]
    if "snapshots" not in names:
        parsed_frames.append(snapshots)  # unpersisted with the others; its quarantine rows are kept
    empty_dirs, empty_files = list_day(spark, landing, day)
    results = {}
    try:
        for name, parsed in zip(names, parsed_frames):  # zip stops before an appended snapshots frame
            results[name] = lake.write_partition(good_rows(parsed, TABLES[name]), "bronze", name, day)
            log(f"bronze/{name}: {results[name].rows} rows")
        quarantine = spark.createDataFrame([], QUARANTINE_SCHEMA)
        for parsed in parsed_frames:
            quarantine = quarantine.unionByName(quarantined_rows(parsed))
        listed = [_quarantine(TABLES["snapshots"], d, *(locate(d + "/x") or (None, None))[:2], "(directory)",
                              "expected a snapshot directory with manifest.json, got an empty directory", None)
                  for d in empty_dirs]
        listed += [_quarantine(_table_of(f), f, *(locate(f) or (None, None))[:2], "(file)",
                               "expected a JSON document, got an empty file", b"") for f in empty_files]
        if listed:
            quarantine = quarantine.unionByName(spark.createDataFrame(listed, QUARANTINE_SCHEMA))
        quarantine = quarantine.withColumn("snapshot_date", F.coalesce("snapshot_date", F.lit(day)))
        q_result = lake.write_partition(quarantine, "bronze", "quarantine", day)
        counts = {name: 0 for name in results}
        if q_result.rows:
            for row in lake.read(spark, "bronze", "quarantine", day).groupBy("bronze_table").count().collect():
                counts[row["bronze_table"]] = row["count"]
    finally:
        for parsed in parsed_frames:
            parsed.unpersist()
    log(f"bronze/quarantine: {q_result.rows} rows")
    return IngestResult(day=day, tables=results, quarantine=q_result, quarantined_by_table=counts)
