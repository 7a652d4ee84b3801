"""ThresholdShedder's history as the leader logged it, per snapshot, for the nightly replay
(``algorithms/shedding/logged_history.py`` says why and how it is taken).

Log lines are untrusted: a number that does not cast is null here, and ``LoggedHistory`` takes only finite values
in range."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms.shedding.logged_history import LINE
from lb_pipeline.snapshots.leader_cycle import CYCLE_KINDS
from lb_pipeline.transforms.replay_inputs import KEYS


def logged_history(events: DataFrame) -> DataFrame:
    """Per snapshot: the ThresholdShedder lines among its logs as a JSON list of ``[broker, epoch ms, history %,
    average %]``, the last election logged (``elected_ms``), and what the leader's next cycles are scheduled from
    (``cycle_anchor_ms``: the last line of a cycle that logged, or the election; ``snapshots.leader_cycle``)."""
    def number(i: int):
        return F.expr(f"try_cast(regexp_extract(detail, '{LINE}', {i}) as double)")

    usage = F.array(F.col("from_broker"), F.unix_millis("event_ts").cast("string"),
                    number(1).cast("string"), number(2).cast("string"))
    shed = (F.col("kind") == "shed-attempt") & F.col("detail").rlike(LINE)
    return events.groupBy(*KEYS).agg(
        F.to_json(F.collect_list(F.when(shed, usage))).alias("logged_history"),
        F.max(F.when(F.col("kind") == "leader", F.unix_millis("event_ts"))).cast("string").alias("elected_ms"),
        F.max(F.when(F.col("kind").isin("leader", *CYCLE_KINDS), F.unix_millis("event_ts"))).cast("string")
        .alias("cycle_anchor_ms"))
