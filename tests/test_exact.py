"""Sums, means and ``max_by`` that give the same bits whatever order Spark's plan feeds them rows in
(``lb_pipeline/transforms/exact.py``): a night re-run under another plan, on a cluster, must equal the first."""

import random
from fractions import Fraction
from math import ulp

import pytest
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lb_pipeline.transforms.exact import exact_avg, exact_sum, max_by

pytestmark = pytest.mark.spark
GROUPS = 7


@pytest.fixture(scope="module")
def values():
    """Rates and throughputs as Pulsar reports them: from idle to 10 GB/s, one group per key."""
    rng = random.Random(5)
    return [(i % GROUPS, rng.random() * 10.0 ** rng.randint(-6, 9)) for i in range(2_000)]


def _sums(df):
    return {r.g: (r.exact, r.mean, r.plain) for r in df.groupBy("g").agg(
        exact_sum("v").alias("exact"), exact_avg("v").alias("mean"), F.sum("v").alias("plain")).collect()}


def test_a_sum_is_the_same_bits_whatever_order_and_partitions_the_rows_come_in(spark, values):
    df = spark.createDataFrame(values, "g int, v double")
    one, other = _sums(df.coalesce(1)), _sums(df.orderBy(F.rand(3)).repartition(5))
    assert {g: s[:2] for g, s in one.items()} == {g: s[:2] for g, s in other.items()}
    assert any(one[g][2] != other[g][2] for g in one)  # the plain sum of the same rows did move


def test_a_sum_is_the_true_sum_within_a_rounding_and_a_mean_is_that_over_the_count(spark, values):
    sums = _sums(spark.createDataFrame(values, "g int, v double"))
    for g in range(GROUPS):
        mine = [v for k, v in values if k == g]
        true = sum(Fraction(v) for v in mine)
        assert abs(Fraction(sums[g][0]) - true) <= 2 * ulp(float(true))
        assert sums[g][1] == sums[g][0] / len(mine)


def test_values_beyond_the_exact_range_fall_back_to_sparks_sum_and_nulls_are_skipped(spark):
    df = spark.createDataFrame([(1, 1e300), (1, 2.0), (2, None), (3, 9e9), (3, 1.0), (3, None)], "g int, v double")
    got = {r.g: (r.s, r.m) for r in df.groupBy("g").agg(exact_sum("v").alias("s"), exact_avg("v").alias("m")).collect()}
    assert got == {1: (1e300, 5e299), 2: (None, None), 3: (9e9 + 1.0, (9e9 + 1.0) / 2)}


def test_over_a_window_each_row_gets_its_groups_sum(spark, values):
    df = spark.createDataFrame(values, "g int, v double")
    w = Window.partitionBy("g")
    over = {r.g: (r.s, r.m) for r in df.select("g", exact_sum("v", w).alias("s"), exact_avg("v", w).alias("m"))
            .distinct().collect()}
    assert over == {g: s[:2] for g, s in _sums(df).items()}  # one value per group, the aggregate's


def test_a_tie_of_max_by_goes_to_the_greatest_value_whichever_row_comes_first(spark):
    rows = [(1, "a", 1.0), (1, "c", 1.0), (1, "b", 0.5), (2, "z", None), (2, "y", 0.1), (3, "q", None)]
    for order in (rows, rows[::-1]):
        got = {r.g: r.top for r in spark.createDataFrame(order, "g int, n string, r double").coalesce(1)
               .groupBy("g").agg(max_by("n", "r").alias("top")).collect()}
        assert got == {1: "c", 2: "y", 3: None}  # a row without a number to rank it by is never the top
