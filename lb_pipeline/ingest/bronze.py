"""Bronze: snapshot files → flat Delta rows, on Spark.

Each bronze table reads only its own files (the paths ``landing.list_day`` lists, read by ``reading.read_files``),
and parses them in the Python workers with ``mapInArrow``: Pulsar's JSON uses names as object keys, so letting Spark
infer a schema would make one struct field per topic. Every row carries cluster, snapshot timestamp, snapshot
date and source file (``tables.py``).

Anything that cannot be used goes to ``bronze/quarantine`` with the file, the field, the reason and the raw text:
a bad file never stops the good ones, and nothing is silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lb_pipeline.formats import values as p
from lb_pipeline.ingest import moved_topics
from lb_pipeline.ingest.files import listing_quarantine, parse_file, refused_row
from lb_pipeline.ingest.landing import list_day
from lb_pipeline.ingest.reading import read_files, read_listed, small_files, task_count
from lb_pipeline.ingest.moved_topics import LEFT_OUT
from lb_pipeline.ingest.tables import COMMON, TABLES, BronzeTable
from lb_pipeline.workers import collector_paused

QUARANTINE_COLUMNS = "_field string, _reason string, _raw string"
QUARANTINE_SCHEMA = (
    "cluster string, snapshot_ts timestamp, snapshot_date string, source_file string, bronze_table string, "
    "field string, reason string, raw string, raw_truncated boolean"
)
ROWS_PER_BATCH = 50_000  # parsed rows per Arrow batch the mapper hands back


def _parsed_schema(tables: list[BronzeTable]) -> str:
    """The mapper's rows: the common columns, every column of the tables (one file family), the quarantine's."""
    columns = {}
    for table in tables:
        columns.update(_definitions(table.schema))
    return ", ".join([COMMON, *columns.values(), QUARANTINE_COLUMNS, "_qtable string, _truncated boolean, _table string"])


def _definitions(ddl: str) -> dict[str, str]:
    """Column name → its definition, for a DDL list of columns (commas inside ``<…>`` belong to types)."""
    out, depth, current = {}, 0, ""
    for ch in ddl + ",":
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            out[current.strip().split(" ")[0]] = current.strip()
            current = ""
        else:
            current += ch
    return out


def _column_names(ddl: str) -> list[str]:
    return list(_definitions(ddl))


def _table_columns(table: BronzeTable) -> list[str]:
    return _column_names(f"{COMMON}, {table.schema}")


def _mapper(tables: list[BronzeTable], manifests: dict[str, list[str]] | None, schema, root: str | None = None):
    """The Python side of ``parse_family``: Arrow batches of (path, content) → Arrow batches of parsed rows, built
    straight from the row dicts (a pandas frame in between had cost a tenth of the parse). A local file comes
    without its content, and is read here (``reading.read_listed``)."""
    # read on the driver: the workers may have started before
    max_depth, limit, hard_links = p.max_json_depth(), p.max_file_bytes(), p.hard_links_read()

    def rows_of(path: str, content: bytes | None, listed: str | None) -> list[dict]:
        out, memo = [], {}  # one JSON parse per file for all the tables it feeds
        if content is None:
            try:
                content = read_listed(path, limit, hard_links, root, listed)
            except ValueError as exc:  # changed since the listing
                return [{**_flat(refused_row(t, path, "(file)", str(exc), root=root)), "_table": t.name} for t in tables]
        for table in tables:
            good, bad = parse_file(table, path, content, manifests, max_depth, memo, root)
            for row in good:
                row["_table"] = table.name
            out.extend(good)
            out.extend({**_flat(q), "_table": table.name} for q in bad)
        return out

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        for batch in batches:
            rows, columns = [], batch.schema.names
            listed = batch.column("listed").to_pylist() if "listed" in columns else [None] * batch.num_rows
            for path, content, known in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist(),
                                            listed):
                with collector_paused():  # documents and rows hold no reference cycles (workers.py)
                    rows.extend(rows_of(path, content, known))
                if len(rows) >= ROWS_PER_BATCH:  # a task's files can hold millions of rows: hand them on as they come
                    yield pa.RecordBatch.from_pylist(rows, schema=schema)
                    rows = []
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return run


def _flat(q: dict) -> dict:
    """A quarantine row as the mapper's columns."""
    return {"cluster": q["cluster"], "snapshot_ts": q["snapshot_ts"], "snapshot_date": q["snapshot_date"],
            "source_file": q["source_file"], "_field": q["field"], "_reason": q["reason"], "_raw": q["raw"],
            "_qtable": q["bronze_table"], "_truncated": q["raw_truncated"]}


def parse_family(spark, paths: list[str], tables: list[BronzeTable], manifests: dict[str, list[str]] | None = None,
                 sizes: dict[str, int] | None = None, root: str | None = None, ids: dict[str, str] | None = None):
    """All rows (good and quarantined, ``_table`` saying whose) of the bronze tables fed by the same files, for
    one day: each file read and parsed once, in the Python workers."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    ddl = _parsed_schema(tables)
    schema = to_arrow_schema(StructType.fromDDL(ddl), timezone=spark.conf.get("spark.sql.session.timeZone"))
    return read_files(spark, paths, sizes, ids).mapInArrow(_mapper(tables, manifests, schema, root), ddl)


def checked_table(parsed, table: BronzeTable):
    """One table's rows of ``parse_family`` with the critical row rules marked on its good rows
    (``row_rules.mark``): one frame that gives both the table's rows and its quarantine, so that neither the
    parse nor the rules run twice."""
    from pyspark.sql import functions as F

    from lb_pipeline.quality import row_rules

    mine = parsed.where(F.col("_table") == table.name).select(*_column_names(_parsed_schema([table])))
    return row_rules.mark(table.name, mine, F.col("_reason").isNull())


def good_rows(marked, table: BronzeTable):
    from pyspark.sql import functions as F

    return (marked.where(F.col("_reason").isNull() & F.col("_rule").isNull())
                  .select(*_table_columns(table)))


def quarantined_rows(marked, table: BronzeTable):
    """What the parser refused (file, field, reason, raw text) and the parsed rows that break a row rule."""
    from pyspark.sql import functions as F

    from lb_pipeline.quality import row_rules

    parsed = marked.where(F.col("_reason").isNotNull()).select(
        "cluster", "snapshot_ts", "snapshot_date", "source_file", F.col("_qtable").alias("bronze_table"),
        F.col("_field").alias("field"), F.col("_reason").alias("reason"), F.col("_raw").alias("raw"),
        F.col("_truncated").alias("raw_truncated"),
    )
    ruled = marked.where(F.col("_reason").isNull() & F.col("_rule").isNotNull() & (F.col("_rule") != LEFT_OUT))
    return parsed.unionByName(row_rules.rejected(ruled, table.name, _table_columns(table)))


def _write_concurrently(lake, frames: dict, chains: list[list[str]], day: str, log, threads: int = 2) -> dict:
    """Write ``frames`` (table → rows) to their bronze tables: the tables of a chain one after the other, two
    chains at a time, in the order given. One table at a time left the cores idle while the driver planned and
    committed, and through each table's last tasks: M's bronze alone took 95 s one at a time, 85 s two at a time
    (3 and 4 at a time gave no more; within a whole night, on a warm JVM, 78 s → 75 s). Stops starting chains at
    the first failure, and raises it once the running ones are done."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    def write(chain):
        return {name: lake.write_partition(frames[name], "bronze", name, day) for name in chain}

    results = {}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bronze-write") as pool:
        futures = [pool.submit(write, chain) for chain in chains]
        try:
            for future in as_completed(futures):
                for name, result in future.result().items():
                    results[name] = result
                    log(f"bronze/{name}: {result.rows} rows")
        except BaseException:
            for future in futures:  # the chains not started yet; the running ones finish before the pool closes
                future.cancel()
            raise
    return results


@dataclass(frozen=True)
class IngestResult:
    day: str
    tables: dict  # table name → WriteResult
    quarantine: object  # WriteResult of bronze/quarantine
    quarantined_by_table: dict[str, int]


def ingest_day(spark, lake, landing: str, day: str, tables: list[str] | None = None,
               log: Callable[[str], None] = lambda _msg: None) -> IngestResult:
    """Rewrite one day's partition of every bronze table (and of ``bronze/quarantine``) from the landing folder.

    Reads only the files ``landing.list_day`` lists (never through a link, never an oversized file), parses them
    in the workers, and moves rows that break a table's critical row rules to the quarantine too
    (``quality.row_rules``), so one hostile value cannot stop the day. Idempotent: the same files give the same
    partition contents, and a re-run replaces the partition.
    """
    with small_files(spark):
        return _ingest(spark, lake, landing, day, tables, log)


def _ingest(spark, lake, landing, day, tables, log) -> IngestResult:
    from pyspark.sql import functions as F

    names = tables or list(TABLES)
    listing = list_day(spark, landing, day, {t.name: t.globs for t in TABLES.values()})
    snapshots = parse_family(spark, listing.files.get("snapshots", []), [TABLES["snapshots"]], sizes=listing.sizes,
                             root=listing.root, ids=listing.ids)
    marked = {"snapshots": checked_table(snapshots, TABLES["snapshots"]).persist()}
    # One small row per snapshot: complete directories with their brokers; None where the manifest is not usable.
    manifests: dict[str, list[str] | None] = {
        r["source_file"][: -len("/manifest.json")]: None for r in marked["snapshots"].select("source_file").collect()}
    manifests.update({r["source_file"][: -len("/manifest.json")]: list(r["brokers"] or [])
                      for r in good_rows(marked["snapshots"], TABLES["snapshots"]).select("source_file", "brokers").collect()})
    families: dict[tuple, list[BronzeTable]] = {}  # tables fed by the same files (a broker's load report: two)
    for name in names:
        if name != "snapshots":
            families.setdefault(TABLES[name].globs, []).append(TABLES[name])
    shared = []
    for members in families.values():
        parsed = parse_family(spark, listing.files.get(members[0].name, []), members, manifests, listing.sizes,
                              listing.root, listing.ids)
        if len(members) > 1:
            shared.append(parsed := parsed.persist())
        marked.update({t.name: checked_table(parsed, t).persist() for t in members})
    cached = list(marked.values())
    if "topic_stats" in marked and "ownership" in marked:  # a topic read from two brokers as its bundle moved
        marked["topic_stats"] = moved_topics.resolve(marked["topic_stats"],
                                                     good_rows(marked["ownership"], TABLES["ownership"]))
    try:
        # a family's tables share one cached parse: one chain, written in turn; the largest family first
        chains = [[t.name for t in m] for m in families.values()] + ([["snapshots"]] if "snapshots" in names else [])
        chains.sort(key=lambda chain: -sum(listing.sizes.get(f, 0) for f in listing.files.get(chain[0], [])))
        frames = {name: good_rows(marked[name], TABLES[name]) for chain in chains for name in chain}
        written = _write_concurrently(lake, frames, chains, day, log)
        results = {name: written[name] for name in names}
        quarantine = spark.createDataFrame([], QUARANTINE_SCHEMA)
        for name, frame in marked.items():
            quarantine = quarantine.unionByName(quarantined_rows(frame, TABLES[name]))
        listed = listing_quarantine(listing)
        if listed:
            quarantine = quarantine.unionByName(spark.createDataFrame(listed, QUARANTINE_SCHEMA))
        # a union of every table's cached partitions (35 on the demo day), mostly empty, holding at most the day's
        # text: written in as many tasks as the day's files are read in (the demo day's write 1.5 s -> 1.0 s)
        quarantine = quarantine.withColumn("snapshot_date", F.coalesce("snapshot_date", F.lit(day))).coalesce(
            task_count([f for files in listing.files.values() for f in files], listing.sizes))
        q_result = lake.write_partition(quarantine, "bronze", "quarantine", day)
        counts = {name: 0 for name in results}
        if q_result.rows:
            for row in lake.read(spark, "bronze", "quarantine", day).groupBy("bronze_table").count().collect():
                counts[row["bronze_table"]] = row["count"]
    finally:
        for df in [*cached, *shared]:
            df.unpersist()
    log(f"bronze/quarantine: {q_result.rows} rows")
    return IngestResult(day=day, tables=results, quarantine=q_result, quarantined_by_table=counts)
