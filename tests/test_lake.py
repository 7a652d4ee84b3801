"""The session builder writes and reads real Delta tables, one partition at a time, idempotently."""

import re

import pytest

from lb_pipeline.spark.lake import Lake

pytestmark = pytest.mark.spark


def _rows(spark, day, values):
    return spark.createDataFrame([(v, day) for v in values], "value long, snapshot_date string")


def test_partition_write_creates_a_delta_table_and_replaces_only_that_day(spark, tmp_path):
    from delta.tables import DeltaTable

    lake = Lake(str(tmp_path))
    first = lake.write_partition(_rows(spark, "2026-01-01", [1, 2, 3]), "bronze", "t", "2026-01-01")
    lake.write_partition(_rows(spark, "2026-01-02", [10]), "bronze", "t", "2026-01-02")
    assert DeltaTable.isDeltaTable(spark, lake.path("bronze", "t"))
    assert (tmp_path / "bronze" / "t" / "_delta_log").is_dir()
    assert first.rows == 3 and first.version == 0  # the first write creates the table: one commit, not two

    again = lake.write_partition(_rows(spark, "2026-01-01", [1, 2, 3]), "bronze", "t", "2026-01-01")
    assert again.version == 2 and again.rows == 3
    got = sorted((r.value, r.snapshot_date) for r in lake.read(spark, "bronze", "t").collect())
    assert got == [(1, "2026-01-01"), (2, "2026-01-01"), (3, "2026-01-01"), (10, "2026-01-02")]
    assert lake.read(spark, "bronze", "t", "2026-01-02").count() == 1


def test_a_new_table_keeps_file_statistics_of_its_first_two_columns_only(spark, tmp_path):
    import json

    lake = Lake(str(tmp_path))
    rows = spark.createDataFrame([("c", 1, 2.5, "2026-01-01")], "cluster string, ts long, x double, snapshot_date string")
    lake.write_partition(rows, "bronze", "t", "2026-01-01")
    (commit,) = (tmp_path / "bronze" / "t" / "_delta_log").glob("*.json")
    (stats,) = [json.loads(json.loads(line)["add"]["stats"]) for line in commit.read_text().splitlines() if '"add"' in line]
    assert stats["numRecords"] == 1 and set(stats["minValues"]) == {"cluster", "ts"}


def test_the_newest_commit_read_from_the_log_is_what_delta_history_says(spark, tmp_path):
    from delta.tables import DeltaTable

    lake, every = Lake(str(tmp_path)), "spark.databricks.delta.properties.defaults.checkpointInterval"
    spark.conf.set(every, "2")  # a checkpoint every 2 commits (10 by default): its files sit beside the commits
    try:
        for n in range(4):
            written = lake.write_partition(_rows(spark, f"2026-01-{1 + n % 3:02d}", range(n + 1)), "bronze", "t",
                                           f"2026-01-{1 + n % 3:02d}")
            assert (written.version, written.rows) == (n, n + 1)
    finally:
        spark.conf.unset(every)
    assert any(p.name.endswith(".checkpoint.parquet") for p in (tmp_path / "bronze" / "t" / "_delta_log").iterdir())
    last = DeltaTable.forPath(spark, lake.path("bronze", "t")).history(1).collect()[0]
    assert lake.version(spark, "bronze", "t") == last["version"] == 3
    assert written.rows == int(last["operationMetrics"]["numOutputRows"])


def test_a_year_of_commits_on_a_local_lake_is_listed_and_read_without_a_call_into_the_jvm(spark, tmp_path):
    """A table read or written every night lists its log each time (and reads its newest commits): on the local file
    system Python does it, with no call into the JVM however long the log."""
    import os

    from lb_pipeline.spark.lake import _Log
    from tests.round_trips import counted

    log = tmp_path / "gold" / "t" / "_delta_log"
    (log / "_staged_commits").mkdir(parents=True)
    for v in range(365):
        for suffix in (".json", ".crc") + ((".checkpoint.parquet",) if v % 10 == 0 else ()):
            (log / f"{v:020d}{suffix}").write_text("{}")
    (log / "_last_checkpoint").write_text("{}")
    (log / f".{365:020d}.json.tmp").write_text("{}")  # a commit being written: not one yet
    (log / f"{364:020d}.json").write_text('{"commitInfo": {"userMetadata": "t"}}\n{"add": {"path": "a.parquet"}}\n')
    os.utime(log / f"{364:020d}.json", (1_700_000_000, 1_700_000_000))
    with counted() as calls:
        listed = _Log(spark, str(tmp_path / "gold" / "t"))
        versions, newest, actions = listed.versions(), listed.newest(), listed.actions(364)
        assert _Log(spark, str(tmp_path / "gold" / "none")).newest() is None
    assert versions == list(range(364, -1, -1)) and newest == (364, 1_700_000_000_000)
    assert actions == [{"commitInfo": {"userMetadata": "t"}}, {"add": {"path": "a.parquet"}}]
    assert calls[0] == 0
    # the same log through Hadoop's file system (as on an object store): the same answer
    hadoop = _Log(spark, str(tmp_path / "gold" / "t"))
    hadoop._local = lambda: None
    assert hadoop.versions() == versions and hadoop.newest() == newest and hadoop.actions(364) == actions


def test_a_write_that_commits_nothing_reports_no_rows_not_the_commit_before_it(spark, tmp_path):
    """Delta commits nothing for a write that adds and removes no file (an empty day, written again or for the
    first time): the newest commit is another write's, whose rows must not be reported as this one's."""
    lake = Lake(str(tmp_path))
    assert lake.write_partition(_rows(spark, "2026-01-01", [1, 2, 3]), "bronze", "q", "2026-01-01").rows == 3
    for _ in range(2):
        empty = lake.write_partition(_rows(spark, "2026-01-02", []), "bronze", "q", "2026-01-02")
        assert (empty.rows, empty.version) == (0, 0)
    assert lake.write_partition(_rows(spark, "2026-01-01", []), "bronze", "q", "2026-01-01").rows == 0  # a removal
    assert lake.read(spark, "bronze", "q").count() == 0


def test_rows_of_another_day_are_refused(spark, tmp_path):
    lake = Lake(str(tmp_path))
    with pytest.raises(ValueError, match='writing partition 2026-01-01 got rows of another partition '
                                         r'\(a row with \{"snapshot_date":"2026-01-03"\}\)'):
        lake.write_partition(_rows(spark, "2026-01-03", [1]), "bronze", "t", "2026-01-01")  # the first write too
    assert not lake.exists(spark, "bronze", "t")  # nothing committed
    lake.write_partition(_rows(spark, "2026-01-01", [1]), "bronze", "t", "2026-01-01")
    with pytest.raises(ValueError, match="writing partition 2026-01-01 got rows of another partition"):
        lake.write_partition(_rows(spark, "2026-01-03", [1]), "bronze", "t", "2026-01-01")
    assert lake.read(spark, "bronze", "t").count() == 1


def test_a_slice_of_several_values_replaces_those_values_and_keeps_the_others(spark, tmp_path):
    """One writer of several suites' results (a layer's checks) replaces exactly their rows of the day."""
    lake, day = Lake(str(tmp_path)), "2026-01-01"
    rows = lambda pairs: spark.createDataFrame([(s, v, day) for s, v in pairs], "suite string, value long, snapshot_date string")  # noqa: E731
    for suite in ("a", "b", "c"):
        lake.write_partition(rows([(suite, 1)]), "gold", "results", day, where={"suite": suite})
    lake.write_partition(rows([("a", 2), ("b", 2)]), "gold", "results", day, where={"suite": ["a", "b"]})
    got = sorted((r.suite, r.value) for r in lake.read(spark, "gold", "results", day).collect())
    assert got == [("a", 2), ("b", 2), ("c", 1)]
    with pytest.raises(ValueError, match="another partition"):  # rows outside the slice are refused, as for a day
        lake.write_partition(rows([("c", 3)]), "gold", "results", day, where={"suite": ["a", "b"]})


def test_a_row_outside_a_slice_of_several_columns_is_named_by_all_of_them_nulls_included(spark, tmp_path):
    lake, day = Lake(str(tmp_path)), "2026-01-01"
    rows = lambda pairs: spark.createDataFrame([(s, v, day) for s, v in pairs], "suite string, value long, snapshot_date string")  # noqa: E731
    for suite, shown in ((None, "null"), ("it's", '"it\'s"')):
        with pytest.raises(ValueError, match=re.escape(f'(a row with {{"snapshot_date":"{day}","suite":{shown}}})')):
            lake.write_partition(rows([("a", 1), (suite, 2)]), "gold", "results", day, where={"suite": ["a", "b"]})
    assert not lake.exists(spark, "gold", "results")


def test_a_quote_in_a_value_replaces_only_its_own_slice(spark, tmp_path):
    """``replaceWhere`` is SQL text: a day of ``x' OR '1'='1`` (a typed --day) replaced every partition of every
    bronze table. A partition must be a day, and values are quoted as literals."""
    lake, day = Lake(str(tmp_path)), "2026-01-01"
    rows = lambda pairs: spark.createDataFrame([(s, v, day) for s, v in pairs], "suite string, value long, snapshot_date string")  # noqa: E731
    lake.write_partition(rows([("a", 1)]), "gold", "results", day, where={"suite": "a"})
    for odd in ("b' OR '1'='1", "c\\' OR true --", "d\\"):
        lake.write_partition(rows([(odd, 2)]), "gold", "results", day, where={"suite": odd})
        lake.write_partition(rows([(odd, 3)]), "gold", "results", day, where={"suite": [odd]})
    got = sorted((r.suite, r.value) for r in lake.read(spark, "gold", "results").collect())
    assert got == [("a", 1), ("b' OR '1'='1", 3), ("c\\' OR true --", 3), ("d\\", 3)]
    for not_a_day in ("2026-01-02' OR '1'='1", "2026-1-2", ""):
        with pytest.raises(ValueError, match="is not a partition"):
            lake.write_partition(rows([]), "gold", "results", not_a_day)
    assert lake.read(spark, "gold", "results").count() == 4


def test_unknown_layer_is_rejected():
    with pytest.raises(ValueError, match="unknown lake layer"):
        Lake("/tmp/x").path("platinum", "t")


def test_lake_root_may_be_an_object_store_uri():
    assert Lake("s3a://bucket/lake/").path("silver", "bundle_stats") == "s3a://bucket/lake/silver/bundle_stats"


def test_concurrent_writers_of_one_partition_all_land_after_retrying_conflicts(spark, tmp_path, monkeypatch):
    """Suites write their slices of gold/validation_results for the same day at once (two runs of one day, or the
    sensor's and the schedule's): Delta rejects all but one commit per round; each rejected write is retried."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from lb_pipeline.spark import lake as lake_module

    lake = Lake(str(tmp_path))
    day = "2026-01-01"
    conflicts = []
    real = lake_module._retry_conflicts

    def counting(write, what):
        def once():
            try:
                return write()
            except lake_module.conflict_errors() as exc:
                conflicts.append(type(exc).__name__)
                raise
        return real(once, what)

    monkeypatch.setattr(lake_module, "_retry_conflicts", counting)

    first_round = threading.Barrier(4)

    def write(i):
        rows = spark.createDataFrame([(f"s{i}", v, day) for v in range(i)], "suite string, value long, snapshot_date string")
        if i <= 4:
            first_round.wait(timeout=60)
        return lake.write_partition(rows, "gold", "results", day, where={"suite": f"s{i}"}).rows

    with ThreadPoolExecutor(4) as pool:  # the table does not exist yet: the first round races to create it
        written = list(pool.map(write, range(1, 9)))
    assert written == list(range(1, 9))
    got = {r.suite: r.n for r in lake.read(spark, "gold", "results", day).groupBy("suite").count()
           .withColumnRenamed("count", "n").collect()}
    assert got == {f"s{i}": i for i in range(1, 9)}
    assert "ProtocolChangedException" in conflicts, f"no two writers raced to create the table: {conflicts}"


def test_first_rows_of_a_write_are_rows_of_the_table_in_its_column_order(spark, tmp_path):
    import datetime as dt

    from lb_pipeline.spark.lake import WriteResult, first_rows

    lake = Lake(str(tmp_path / "a lake"))  # a space: the log names files percent-encoded
    rows = spark.createDataFrame(
        [(f"b{i}", dt.datetime(2026, 1, 1, 3, 0, i), float(i), "2026-01-01") for i in range(6)],
        "broker string, snapshot_ts timestamp, load double, snapshot_date string").repartition(2)
    written = lake.write_partition(rows, "gold", "t", "2026-01-01")
    table = lake.read(spark, "gold", "t", "2026-01-01")
    got = first_rows(written, 2, table.columns)
    assert list(got.columns) == table.columns and len(got) == 2
    everything = table.toPandas()
    for _, row in got.iterrows():  # each previewed row is one of the table's, timestamps as Spark gives them
        assert ((everything == row).all(axis=1)).sum() == 1
    assert first_rows(WriteResult("s3a://bucket/t", 6, 0, "s3a://bucket/t/x.parquet"), 2, table.columns) is None
