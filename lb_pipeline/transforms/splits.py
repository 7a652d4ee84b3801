"""Gold: Pulsar's split triggers and split algorithms replayed over the day's snapshots, on Spark: per cluster in
time order for the triggers (the extensible one counts hits from cycle to cycle through the window its snapshot's
load holds, ``algorithms/splits/held.py``; the modular BundleSplitterTask keeps nothing and runs once a snapshot),
per snapshot and flagged bundle for the boundaries (the topic rows of those bundles only)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms.splits import AUTOMATIC_ALGORITHMS, automatic_algorithm, split_boundary
from lb_pipeline.algorithms.splits.common import TopicLoad
from lb_pipeline.algorithms.splits.held import held_window
from lb_pipeline.algorithms.splits.triggers import ExtensibleSplitStrategy, modular_split_candidates
from lb_pipeline.model.bundles import Bundle, parse_range
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.transforms import replay_clock as clock
from lb_pipeline.transforms import replay_inputs as ri
from lb_pipeline.transforms.replay_inputs import KEYS
from lb_pipeline.whatif import commands
from lb_pipeline.workers import collector_paused


SPLIT_TRIGGER_SCHEMA = (
    "cluster string, snapshot_ts timestamp, snapshot_date string, trigger string, bundle string, broker string, "
    "selected boolean, reason string, detail string, skipped string, cycle_note string"
)


@collector_paused()  # 2.6 → 2.2 s
def _replay_split_triggers(pdf: pd.DataFrame, configs: PulsarConfig | ClusterConfigs) -> pd.DataFrame:
    strategies: dict[str, ExtensibleSplitStrategy] = {}
    started: dict[str, object] = {}  # broker → the startTimestamp its split strategy was created under
    out = []
    windows = {cluster: clock.cycle_windows(sorted(set(times)), configs, cluster, clock.split_interval)
               for cluster, times in pdf.groupby("cluster")["snapshot_ts"]}
    for (cluster, ts, day), snap in pdf.groupby(["cluster", "snapshot_ts", "snapshot_date"], sort=True):
        config = clock.config_at(configs, cluster, ts)
        brokers = ri.of_kind(snap, "broker", ri.BROKER)
        reports = ri.reports(brokers, ri.of_kind(snap, "bundle", ri.BUNDLE))
        for broker in clock.restarted(brokers, started):
            strategies.pop(broker, None)  # every broker runs its own SplitScheduler: a restarted one starts again
        counts = ri.meta(snap, "counts", "{}")
        averages = ri.bundle_data(ri.of_kind(snap, "average", ri.AVERAGE))
        rows = [("modular", d, clock.CYCLE_NOTE) for d in modular_split_candidates(reports, averages, counts, config)]
        # the extensible path's boundaries are computed in split_boundaries (the topics are not here); an algorithm
        # that needs none is asked, so that specified_positions_divide fails here as it does in Pulsar
        probe = automatic_algorithm(config)
        probe = probe if probe in ("range_equally_divide", "specified_positions_divide") else "range_equally_divide"
        cycles = windows[cluster][ts]
        held = held_window(strategies, {b: r["lastStats"] for b, r in reports.items()}, counts,
                           lambda b: split_boundary(probe, b, [], config), config, cycles)
        held_note = f"the snapshot's load held for {cycles} split cycle(s) of {clock.split_interval(config)} min"
        rows += [("extensible", h.decision, f"{held_note}; split at cycle {h.cycle}" if h.decision.selected
                  else f"{held_note}; as at the last") for h in held.values()]
        for trigger, d, note in rows:
            out.append({"cluster": cluster, "snapshot_ts": ts, "snapshot_date": day, "trigger": trigger,
                        "bundle": d.bundle, "broker": d.broker, "selected": d.selected, "reason": d.reason,
                        "detail": "; ".join(t.describe() for t in d.triggered), "skipped": d.skipped,
                        "cycle_note": note})
    frame = pd.DataFrame(out, columns=[c.split(" ")[0] for c in SPLIT_TRIGGER_SCHEMA.split(", ")])
    frame["skipped"] = frame["skipped"].astype(object).where(frame["skipped"].notna(), None)
    return frame


def split_triggers(broker_reports: DataFrame, bundle_reports: DataFrame, time_averages: DataFrame,
                   namespaces: DataFrame, config: PulsarConfig | ClusterConfigs) -> DataFrame:
    """Which bundles the modular (BundleSplitterTask) and the extensible (hit-count) triggers would split."""
    counts = namespaces.groupBy(*KEYS).agg(
        F.to_json(F.map_from_entries(F.collect_list(F.struct("namespace", "num_bundles")))).alias("counts"))
    tagged = ri.typed_inputs(broker_reports, bundle_reports, time_averages, counts)
    return tagged.groupBy("cluster").applyInPandas(lambda pdf: _replay_split_triggers(pdf, config), SPLIT_TRIGGER_SCHEMA)


SPLIT_SCHEMA = (
    "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, algorithm string, splits boolean, "
    "boundaries array<string>, children array<string>, child_topics array<int>, child_msg_rate array<double>, "
    "reason string, hottest_topic_share double, command string"
)


def _boundaries_for_bundle(pdf: pd.DataFrame, config: PulsarConfig | ClusterConfigs) -> pd.DataFrame:
    pdf = pdf.sort_values("topic", kind="stable", ignore_index=True)  # the sums the same whatever Spark's order
    first = pdf.iloc[0]
    config = clock.config_at(config, first["cluster"], first["snapshot_ts"])
    ns, rng = first["namespace"], first["bundle_range"]
    lower, upper = parse_range(rng)
    bundle = Bundle(ns, lower, upper)
    topics = [TopicLoad.from_stats(r.topic, {"msgRateIn": r.msg_rate_in, "msgRateOut": r.msg_rate_out,
                                             "msgThroughputIn": r.msg_throughput_in, "msgThroughputOut": r.msg_throughput_out})
              for r in pdf.itertuples(index=False)]
    total = sum(t.msg_rate for t in topics)
    share = max((t.msg_rate for t in topics), default=0.0) / total if total else 0.0
    out = []
    for alg in AUTOMATIC_ALGORITHMS:
        result = split_boundary(alg, bundle, topics, config)
        children = result.children
        out.append({"cluster": first["cluster"], "snapshot_ts": first["snapshot_ts"], "snapshot_date": first["snapshot_date"],
                    "bundle": bundle.name, "algorithm": alg, "splits": result.splits, "boundaries": result.boundaries_hex(),
                    "children": [c.range for c in children],
                    "child_topics": [sum(c.contains_hash(t.hash) for t in topics) for c in children],
                    "child_msg_rate": [sum(t.msg_rate for t in topics if c.contains_hash(t.hash)) for c in children],
                    "reason": result.failure or result.reason, "hottest_topic_share": share,
                    "command": commands.split_bundle(ns, rng, alg) if result.splits else None})
    return pd.DataFrame(out, columns=[c.split(" ")[0] for c in SPLIT_SCHEMA.split(", ")])


def split_boundaries(triggers: DataFrame, topic_stats: DataFrame, config: PulsarConfig | ClusterConfigs) -> DataFrame:
    """Each automatic algorithm's boundaries and children for every bundle a trigger flagged (topic rows of those
    bundles only, grouped per snapshot and bundle)."""
    hot = triggers.select(*KEYS, "bundle").distinct()
    topics = topic_stats.join(hot, [*KEYS, "bundle"], "left_semi")
    return topics.groupBy(*KEYS, "bundle").applyInPandas(lambda pdf: _boundaries_for_bundle(pdf, config), SPLIT_SCHEMA)
