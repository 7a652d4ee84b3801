"""The Delta lake layout (``<root>/<layer>/<table>``) and idempotent per-partition writes.

Every table is partitioned by ``snapshot_date`` (the UTC day of the snapshot). Writing a partition replaces
exactly that partition (Delta ``replaceWhere``), so re-running a night leaves the table's contents as they were.
"""

from __future__ import annotations

import os
import random
import re
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import unquote, urlparse

from lb_pipeline.snapshots.layout import day_problem
from lb_pipeline.spark.read_cache import READS, ROW_PER_TOPIC
from lb_pipeline.spark.watch import seen, written

LAYERS = ("bronze", "silver", "gold")
PARTITION_COLUMN = "snapshot_date"
CONFLICT_ATTEMPTS = 10  # n writers of one slice: the unluckiest can lose n - 1 rounds in a row
BACKOFF_CAP_SECONDS = 4.0
CLOCK_SLACK_MS = 60_000  # the driver's clock against the commit's timestamp (an object store's, say)


def conflict_errors() -> tuple[type[Exception], ...]:
    """Delta's commit-conflict exceptions (each its own class: they share no base class a handler could name)."""
    import delta.exceptions as d

    return (d.DeltaConcurrentModificationException, d.ConcurrentWriteException, d.MetadataChangedException,
            d.ProtocolChangedException, d.ConcurrentAppendException, d.ConcurrentDeleteReadException,
            d.ConcurrentDeleteDeleteException, d.ConcurrentTransactionException)


def _retry_conflicts(write, what: str) -> None:
    """Runs ``write`` again when another writer committed first (Delta's optimistic concurrency): two runs of one
    day (a sensor run and the schedule's) write the same partitions, and ``gold/validation_results`` is shared by
    every suite. The write replaces exactly its slice, so running it again is safe."""
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            return write()
        except conflict_errors() as exc:
            if attempt == CONFLICT_ATTEMPTS - 1:
                raise RuntimeError(f"{what}: gave up after {CONFLICT_ATTEMPTS} concurrent-write conflicts "
                                   f"({type(exc).__name__})") from exc
            time.sleep(min(BACKOFF_CAP_SECONDS, 0.2 * 2 ** attempt) * (1 + random.random()))


def _literal(value: str) -> str:
    """A Spark SQL string literal of ``value``: ``replaceWhere`` is SQL text, and a quote in a value would turn the
    slice a write replaces into another one (``x' OR '1'='1`` replaced every partition)."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _equals(item: tuple[str, str | list[str]]) -> str:
    column, value = item
    if isinstance(value, (list, tuple)):
        return f"{column} IN ({', '.join(map(_literal, value))})" if value else "false"
    return f"{column} = {_literal(value)}"


OUTSIDE = "lb_pipeline: a row outside the slice being written:"
_COMMIT = re.compile(r"\d{20}\.json")  # a commit of the Delta log (not a checkpoint, checksum or compaction)


def _inside(df, slice_: dict):
    """``df`` whose write fails at the first row outside ``slice_`` (column → value or values), naming that row's
    values.

    Delta checks ``replaceWhere`` only against a table that exists, so a first write would land rows of any day.
    Checking the rows in the write's own pass holds every write to its slice, the first one included, with no
    second pass over the data and no empty commit to create the table first."""
    from pyspark.sql import functions as F

    from lb_pipeline.quality.row_rules import sql_name

    # one SQL expression: built from ``F`` functions it was ~40 round trips to the JVM a write
    held = " AND ".join(map(_equals, ((sql_name(c), v) for c, v in slice_.items())))
    found = (f"to_json(named_struct({', '.join(f'{_literal(c)}, {sql_name(c)}' for c in slice_)}), "
             "map('ignoreNullFields', 'false'))")
    refused = f"raise_error(concat({_literal(OUTSIDE + ' ')}, {found}))"
    day = sql_name(PARTITION_COLUMN)
    return df.withColumn(PARTITION_COLUMN, F.expr(f"CASE WHEN {held} THEN {day} ELSE {refused} END"))


def _first_line(exc: Exception) -> str:
    text = str(exc)
    if OUTSIDE in text:
        return "a row with " + text[text.index(OUTSIDE) + len(OUTSIDE):].split(" SQLSTATE")[0].splitlines()[0].strip()
    return "Delta: " + text.strip().splitlines()[0]


@dataclass(frozen=True)
class WriteResult:
    path: str
    rows: int
    version: int
    first_file: str | None = None  # the first data file the write added (absolute), for ``first_rows``
    partition: tuple[tuple[str, str], ...] = ()  # that file's partition values


def first_rows(result: WriteResult, n: int, columns: list[str]):
    """The first ``n`` rows of the first file a write added, as pandas with ``columns`` in order, read on the
    driver with pyarrow; None when the lake is not on a local file system (read the table through Spark then).
    A preview through Spark started 4-5 jobs (the Delta snapshot, the scan, the limit): a night of preset M starts
    38 fewer without them (the snapshot is loaded by the table's next reader instead)."""
    import pyarrow.parquet as pq

    if result.first_file is None or urlparse(result.first_file).scheme not in ("", "file"):
        return None
    with pq.ParquetFile(urlparse(result.first_file).path) as f:  # a batch of n rows: never a whole row group
        batch = next(f.iter_batches(batch_size=n), None)
        pdf = (f.schema_arrow.empty_table() if batch is None else batch).to_pandas()
    for column, value in result.partition:
        pdf[column] = value
    for column in pdf.columns:  # naive UTC, as Spark's toPandas gives them in the session's time zone (UTC)
        if getattr(pdf[column].dtype, "tz", None) is not None:
            pdf[column] = pdf[column].dt.tz_convert("UTC").dt.tz_localize(None)
    return pdf.reindex(columns=columns)


@dataclass(frozen=True)
class Lake:
    root: str

    def path(self, layer: str, table: str) -> str:
        if layer not in LAYERS:
            raise ValueError(f"unknown lake layer {layer!r}; expected one of {', '.join(LAYERS)}")
        return f"{self.root.rstrip('/')}/{layer}/{table}"

    def exists(self, spark, layer: str, table: str) -> bool:
        from delta.tables import DeltaTable

        path = self.path(layer, table)
        seen(path, lambda: _Log(spark, path).newest())
        return DeltaTable.isDeltaTable(spark, path)

    def write_partition(self, df, layer: str, table: str, partition: str, where: dict[str, str] | None = None) -> WriteResult:
        """Replace one ``snapshot_date`` partition of a Delta table with ``df`` (creating the table if needed).

        ``df`` must only hold rows of that partition; the write fails otherwise and commits nothing, which
        protects the other days from a buggy transform. ``where`` narrows the replaced slice further (column →
        value, or → a list of values), for tables that several writers fill (validation results of different
        tables, say).
        """
        path = self.path(layer, table)
        if PARTITION_COLUMN not in df.columns:
            raise ValueError(f"{layer}/{table}: rows need a {PARTITION_COLUMN} column to be written per partition")
        if day_problem(str(partition)):
            raise ValueError(f"{layer}/{table}: {partition!r} is not a partition (YYYY-MM-DD); nothing written")
        slice_ = {PARTITION_COLUMN: partition, **(where or {})}
        token, started_ms = f"lb_pipeline write {uuid.uuid4()}", int(time.time() * 1000) - CLOCK_SLACK_MS
        writer = (
            _inside(df, slice_).write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", " AND ".join(map(_equals, slice_.items())))
            .option("mergeSchema", "true")
            .option("userMetadata", token)  # finds this write's commit in the log (_Log.written)
            .partitionBy(PARTITION_COLUMN)
        )
        try:
            _retry_conflicts(lambda: writer.save(path), f"{layer}/{table}")
        except Exception as exc:
            if OUTSIDE not in str(exc) and "DELTA_REPLACE_WHERE_MISMATCH" not in str(exc):
                raise
            outside = f" or outside {where}" if where else ""
            raise ValueError(f"{layer}/{table}: writing partition {partition} got rows of another partition{outside} "
                             f"({_first_line(exc)})") from None
        written(path, lambda: _Log(df.sparkSession, path).newest())
        # The commit's own metrics give the row count: no second Spark job over the data.
        return _Log(df.sparkSession, path).written(token, started_ms)

    def read(self, spark, layer: str, table: str, partition: str | None = None):
        """The table (its ``partition``): read from Delta once per version of a small table and Spark session,
        then from Spark's cache (``read_cache``)."""
        path = self.path(layer, table)

        def load():
            df = spark.read.format("delta").load(path)
            return df if partition is None else df.where(df[PARTITION_COLUMN] == partition)

        newest = None if (layer, table) in ROW_PER_TOPIC else _Log(spark, path).newest()
        seen(path, lambda: newest if newest is not None else _Log(spark, path).newest())
        if newest is None:
            return load()
        return READS.get((spark.sparkContext.applicationId, path, partition, *newest), load)

    def version(self, spark, layer: str, table: str) -> int:
        path = self.path(layer, table)
        seen(path, lambda: _Log(spark, path).newest())
        return _Log(spark, path).versions()[0]


class _Log:
    """A table's ``_delta_log`` read directly (through Hadoop's file system, so an object store too): its commits
    ``<20 digits>.json``. Delta's ``history()`` gives the same but loads the table and runs a Spark job: 0.2-1 s a
    table where this takes 30 ms, and every write of the night asks."""

    def __init__(self, spark, path: str):
        self.path, self._sc, self._jvm = path, spark.sparkContext, spark.sparkContext._jvm

    # Hadoop's view of the log, made only where the lake is not on the local file system: on a local lake, made for
    # each of a night's ~600 looks at a table, it was 2,800 round trips to the JVM (py4j walks a class name a
    # package at a time), 1.1 s of a warm demo night's driver
    @cached_property
    def _log(self):
        return self._jvm.org.apache.hadoop.fs.Path(f"{self.path.rstrip('/')}/_delta_log")

    @cached_property
    def _fs(self):
        return self._log.getFileSystem(self._sc._jsc.hadoopConfiguration())

    def versions(self) -> list[int]:
        """Every commit's version, newest first. A lake on the local file system is listed by Python: file by file
        through the JVM, a log of a year of nights (365 commits, their checksums and checkpoints) took 4,700 calls
        into it and 1.0-1.3 s each time a table was read or written (8 calls and 6 ms now). Elsewhere (an object
        store) Hadoop lists the commits only (1,485 calls, 0.4 s on that log)."""
        local = self._local()
        if local is not None:
            names = os.listdir(local)
        else:
            pattern = self._jvm.org.apache.hadoop.fs.Path(self._log, "[0-9]" * 20 + ".json")
            names = [st.getPath().getName() for st in self._fs.globStatus(pattern) or []]
        versions = sorted((int(name[:20]) for name in names if _COMMIT.fullmatch(name)), reverse=True)
        if not versions:
            raise ValueError(f"{self.path}: no Delta commit in its _delta_log")
        return versions

    def newest(self) -> tuple[int, int] | None:
        """(version, modification time in ms) of the newest commit; None where there is no log to list."""
        try:
            version = self.versions()[0]
        except Exception:  # noqa: BLE001 - no table there (yet): the plain read says so
            return None
        return self.at(version)

    def at(self, version: int) -> tuple[int, int] | None:
        """(version, modification time in ms) of that commit; None where the log does not hold it."""
        try:
            local, name = self._local(), f"{version:020d}.json"
            if local is not None:
                return version, os.stat(os.path.join(local, name)).st_mtime_ns // 1_000_000
            status = self._fs.getFileStatus(self._jvm.org.apache.hadoop.fs.Path(self._log, name))
            return version, int(status.getModificationTime())
        except Exception:  # noqa: BLE001 - no such commit, or no table
            return None

    def _local(self) -> str | None:
        """The log's folder where the lake is on the local file system."""
        url = urlparse(self.path)
        if url.scheme not in ("", "file"):
            return None
        return os.path.join(url.path if url.scheme else self.path, "_delta_log")  # as Hadoop's Path: not unquoted

    def actions(self, version: int) -> list[dict]:
        import json

        local, name = self._local(), f"{version:020d}.json"
        if local is not None:
            with open(os.path.join(local, name), encoding="utf-8") as f:
                text = f.read()
        else:
            stream = self._fs.open(self._jvm.org.apache.hadoop.fs.Path(self._log, name))
            try:
                text = self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
            finally:
                stream.close()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def written(self, token: str, started_ms: int) -> WriteResult:
        """What the write tagged ``token`` committed: its version and rows. Delta commits nothing for a write that
        adds and removes no file (an empty day written again): then 0 rows at the table's version. Commits of
        other writers that came after are passed over; the walk stops at the first commit older than the write."""
        versions = self.versions()
        for version in versions:
            actions = self.actions(version)
            info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            if info.get("userMetadata") == token:
                add = next((a["add"] for a in actions if "add" in a), None)
                return WriteResult(self.path, int((info.get("operationMetrics") or {}).get("numOutputRows", 0)), version,
                                   add and f"{self.path.rstrip('/')}/{unquote(add['path'])}",  # our writes: relative
                                   tuple(sorted((add or {}).get("partitionValues", {}).items())))
            if info.get("timestamp", 0) < started_ms:
                break
        return WriteResult(self.path, 0, versions[0])
