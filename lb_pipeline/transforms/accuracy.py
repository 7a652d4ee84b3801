"""How well a replay predicts what the cluster really did: ownership changes between consecutive snapshots
against the unloads the replay of the configured strategy chose at the earlier snapshot.

A recorded move is a bundle owned at snapshot *t* that, at the next snapshot, is owned by another broker or by
none (unloaded, not yet looked up again). A bundle that is no longer in its namespace's layout was split, not
moved, and is left out. A prediction is an unload the replay chose at *t*; it is confirmed when the bundle
moved away from that broker before the next snapshot (``destination_agrees`` when it landed where predicted).
Pulsar sheds every ``loadBalancerSheddingIntervalMinutes`` while snapshots are further apart, and operators move
bundles by hand too, so recall counts every move and says so. All in Spark; only the counts reach the driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window


def recorded_moves(ownership: DataFrame, layouts: DataFrame) -> DataFrame:
    """(cluster, snapshot_ts, bundle, broker, next_broker or null): bundles that left their broker before the
    next snapshot."""
    snaps = ownership.select("cluster", "snapshot_ts").distinct().withColumn(
        "next_ts", F.lead("snapshot_ts").over(Window.partitionBy("cluster").orderBy("snapshot_ts")))
    now = ownership.select("cluster", "snapshot_ts", "namespace", "bundle_range", "bundle", "broker")
    later = ownership.select("cluster", F.col("snapshot_ts").alias("next_ts"), "bundle",
                             F.col("broker").alias("next_broker"))
    still = (layouts.select("cluster", F.col("snapshot_ts").alias("next_ts"), "namespace",
                            F.explode(F.arrays_zip(F.slice("boundaries", 1, F.size("boundaries") - 1).alias("lo"),
                                                   F.slice("boundaries", 2, F.size("boundaries") - 1).alias("up")))
                            .alias("b"))
             .select("cluster", "next_ts", "namespace", F.concat_ws("_", "b.lo", "b.up").alias("bundle_range"))
             .withColumn("in_next_layout", F.lit(True)))
    return (now.join(snaps.where(F.col("next_ts").isNotNull()), ["cluster", "snapshot_ts"])
            .join(later, ["cluster", "next_ts", "bundle"], "left")
            .join(still, ["cluster", "next_ts", "namespace", "bundle_range"], "left")
            .where(F.col("in_next_layout") & (F.col("next_broker").isNull() | (F.col("next_broker") != F.col("broker"))))
            .select("cluster", "snapshot_ts", "bundle", "broker", "next_broker"))


def replay_accuracy(decisions: DataFrame, moves: DataFrame, strategy: str | Column, label: str | None = None) -> dict:
    """Precision and recall of ``strategy``'s replayed unloads against the recorded moves (``strategy``: a name, or
    a column of the strategy configured at each row's snapshot, described by ``label``)."""
    predicted = decisions.where(F.col("strategy") == strategy).select(
        "cluster", "snapshot_ts", "bundle", "broker", F.col("destination").alias("predicted_destination"))
    # the last snapshot has no next one to confirm its predictions: none after the last recorded move's counts.
    # The bound joins the same query (a collect of it first had computed the moves' joins twice, 2 of the report's
    # 13 s on M; in one query Spark computes them once and reuses them)
    last = moves.agg(F.max("snapshot_ts").alias("_last"))
    predicted = (predicted.crossJoin(F.broadcast(last))
                 .where(F.col("_last").isNull() | (F.col("snapshot_ts") <= F.col("_last"))).drop("_last"))
    marked = (predicted.withColumn("_p", F.lit(True))
              .join(moves.withColumn("_m", F.lit(True)), ["cluster", "snapshot_ts", "bundle", "broker"], "full")
              .fillna({"_p": False, "_m": False}))
    both = F.col("_p") & F.col("_m")
    r = marked.agg(
        F.sum(F.col("_p").cast("int")).alias("predicted"), F.sum(F.col("_m").cast("int")).alias("moved"),
        F.sum(both.cast("int")).alias("confirmed"),
        F.sum((both & (F.col("next_broker") == F.col("predicted_destination"))).cast("int")).alias("destination_agrees"),
    ).collect()[0]
    predicted_n, moved, confirmed = int(r["predicted"] or 0), int(r["moved"] or 0), int(r["confirmed"] or 0)
    return {"strategy": label or strategy, "predicted": predicted_n, "moved": moved, "confirmed": confirmed,
            "destination_agrees": int(r["destination_agrees"] or 0),
            "precision": confirmed / predicted_n if predicted_n else None,
            "recall": confirmed / moved if moved else None}
