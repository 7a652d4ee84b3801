"""The grace-period state each snapshot's replay starts from: what the cluster really unloaded, never what the
replay predicted.

``doLoadShedding`` skips a bundle the leader unloaded less than ``loadBalancerSheddingGracePeriodMinutes`` ago
(``recentlyUnloadedBundles``). A replay that kept its *own* predicted unloads as that state drifted from the cluster
as soon as it "moved" a bundle Pulsar did not: ownership comes from the snapshots, so the bundle Pulsar then picked
was skipped (a real three-broker cluster: 4 of Pulsar's 15 unloads matched). So at each snapshot the state is
rebuilt from the record:

* the leader's logged unloads (``bronze/lb_events``, kind ``unload``, ``collect --broker-log``), each at its logged
  time, where the cluster's snapshots carry its logs;
* otherwise the recorded ownership: a bundle whose owner changed between two snapshots while its old owner stayed
  live counts as unloaded halfway between them (Pulsar unloaded it some time in between; a bundle moved by hand
  counts too, which Pulsar would not hold back).

The strategies' other state (ThresholdShedder's averages, AvgShedder's hit counts) carries on as before.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.transforms.replay_inputs import KEYS

FROM_LOGS = "grace period from the leader's logged unloads"
FROM_OWNERSHIP = "grace period from the recorded ownership changes"


def logged_unloads(events: DataFrame) -> DataFrame:
    """Per snapshot: how many load-balancer log lines landed, and the unloads among them as a JSON list of
    ``[bundle, epoch ms]`` (small: a few per shedding cycle)."""
    unload = F.when(F.col("kind") == "unload",
                    F.array(F.col("bundle"), F.unix_millis("event_ts").cast("string")))
    return events.groupBy(*KEYS).agg(F.count(F.lit(1)).alias("logged_lines"),
                                     F.to_json(F.collect_list(unload)).alias("logged_unloads"))


def from_logs(pdf: pd.DataFrame) -> bool:
    """Whether a cluster's packed replay inputs carry the leader's log lines."""
    if "logged_lines" not in pdf.columns:
        return False
    return bool((pdf.loc[pdf["kind"] == "meta", "logged_lines"].fillna(0) > 0).any())


class RecordedUnloads:
    """Bundle → time of its last recorded unload, advanced snapshot by snapshot in time order."""

    def __init__(self, logs: bool):
        self.logs = logs
        self.note = FROM_LOGS if logs else FROM_OWNERSHIP
        self.unloaded: dict[str, int] = {}
        self._previous: tuple[int, dict[str, str]] | None = None

    def advance(self, now_ms: int, ownership: dict[str, str], live: set[str], logged: list) -> dict[str, int]:
        """The recently unloaded bundles at ``now_ms`` (``run_cycle`` drops those past the grace period):
        ``ownership`` bundle → owner at this snapshot, ``live`` its brokers, ``logged`` its ``[bundle, ms]``."""
        if self.logs:
            for bundle, ms in logged:
                self.unloaded[bundle] = max(int(ms), self.unloaded.get(bundle, 0))
        elif self._previous is not None:
            before, owners = self._previous
            halfway = (before + now_ms) // 2
            for bundle, owner in owners.items():
                if ownership.get(bundle) not in (None, owner) and owner in live:
                    self.unloaded[bundle] = halfway
        self._previous = (now_ms, ownership)
        return {b: t for b, t in self.unloaded.items() if t <= now_ms}


def recorded_unloads(ownership: DataFrame, reports: DataFrame, events: DataFrame | None) -> DataFrame:
    """(cluster, bundle, recorded_ms): the unloads ``RecordedUnloads`` builds the replay's grace period from, as a
    table (the check of ``gold.shedding_decisions`` reads it): the logged ones for a cluster whose logs landed, else
    its ownership changes between consecutive snapshots whose old owner still reports (``reports``: the brokers'
    load reports, as the replay sees them), halfway between them."""
    from pyspark.sql.window import Window

    own = ownership.select("cluster", "snapshot_ts", "bundle", "broker")
    times = reports.select("cluster", "snapshot_ts").distinct().withColumn(
        "previous_ts", F.lag("snapshot_ts").over(Window.partitionBy("cluster").orderBy("snapshot_ts")))
    before = own.select("cluster", F.col("snapshot_ts").alias("previous_ts"), "bundle", F.col("broker").alias("old"))
    live = reports.select("cluster", "snapshot_ts", F.col("broker").alias("old"))
    halfway = ((F.unix_millis("previous_ts") + F.unix_millis("snapshot_ts")) / 2).cast("long")
    moved = (own.join(times, ["cluster", "snapshot_ts"]).join(before, ["cluster", "previous_ts", "bundle"])
             .where(F.col("old") != F.col("broker")).join(live, ["cluster", "snapshot_ts", "old"], "left_semi")
             .select("cluster", "bundle", halfway.alias("recorded_ms")))
    if events is None:
        return moved
    logged = events.where(F.col("kind") == "unload").select("cluster", "bundle",
                                                           F.unix_millis("event_ts").alias("recorded_ms"))
    with_logs = events.select("cluster").distinct()
    return logged.unionByName(moved.join(with_logs, "cluster", "left_anti"))


def in_grace(decisions: DataFrame, recorded: DataFrame) -> DataFrame:
    """``decisions`` (with ``_at``, the cycle's time, and ``_grace_ms``) with ``_in_grace``: a modular strategy's
    unload of a bundle the cluster had unloaded (``recorded_unloads``) by its snapshot and less than the grace
    period before the cycle, which ``run_cycle`` would have held back."""
    hits = (decisions.where(F.col("strategy") != "TransferShedder")
            .select("cluster", "snapshot_ts", "strategy", "bundle", "_at", "_grace_ms")
            .join(recorded, ["cluster", "bundle"])
            .where((F.col("recorded_ms") <= F.unix_millis("snapshot_ts"))
                   & (F.col("recorded_ms") >= F.unix_millis("_at") - F.col("_grace_ms")))
            .select("cluster", "snapshot_ts", "strategy", "bundle").distinct().withColumn("_hit", F.lit(True)))
    return (decisions.join(hits, ["cluster", "snapshot_ts", "strategy", "bundle"], "left")
            .withColumn("_in_grace", F.coalesce("_hit", F.lit(False))).drop("_hit"))
