"""Gold: Pulsar's shedding strategies replayed over the day's snapshots, on Spark, and the brokers' day summary.

The algorithms are the pure-Python modules of ``lb_pipeline.algorithms``; Spark applies them per cluster in time
order with ``applyInPandas``, since the strategies carry state from cycle to cycle. A snapshot's load holds for the
cycles Pulsar runs before the next snapshot (one every ``loadBalancerSheddingIntervalMinutes``,
``replay_clock``), so each shedder runs until its first cycle that unloads (``algorithms/shedding/held.py``); the
table says which in ``cycle_note``. The split triggers and boundaries are replayed in ``splits``.
"""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, ModularShedding
from lb_pipeline.algorithms.shedding.held import held_cycles
from lb_pipeline.algorithms.shedding.logged_history import LoggedHistory
from lb_pipeline.algorithms.shedding.isolation import isolation_policies
from lb_pipeline.algorithms.shedding.selection import ClusterState
from lb_pipeline.algorithms.shedding.transfer_inputs import DerivedLoadState, derive_from_modular, topic_counts
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.algorithms.shedding.warm_up import estimate_note
from lb_pipeline.formats.cluster import ISOLATION_SOURCE
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.transforms import grace_state as gs
from lb_pipeline.transforms import leader_state
from lb_pipeline.transforms import replay_clock as clock
from lb_pipeline.transforms import replay_inputs as ri
from lb_pipeline.transforms.exact import exact_avg
from lb_pipeline.transforms.replay_inputs import KEYS
from lb_pipeline.whatif import commands
from lb_pipeline.workers import collector_paused

SHEDDING_SCHEMA = (
    "cluster string, snapshot_ts timestamp, snapshot_date string, strategy string, broker string, bundle string, "
    "destination string, reason string, metric string, value double, threshold double, amount double, "
    "amount_unit string, bundle_load double, command string, cycle_note string, swap boolean, leader_ran boolean, "
    "unload_ts timestamp, warming_up boolean"
)  # swap: a bundle TransferShedder sends back in exchange (Pulsar checks no grace period for it); leader_ran: the
# strategy is the one the leader ran at that snapshot (model.at_start); unload_ts: the time of the cycle that unloaded
# (the snapshot's load held a cycle every loadBalancerSheddingIntervalMinutes: algorithms/shedding/held.py);
# warming_up: chosen before the strategy's state could have caught up with the leader's (algorithms/shedding/warm_up.py)


@collector_paused()  # 6.8 → 5.5 s of CPU for the day of preset M
def _replay_shedding(pdf: pd.DataFrame, configs: PulsarConfig | ClusterConfigs, seed: int) -> pd.DataFrame:
    modular, transfer, derived = {}, TransferShedder(), DerivedLoadState()
    ran: dict[str, int] = {}  # strategy → the cycles its state has run in this replay
    started: dict[str, object] = {}  # broker → its startTimestamp
    recorded = gs.RecordedUnloads(gs.from_logs(pdf))  # pdf: one cluster's inputs
    logged = LoggedHistory()  # ThresholdShedder's history where the leader logged it
    anchor = None  # what the leader's next cycles are scheduled from, where its log says (leader_cycle)
    out = []
    windows = {cluster: clock.cycle_windows(sorted(set(times)), configs, cluster, clock.shedding_interval)
               for cluster, times in pdf.groupby("cluster")["snapshot_ts"]}
    for (cluster, ts, day), snap in pdf.groupby(["cluster", "snapshot_ts", "snapshot_date"], sort=True):
        config = clock.config_at(configs, cluster, ts)
        leader_runs = configured_strategy(config)
        if clock.ms(ts) in ClusterConfigs.of_any(configs).leader_restarts(cluster):  # another leader, or it restarted:
            modular, transfer, ran = {}, TransferShedder(), {}  # its strategies' state was in the load manager it replaced
            logged.reset()
        # built at the first snapshot and where the leader runs a new load manager, which reads the placement
        # strategy only then (model.at_start); state carried across cycles
        modular = modular or {name: ModularShedding.named(name, config, seed) for name in MODULAR_STRATEGIES}
        brokers = ri.of_kind(snap, "broker", ri.BROKER)
        reports = ri.reports(brokers, ri.of_kind(snap, "bundle", ri.BUNDLE))
        derived.restarted(clock.restarted(brokers, started))  # a restarted broker's reporter starts afresh
        ownership = {r["bundle"]: r["broker"] for r in ri.meta(snap, "ownership", "[]")}
        recently = recorded.advance(clock.ms(ts), ownership, set(reports), ri.meta(snap, "logged_unloads", "[]"))
        for run in modular.values():  # what the cluster unloaded, not what this replay predicted before
            run.recently_unloaded = dict(recently)
        groups = ri.meta(snap, "groups", "{}")
        isolation = {name: json.loads(policy) for name, policy in ri.meta(snap, "isolation", "{}").items()}
        load = LoadData(reports, ri.bundle_data(ri.of_kind(snap, "average", ri.AVERAGE)))
        now = clock.ms(ts)
        cycles, interval = windows[cluster][ts], clock.shedding_interval(config)
        anchor = leader_state.latest_anchor(anchor, ri.meta(snap, "cycle_anchor_ms", "null"), now)
        at = leader_state.next_cycle(anchor, now, interval * 60_000)  # the leader's cycle after the snapshot
        state = ClusterState(list(reports), isolation_policies(isolation), groups, ri.meta(snap, "domains", "{}"),
                             frozenset(ri.meta(snap, "non_persistent", "[]")))
        runs = {name: (lambda at, run=run: run.run_cycle(load, config, at, state)) for name, run in modular.items()}
        threshold = modular["ThresholdShedder"].strategy
        taken = logged.apply(threshold, at, ri.meta(snap, "logged_history", "[]"), ri.meta(snap, "elected_ms", "null"),
                             list(reports), lambda: threshold.update_all(load.frame(config), config), interval * 60_000)
        # each broker's reporter runs every 5 s: the store TransferShedder reads is as they last wrote it
        topics = topic_counts(reports)
        runs["TransferShedder"] = lambda at: transfer.run_cycle(
            derive_from_modular(reports, config, at, derived, groups, ownership, topics, state.isolation,
                                state.broker_domain), config, at)
        held_note = f"the snapshot's load held for up to {cycles} shedding cycle(s) of {interval} min; {recorded.note}"
        if at != now:
            held_note += f"; the first at the leader's next cycle, {(at - now) / 1000:.1f} s after the snapshot"
        for name, run in runs.items():
            held = held_cycles(run, at, cycles, interval * 60_000)
            ran[name] = ran.get(name, 0) + held.cycle
            estimate = estimate_note(name, config, ran[name]) if name in modular else None
            note = f"{held_note}; {taken}" if name == "ThresholdShedder" and taken else held_note
            if name == "TransferShedder":  # the brokers a bundle leaves or joins clear their reporters' data
                for u in held.result.unloads:
                    derived.changed((u.broker, u.destination), at + (held.cycle - 1) * interval * 60_000)
            for u in held.result.unloads:
                ns, rng = u.bundle.rsplit("/", 1)
                # a broker whose history the leader logged: the leader's state, not an estimate
                guess = None if name == "ThresholdShedder" and u.broker in logged.anchored else estimate
                out.append({"cluster": cluster, "snapshot_ts": ts, "snapshot_date": day, "strategy": name,
                            "broker": u.broker, "bundle": u.bundle, "destination": u.destination, "reason": u.reason,
                            "metric": u.metric, "value": float(u.value), "threshold": float(u.threshold),
                            "amount": float(u.amount), "amount_unit": u.amount_unit, "bundle_load": float(u.bundle_load),
                            "command": commands.unload_bundle(ns, rng, u.destination),
                            "cycle_note": f"{note}; unloads at cycle {held.cycle}" + (f"; {guess}" if guess else ""),
                            "swap": u.swap, "leader_ran": name == leader_runs,
                            "unload_ts": ts + pd.Timedelta(milliseconds=at - now + (held.cycle - 1) * interval * 60_000),
                            "warming_up": guess is not None})
    return pd.DataFrame(out, columns=[c.split(" ")[0] for c in SHEDDING_SCHEMA.split(", ")])


def as_map(df: DataFrame, key: str, value: str, name: str) -> DataFrame:
    """Per snapshot: one JSON object ``key → value`` (small per-snapshot maps travel as JSON)."""
    return df.groupBy(*KEYS).agg(F.to_json(F.map_from_entries(F.collect_list(F.struct(key, value)))).alias(name))


def ownership_and_groups(ownership: DataFrame, namespaces: DataFrame) -> DataFrame:
    """Per snapshot: the ownership map and the anti-affinity groups, as JSON (small)."""
    own = ownership.groupBy(*KEYS).agg(F.to_json(F.collect_list(F.struct("bundle", "broker"))).alias("ownership"))
    return own.join(as_map(namespaces, "namespace", "anti_affinity_group", "groups"), KEYS, "full")


def non_persistent_bundles(topic_stats: DataFrame) -> DataFrame:
    """Per snapshot: the bundles serving a non-persistent topic, as a JSON array. A client looked such a topic up,
    and the lookup flags the leader's bundle (``NamespaceBundle.hasNonPersistentTopic``, set by
    ``findBundle`` and kept), so Pulsar places the bundle only on brokers serving non-persistent topics."""
    return (topic_stats.where(F.col("domain") == "non-persistent").groupBy(*KEYS)
            .agg(F.to_json(F.array_sort(F.collect_set("bundle"))).alias("non_persistent")))


def cluster_policies(ownership: DataFrame, namespaces: DataFrame, config_rows: DataFrame,
                     failure_domains: DataFrame, topic_stats: DataFrame | None = None) -> DataFrame:
    """Per snapshot: ownership, anti-affinity groups, isolation policies and failure domains, as JSON (small); with
    ``topic_stats`` (bronze topic rows), the bundles serving non-persistent topics (``non_persistent_bundles``)."""
    isolation = config_rows.where(F.col("source") == ISOLATION_SOURCE)
    # in the document's order, which Pulsar matches namespaces in (a lake written before ``position``: by name)
    position = F.coalesce("position", F.lit(0)) if "position" in config_rows.columns else F.lit(0)
    ordered = F.array_sort(F.collect_list(F.struct(position.alias("p"), "key", "value")))
    in_order = isolation.groupBy(*KEYS).agg(F.to_json(F.map_from_entries(
        F.transform(ordered, lambda s: F.struct(s["key"], s["value"])))).alias("isolation"))
    out = (ownership_and_groups(ownership, namespaces)
           .join(in_order, KEYS, "left")
           .join(as_map(failure_domains, "broker", "domain", "domains"), KEYS, "left"))
    return out if topic_stats is None else out.join(non_persistent_bundles(topic_stats), KEYS, "left")


def shedding_decisions(broker_reports: DataFrame, bundle_reports: DataFrame, time_averages: DataFrame,
                       ownership: DataFrame, namespaces: DataFrame, config_rows: DataFrame, failure_domains: DataFrame,
                       config: PulsarConfig | ClusterConfigs, seed: int = 0, events: DataFrame | None = None,
                       topic_stats: DataFrame | None = None) -> DataFrame:
    """Every shedding strategy replayed over the snapshots of each cluster, in time order, state carried over,
    destinations through Pulsar's placement path with the snapshot's isolation policies, groups and domains, under
    the cluster's own configuration. The grace period starts each snapshot from what the cluster unloaded:
    ``events`` (``bronze/lb_events``) where its logs were collected, else its ownership changes (``grace_state``).
    ``topic_stats`` (bronze topic rows) says which bundles serve non-persistent topics."""
    meta = cluster_policies(ownership, namespaces, config_rows, failure_domains, topic_stats)
    if events is not None:
        meta = meta.join(gs.logged_unloads(events), KEYS, "left").join(leader_state.logged_history(events), KEYS, "left")
    tagged = ri.typed_inputs(broker_reports, bundle_reports, time_averages, meta)
    return tagged.groupBy("cluster").applyInPandas(lambda pdf: _replay_shedding(pdf, config, seed), SHEDDING_SCHEMA)


def broker_load_summary(broker_usage: DataFrame, overloaded: Column) -> DataFrame:
    """Per broker over the day: mean and peak of the max usage, its driving resource, traffic, and the snapshots it
    was over ``overloaded`` (the loadBalancerBrokerOverloadedThresholdPercentage in force then, as a fraction)."""
    return broker_usage.groupBy("cluster", "snapshot_date", "broker").agg(
        F.count("*").alias("snapshots"), exact_avg("max_usage").alias("mean_max_usage"),
        F.max("max_usage").alias("peak_max_usage"), exact_avg("weighted_max_usage").alias("mean_weighted_max_usage"),
        F.mode("driving_resource", deterministic=True).alias("driving_resource"),
        exact_avg(F.col("msg_rate_in") + F.col("msg_rate_out")).alias("mean_msg_rate"),
        F.max(F.col("msg_rate_in") + F.col("msg_rate_out")).alias("peak_msg_rate"),
        exact_avg(F.col("msg_throughput_in") + F.col("msg_throughput_out")).alias("mean_throughput"),
        F.sum(F.when(F.col("max_usage") > 0.85, 1).otherwise(0)).alias("snapshots_over_85pct"),
        F.sum(F.when(F.col("max_usage") > overloaded, 1).otherwise(0)).alias("snapshots_overloaded"))
