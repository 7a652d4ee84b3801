"""What the nightly replay reads of the leader's log, per snapshot: ThresholdShedder's history where the leader
logged it (``algorithms/shedding/logged_history.py`` says why and how it is taken), and when the leader's next
shedding cycle runs (``next_cycle``: the replay's cycle, and the grace period's clock).

Log lines are untrusted: a number that does not cast is null here, and ``LoggedHistory`` takes only finite values
in range."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms.shedding.logged_history import LINE
from lb_pipeline.snapshots.leader_cycle import CYCLE_KINDS, next_cycle_ms
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


CYCLE_MIN_MS = 1  # what a shedding cycle takes at least, after its last line


def latest_anchor(anchor: int | None, logged, now: int) -> int | None:
    """The later of the anchor so far and a snapshot's (``logged_history``'s ``cycle_anchor_ms``), if not after the
    snapshot."""
    if isinstance(logged, int) and not isinstance(logged, bool) and logged <= now:
        return logged if anchor is None else max(anchor, logged)
    return anchor


def next_cycle(anchor: int | None, now: int, interval_ms: int) -> int:
    """The leader's first shedding cycle after ``now``, scheduled from its log's ``anchor`` (the last line of its
    last cycle that logged, or its election, plus whole intervals: ``LoadSheddingTask`` runs with a fixed delay); the
    snapshot's own time without one. The grace period is measured to the cycle's time: an unload 2 min before a cycle
    6 s after the snapshot is out of a 2-minute grace period there, not at the snapshot.

    Each cycle starts an interval after the one before it *ended*, which is after its last line (the unload is
    recorded for the grace period when its call returns, and the cycle ends after that), so the cycles come a little
    later than whole intervals from the line, at least a millisecond each: a bundle unloaded in the anchor's cycle is
    out of a grace period of k intervals at the k-th cycle after it, as it was for the leader every time on the
    recorded runs (e.g. unloaded at 10:19:49.916, unloaded again at 10:21:50.011 under a 2-minute grace period)."""
    if anchor is None:
        return now
    at = next_cycle_ms(anchor, interval_ms, now)
    return at + (at - anchor) // interval_ms * CYCLE_MIN_MS

