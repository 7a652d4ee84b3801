"""How well a replay predicts what the cluster really did: ownership changes between consecutive snapshots
against the unloads the replay of the configured strategy chose at the earlier snapshot.

A recorded move is a bundle owned at snapshot *t* that, at the next snapshot, is owned by another broker or by
none (unloaded, not yet looked up again). Left out: a bundle that is no longer in its namespace's layout (split, not
moved); with the load reports, a bundle whose broker did not stay up until the next snapshot (it left, restarted, or
its report was not collected there: those moves are placements forced on Pulsar, not shedding, as the simulation's
validation counts them too); and a bundle nobody owns at the next snapshot while its broker reported no ownership
there (its ownership file was not collected or was quarantined: counting every bundle of it as unloaded would cut
the replay's recall for nothing the cluster did). A prediction is an unload the replay chose at *t*; it is
confirmed when the bundle moved away from that broker before the next snapshot (``destination_agrees`` when it
landed where predicted).
Pulsar sheds every ``loadBalancerSheddingIntervalMinutes`` while snapshots are further apart, and operators move
bundles by hand too, so recall counts every move and says so. Where the snapshots carry the leader's log
(``bronze/lb_events``), its logged unloads are the moves instead (``logged_moves``): exactly what Pulsar's shedding
did, no hand-made move, no placement forced by a broker leaving. All in Spark; only the counts reach the driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window


def _next_snapshots(ownership: DataFrame) -> DataFrame:
    return ownership.select("cluster", "snapshot_ts").distinct().withColumn(
        "next_ts", F.lead("snapshot_ts").over(Window.partitionBy("cluster").orderBy("snapshot_ts")))


def stayed_up(ownership: DataFrame, reports: DataFrame) -> DataFrame:
    """(cluster, snapshot_ts, broker): brokers that reported at that snapshot and at the next one with the same
    start time (Pulsar's ``startTimestamp``; null-safe), so neither left nor restarted in between."""
    started = reports.select("cluster", "snapshot_ts", "broker", "start_timestamp_ms")
    return (started.join(_next_snapshots(ownership), ["cluster", "snapshot_ts"])
            .join(started.select("cluster", F.col("snapshot_ts").alias("next_ts"), "broker",
                                 F.col("start_timestamp_ms").alias("_next_start")), ["cluster", "next_ts", "broker"])
            .where(F.col("start_timestamp_ms").eqNullSafe(F.col("_next_start")))
            .select("cluster", "snapshot_ts", "broker"))


def recorded_moves(ownership: DataFrame, layouts: DataFrame, up: DataFrame | None = None) -> DataFrame:
    """(cluster, snapshot_ts, bundle, broker, next_broker or null): bundles that left their broker before the
    next snapshot; with ``up`` (``stayed_up``), only those of brokers that stayed up."""
    now = (ownership.select("cluster", "snapshot_ts", "namespace", "bundle_range", "bundle", "broker")
           .join(_next_snapshots(ownership).where(F.col("next_ts").isNotNull()), ["cluster", "snapshot_ts"]))
    if up is not None:
        now = now.join(up, ["cluster", "snapshot_ts", "broker"], "left_semi")
    later = ownership.select("cluster", F.col("snapshot_ts").alias("next_ts"), "bundle",
                             F.col("broker").alias("next_broker"))
    reported = ownership.select("cluster", F.col("snapshot_ts").alias("next_ts"), "broker").distinct() \
        .withColumn("_reported", F.lit(True))
    still = (layouts.select("cluster", F.col("snapshot_ts").alias("next_ts"), "namespace",
                            F.explode(F.arrays_zip(F.slice("boundaries", 1, F.size("boundaries") - 1).alias("lo"),
                                                   F.slice("boundaries", 2, F.size("boundaries") - 1).alias("up")))
                            .alias("b"))
             .select("cluster", "next_ts", "namespace", F.concat_ws("_", "b.lo", "b.up").alias("bundle_range"))
             .withColumn("in_next_layout", F.lit(True)))
    unowned = F.col("next_broker").isNull() & F.col("_reported").isNotNull()
    return (now.join(later, ["cluster", "next_ts", "bundle"], "left")
            .join(still, ["cluster", "next_ts", "namespace", "bundle_range"], "left")
            .join(reported, ["cluster", "next_ts", "broker"], "left")
            .where(F.col("in_next_layout") & (unowned | (F.col("next_broker") != F.col("broker"))))
            .select("cluster", "snapshot_ts", "bundle", "broker", "next_broker"))


def logged_moves(events: DataFrame, ownership: DataFrame) -> DataFrame:
    """The leader's own logged unloads (``bronze/lb_events``, kind ``unload``) as moves, in ``recorded_moves``'
    columns: an unload logged between a snapshot and the next (the next snapshot's logs hold it) belongs to the
    earlier one, whose replay had to predict it; its destination is the one the leader logged."""
    return (events.where(F.col("kind") == "unload")
            .select("cluster", F.col("snapshot_ts").alias("next_ts"), "bundle", F.col("from_broker").alias("broker"),
                    F.col("to_broker").alias("next_broker"))
            .join(_next_snapshots(ownership), ["cluster", "next_ts"])
            .select("cluster", "snapshot_ts", "bundle", "broker", "next_broker")
            .dropDuplicates(["cluster", "snapshot_ts", "bundle", "broker"]))


def replay_accuracy(decisions: DataFrame, moves: DataFrame, strategy: str | Column, label: str | None = None,
                    up: DataFrame | None = None) -> dict:
    """Precision and recall of ``strategy``'s replayed unloads against the recorded moves (``strategy``: a name, or
    a column of the strategy configured at each row's snapshot, described by ``label``). With ``up``, the moves'
    own (``stayed_up``), an unload from a broker that then left or restarted is no prediction either: whatever
    the strategy chose, the bundle moved for that."""
    warming = F.col("warming_up") if "warming_up" in decisions.columns else F.lit(False)
    predicted = decisions.where(F.col("strategy") == strategy).select(
        "cluster", "snapshot_ts", "bundle", "broker", F.col("destination").alias("predicted_destination"),
        F.coalesce(warming, F.lit(False)).alias("_warming"))
    if up is not None:
        predicted = predicted.join(up, ["cluster", "snapshot_ts", "broker"], "left_semi")
    # the last snapshot has no next one to confirm its predictions: none after the last recorded move's counts.
    # The bound joins the same query (a collect of it first had computed the moves' joins twice, 2 of the report's
    # 13 s on M; in one query Spark computes them once and reuses them)
    last = moves.agg(F.max("snapshot_ts").alias("_last"))
    predicted = (predicted.crossJoin(F.broadcast(last))
                 .where(F.col("_last").isNull() | (F.col("snapshot_ts") <= F.col("_last"))).drop("_last"))
    marked = (predicted.withColumn("_p", F.lit(True))
              .join(moves.withColumn("_m", F.lit(True)), ["cluster", "snapshot_ts", "bundle", "broker"], "full")
              .fillna({"_p": False, "_m": False, "_warming": False}))
    both = F.col("_p") & F.col("_m")
    # per broker and snapshot: the strategy's selection from that broker, and whether it is exactly what moved
    per = marked.groupBy("cluster", "snapshot_ts", "broker").agg(
        F.sum(F.col("_p").cast("int")).alias("predicted"), F.sum(F.col("_m").cast("int")).alias("moved"),
        F.sum((F.col("_p") & F.col("_warming")).cast("int")).alias("warming_up"),
        F.sum((both & F.col("_warming")).cast("int")).alias("warming_up_confirmed"),
        F.sum(both.cast("int")).alias("confirmed"),
        F.sum((both & (F.col("next_broker") == F.col("predicted_destination"))).cast("int")).alias("destination_agrees"),
        F.bool_and(F.col("_p") == F.col("_m")).alias("same"))
    r = per.agg(*(F.sum(c).alias(c) for c in ("predicted", "moved", "confirmed", "destination_agrees", "warming_up",
                                               "warming_up_confirmed")),
                F.count(F.lit(1)).alias("selections"), F.sum(F.col("same").cast("int")).alias("selections_agree")
                ).collect()[0]
    predicted_n, moved, confirmed = int(r["predicted"] or 0), int(r["moved"] or 0), int(r["confirmed"] or 0)
    return {"strategy": label or strategy, "predicted": predicted_n, "moved": moved, "confirmed": confirmed,
            "destination_agrees": int(r["destination_agrees"] or 0),
            # predictions made before the strategy's state could have caught up with the leader's (warm_up.py)
            "warming_up": int(r["warming_up"] or 0), "warming_up_confirmed": int(r["warming_up_confirmed"] or 0),
            "precision": confirmed / predicted_n if predicted_n else None,
            "recall": confirmed / moved if moved else None,
            # (broker, snapshot) pairs where a bundle was predicted or moved, and those whose sets are equal
            "selections": int(r["selections"] or 0), "selections_agree": int(r["selections_agree"] or 0)}
