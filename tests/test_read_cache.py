"""A run reads each version of a small table from Delta once (``spark/read_cache.py``): later reads of the same
version come from Spark's cache, a write makes the next read see the new version, and tables with a row per topic are
never kept."""

import shutil

import pytest

from lb_pipeline.spark.lake import Lake
from lb_pipeline.spark.read_cache import ReadCache

DAY = "2026-01-01"


def _rows(spark, values, day=DAY):
    return spark.createDataFrame([(v, day) for v in values], "value long, snapshot_date string")


def _values(df):
    return sorted(r.value for r in df.collect())


@pytest.mark.spark
def test_a_version_is_read_once_and_a_write_is_seen_by_the_next_read(spark, tmp_path):
    lake = Lake(str(tmp_path))
    lake.write_partition(_rows(spark, [1, 2]), "gold", "t", DAY)
    first = lake.read(spark, "gold", "t", DAY)
    assert lake.read(spark, "gold", "t", DAY) is first and first.is_cached
    assert _values(first) == [1, 2]
    assert lake.read(spark, "gold", "t") is not first  # the whole table is another read
    lake.write_partition(_rows(spark, [3]), "gold", "t", DAY)
    after = lake.read(spark, "gold", "t", DAY)
    assert after is not first and _values(after) == [3]
    assert _values(first) == [1, 2]  # what was read stays what it was: the cache holds that version


@pytest.mark.spark
def test_a_table_deleted_and_written_anew_at_the_same_version_is_read_again(spark, tmp_path):
    lake = Lake(str(tmp_path))
    lake.write_partition(_rows(spark, [1]), "gold", "t", DAY)
    old = lake.read(spark, "gold", "t", DAY)
    assert _values(old) == [1]
    shutil.rmtree(tmp_path / "gold" / "t")
    assert lake.write_partition(_rows(spark, [7, 8]), "gold", "t", DAY).version == 0  # the same version number
    assert _values(lake.read(spark, "gold", "t", DAY)) == [7, 8]


@pytest.mark.spark
def test_tables_with_a_row_per_topic_and_missing_tables_are_read_plainly(spark, tmp_path):
    lake = Lake(str(tmp_path))
    lake.write_partition(_rows(spark, [1]), "bronze", "topic_stats", DAY)
    topics = lake.read(spark, "bronze", "topic_stats", DAY)
    assert lake.read(spark, "bronze", "topic_stats", DAY) is not topics and not topics.is_cached
    with pytest.raises(Exception, match="(?i)not a delta table|path does not exist|DELTA_MISSING"):
        lake.read(spark, "gold", "absent", DAY).collect()


class _Frame:
    def __init__(self, name):
        self.name, self.cached, self.dropped = name, False, False

    def cache(self):
        self.cached = True
        return self

    def unpersist(self):
        self.dropped = True


def test_the_least_recently_read_beyond_the_limit_is_unpersisted():
    cache, made = ReadCache(entries=2), []

    def read(name):
        return lambda: made.append(_Frame(name)) or made[-1]

    a, b = cache.get(("a",), read("a")), cache.get(("b",), read("b"))
    assert cache.get(("a",), read("a")) is a and len(made) == 2  # read once
    c = cache.get(("c",), read("c"))  # b is the least recently read
    assert b.dropped and not a.dropped and not c.dropped and len(cache) == 2
    assert cache.get(("b",), read("b")) is not b and a.dropped  # read again; now a goes
    assert all(f.cached for f in made)
    cache.clear()
    assert len(cache) == 0 and all(f.dropped for f in made)
