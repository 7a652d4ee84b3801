"""Validation views of the simulation's gold tables (``gold/simulation_timeseries``, ``simulation_runs``,
``simulation_validation``): the derived properties their suites check (``quality.views.SUITES``)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.simulation.real_validation import NO_LOG
from lb_pipeline.transforms.simulation import NOT_SIMULATED

Read = Callable[[str, str], DataFrame]


def simulation_timeseries(read: Read) -> DataFrame:
    df = read("gold", "simulation_timeseries")
    gap = F.abs(F.col("rate_served") - F.col("rate_recorded"))
    return df.withColumn("traffic_conserved", F.coalesce(gap <= F.greatest(F.lit(1.0), F.col("rate_recorded")) * 1e-9,
                                                         F.lit(False)))


def simulation_runs(read: Read) -> DataFrame:
    """Every simulated cycle is in the time series, a run of no cycle says why (a history of one snapshot cannot be
    simulated: a fact about the night, which the suite warns of, not a broken simulation), and its pinned
    broker-minutes are part of its overloaded ones."""
    keys = ["cluster", "snapshot_date", "run_id"]
    written = read("gold", "simulation_timeseries").groupBy(*keys).agg(F.count("*").alias("cycles_written"))
    return (read("gold", "simulation_runs").join(written, keys, "left")
            .withColumn("all_cycles_written",
                        F.coalesce(F.coalesce("cycles_written", F.lit(0)) == F.col("cycles"), F.lit(False)))
            .withColumn("simulated_or_says_why", F.coalesce((F.col("cycles") >= 1)
                                                            | F.col("notes").startswith(NOT_SIMULATED), F.lit(False)))
            # a pinned broker is an overloaded one: its minutes are inside the overloaded broker-minutes
            .withColumn("pinned_within_overloaded", F.coalesce(
                F.col("pinned_broker_minutes") <= F.col("overloaded_broker_minutes"),
                F.col("pinned_broker_minutes").isNull())))


def simulation_validation(read: Read) -> DataFrame:
    """A cluster's closed loop is scored, or its row says why not; each logged unload is matched at most once."""
    matched, col = F.coalesce("matched_unloads", F.lit(0)), F.col
    return (read("gold", "simulation_validation")
            .withColumn("simulated_or_says_why", F.coalesce((col("snapshots") >= 1)
                                                            | col("notes").startswith(NOT_SIMULATED), F.lit(False)))
            .withColumn("scored_or_says_why", F.coalesce(col("logged_unloads").isNotNull()
                                                         | col("notes").contains(NO_LOG) | col("snapshots").isNull(),
                                                         F.lit(False)))
            .withColumn("matches_counted_once", F.coalesce(
                (matched <= F.coalesce("logged_unloads", F.lit(0))) & (matched <= col("simulated_unloads"))
                & (F.coalesce("destinations_agree", F.lit(0)) <= matched)
                & (F.coalesce("matched_splits", F.lit(0)) <= F.least(F.coalesce("logged_splits", F.lit(0)),
                                                                     col("simulated_splits")))
                # the warm-up's unloads are some of the simulated ones, its matches some of the matched ones
                & (F.coalesce("warming_up", F.lit(0)) <= col("simulated_unloads"))
                & (F.coalesce("warming_up_matched", F.lit(0)) <= F.least(F.coalesce("warming_up", F.lit(0)), matched))
                # of the lost brokers' bundles, those owned again; of those, the loop's on the same broker
                & (F.coalesce("orphans_agree", F.lit(0)) <= F.coalesce("orphans_reowned", F.lit(0)))
                & (F.coalesce("orphans_reowned", F.lit(0)) <= F.coalesce("orphans_lost", F.lit(0)))
                # bundles to move for the loop's count per broker to be the record's: at most all re-owned ones
                & (F.coalesce("orphans_count_off", F.lit(0)) <= F.coalesce("orphans_reowned", F.lit(0)))
                & F.coalesce(col("orphans_traffic_off").between(0.0, 1.0), F.lit(True)),
                col("snapshots").isNull())))
