"""How far to trust the night's figures: what the report must say besides the figures themselves.

* brokers that share a host report the host's CPU and NIC, not their own (usage-based strategies then see one
  machine twice); brokers whose usage never leaves 100 % are saturated or misreport a limit (a wrong NIC speed:
  ``loadBalancerOverrideBrokerNicSpeedGbps``);
* inputs that were approximated (the leader's bundle averages, when the snapshots do not carry them), and load
  reports that did not land (not collected, missing or quarantined): the replays see only the other brokers;
* how the replay of the configured strategy compares with the ownership changes the snapshots recorded;
* how the configuration changed during the night (each snapshot is replayed under the one in force then).
Spark aggregates; only small results reach the driver.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs, changed
from lb_pipeline.model.load_manager import LEGACY, configured_strategy
from lb_pipeline.model.names import shared_hosts
from lb_pipeline.simulation.balancers import STRATEGIES as REPLAYED  # Pulsar's five; a plugin's cannot be replayed
from lb_pipeline.snapshots.layout import local_broker_data
from lb_pipeline.transforms.accuracy import logged_moves, recorded_moves, replay_accuracy, stayed_up
from lb_pipeline.transforms.config import per_cluster


def usage_notes(usage) -> list[str]:
    if usage is None:
        return []
    notes = []
    brokers = sorted({r["broker"] for r in usage.select("broker").distinct().collect()})
    for host, on_it in shared_hosts(brokers).items():
        notes.append(f"{', '.join(on_it)} run on one host ({host}): each reports the host's CPU and NIC usage, "
                     "not its own, so usage-based strategies see the same load on every one of them.")
    saturated = [r["broker"] for r in usage.groupBy("broker").agg(F.min("max_usage").alias("low"))
                 .where(F.col("low") >= 1.0).orderBy("broker").collect()]
    if saturated:
        notes.append(f"{', '.join(saturated)} never reported less than 100 % usage: saturated, or a limit is wrong "
                     "(a NIC speed Pulsar detected wrongly: set loadBalancerOverrideBrokerNicSpeedGbps).")
    return notes


def inputs_note(snapshots, bundle_data, averages) -> str | None:
    """Which inputs of the replays were approximated and what that does at this snapshot cadence (None: none was).

    Measured with ``benchmarks/bench_input_approximation.py`` (true averages vs rebuilt ones, demo preset): with
    hourly snapshots every unload and split agrees; with a snapshot every 2 minutes UniformLoadShedder agrees on
    83 % and AvgShedder on 52 % of their unloads (the short-term averages they rank bundles by hold 10 samples)."""
    if snapshots is None or averages is None:
        return None
    stored = bundle_data.select("bundle").distinct().count() if bundle_data is not None else 0
    seeded = F.col("seeded_from") if "seeded_from" in averages.columns else F.lit(None).cast("string")
    quota, replayed = seeded == "resource-quota", seeded == "report-writes"
    bundles, from_quota, rows, from_writes, at = averages.agg(
        F.count_distinct("bundle"), F.count_distinct(F.when(quota, F.col("bundle"))), F.count(F.lit(1)),
        F.count(F.when(replayed, 1)), F.count_distinct(F.when(replayed, F.col("snapshot_ts")))).first()
    if from_writes and from_writes == rows:
        return (f"The leader's bundle averages (BundleData) were replayed from every load report the brokers wrote, "
                f"at each of the {at} snapshots, sample by sample as the leader takes them (collected with "
                f"collect --every and --metadata-store): not an estimate.")
    if stored >= bundles and not from_writes:
        return None
    times = sorted(r[0] for r in snapshots.select("snapshot_ts").distinct().collect())  # (a Spark job: only here)
    if from_writes:
        return (f"The leader's bundle averages (BundleData) were replayed from every load report the brokers wrote at "
                f"{at} of the {len(times)} snapshots ({from_writes} of {rows} bundle averages); elsewhere they are "
                "the stored BundleData brought up to the snapshot, or rebuilt from the snapshots where none was "
                "stored.")
    gaps = sorted((b - a).total_seconds() / 60 for a, b in zip(times, times[1:]))
    cadence = gaps[len(gaps) // 2] if gaps else None
    collected = "were not collected" if stored == 0 else f"were stored for {stored} of {bundles} bundles only"
    text = (f"The leader's bundle averages (BundleData) {collected}: the replays use averages rebuilt from the "
            f"{len(times)} snapshots of the day, each bundle's seeded with its first sample there"
            + (f" ({from_quota} from the resource quota an admin set for it, as the leader starts one)" if from_quota
               else "") + ".")
    if cadence is None:
        return text
    if cadence >= 10:
        return text + (f" With a snapshot every {cadence:.0f} min the short-term averages the shedders rank bundles by "
                       "are refilled between snapshots (on a generated history every unload agreed with the true "
                       "averages); the long-term ones, read by placement and split triggers, miss the earlier history.")
    return text + (f" With a snapshot every {cadence:.1f} min they are approximate: on a generated history at a "
                   "2-minute cadence, 83 % of UniformLoadShedder's and 52 % of AvgShedder's unloads agreed with those "
                   "from the true averages; OverloadShedder and ThresholdShedder are the least affected.")


def coverage_notes(snapshots, reports, shown: int = 6) -> list[str]:
    """One sentence per snapshot whose manifest lists brokers whose load report did not land: not collected (the
    manifest says so), missing without a word, or quarantined. The replays of that snapshot see the other brokers
    only, as Pulsar's leader never would (it holds every broker's report). One row per such snapshot reaches the
    driver; past ``shown`` snapshots the rest are counted."""
    if snapshots is None:
        return []
    listed = snapshots.select("snapshot_ts", F.size("brokers").alias("listed"), "missing_parts",
                              F.explode("brokers").alias("broker"))
    if reports is not None:
        listed = listed.join(reports.select("snapshot_ts", "broker").distinct(), ["snapshot_ts", "broker"], "left_anti")
    rows = (listed.groupBy("snapshot_ts", "listed").agg(F.sort_array(F.collect_list("broker")).alias("brokers"),
                                                        F.first("missing_parts").alias("missing_parts"))
            .orderBy("snapshot_ts").collect())
    notes = []
    for r in rows[:shown]:
        names = ", ".join(r["brokers"][:3]) + (f" and {len(r['brokers']) - 3} more" if len(r["brokers"]) > 3 else "")
        declared = set(r["missing_parts"] or [])
        why = ("the collector could not fetch them" if all(local_broker_data(b) in declared for b in r["brokers"])
               else "not collected, missing from the snapshot or quarantined")
        seen = ("see no broker and decide nothing there" if len(r["brokers"]) == r["listed"] else
                "see only the other brokers, and can neither unload from nor place on the ones they miss")
        notes.append(f"At {r['snapshot_ts']:%H:%M} UTC the load reports of {len(r['brokers'])} of {r['listed']} brokers "
                     f"did not land ({names}; {why}): the replays of that snapshot {seen}.")
    if len(rows) > shown:
        notes.append(f"The same at {len(rows) - shown} more snapshot(s) of the night.")
    return notes


def _hhmm(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%H:%M UTC")


def replay_vs_recorded(ownership, layouts, decisions, configs: ClusterConfigs, cluster: str,
                       reports=None, events=None) -> dict | None:
    """Precision and recall of the configured strategy's replay against what the cluster did: the leader's logged
    unloads where ``events`` (``bronze/lb_events``) holds any, else the recorded ownership changes; at each
    snapshot, the strategy configured then (``reports``: the load reports, which say which brokers stayed up)."""
    if ownership is None or layouts is None or decisions is None:
        return None
    names = [(ms, configured_strategy(c)) for ms, c in configs.changes(cluster)]
    names = [n for i, n in enumerate(names) if i == 0 or n[1] != names[i - 1][1]]
    if not any(name in REPLAYED for _, name in names):
        return None
    label = ", then ".join(name + (f" from {_hhmm(ms)}" if i else "")
                           + _not_replayed(name) for i, (ms, name) in enumerate(names))
    # the snapshots under a plugin's strategy are left out: it predicted nothing, and its moves are not the replay's
    replayed = per_cluster(configs, lambda c: configured_strategy(c) in REPLAYED, ts="snapshot_ts")
    up = stayed_up(ownership, reports) if reports is not None else None
    logged = events is not None and not events.where(F.col("cluster") == cluster).isEmpty()
    moves = logged_moves(events, ownership) if logged else recorded_moves(ownership, layouts, up)
    result = replay_accuracy(decisions, moves.where(replayed), per_cluster(configs, configured_strategy, ts="snapshot_ts"),
                             label, None if logged else up)
    result["against"] = "logged" if logged else "ownership"
    return result if result["predicted"] or result["moved"] else None


def _not_replayed(name: str) -> str:
    if name in REPLAYED:
        return ""
    return " (Pulsar's deprecated load manager, not replayed)" if name == LEGACY else " (a plugin, not replayed)"


def config_changes(configs: ClusterConfigs, cluster: str) -> list[dict]:
    """Each change of the cluster's load-balancer configuration during the night: when, and key: before → after."""
    out, history = [], configs.changes(cluster)
    for (_, before), (ms, after) in zip(history, history[1:]):
        out.append({"at": _hhmm(ms), "settings": [{"key": k, "before": b, "after": a}
                                                   for k, (b, a) in changed(before, after).items()]})
    return out


def anti_affinity_groups(layouts, latest) -> int:
    if layouts is None or latest is None:
        return 0
    return layouts.where((F.col("snapshot_ts") == F.lit(latest)) & F.col("anti_affinity_group").isNotNull()) \
        .select(F.lower("anti_affinity_group")).distinct().count()
