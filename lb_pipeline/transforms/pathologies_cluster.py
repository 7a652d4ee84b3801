"""``gold/pathologies``, the detectors on the cluster's shape (ownership, namespaces, domains, versions), and the
table itself: every detector of both modules, ordered by severity."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.names import SYSTEM_NAMESPACE_PATTERN
from lb_pipeline.transforms.exact import exact_avg
from lb_pipeline.transforms import pathologies as p
from lb_pipeline.transforms.pathologies import KEYS, findings
from lb_pipeline.transforms.config import per_cluster
from lb_pipeline.transforms.silver import hex_to_long


def ping_pong(ownership: DataFrame, within: int = 6) -> DataFrame:
    """A bundle that goes back to a broker it left within ``within`` snapshots, in the recorded ownership: the
    strategy (or restarts) moved it away and something moved it back, and its clients reconnected twice. Counted as
    moves: each move back once (however many earlier departures it answers), beside all the bundle's moves."""
    owners = ownership.groupBy(*KEYS, "bundle").agg(F.min("broker").alias("owner"))
    w = Window.partitionBy("cluster", "snapshot_date", "bundle").orderBy("snapshot_ts")
    seq = owners.withColumn("i", F.row_number().over(w)).withColumn("previous", F.lag("owner").over(w))
    moves = seq.where(F.col("previous").isNotNull() & (F.col("owner") != F.col("previous")))
    pairs = moves.alias("b").join(moves.alias("a"), (F.col("a.cluster") == F.col("b.cluster"))
                                  & (F.col("a.snapshot_date") == F.col("b.snapshot_date"))
                                  & (F.col("a.bundle") == F.col("b.bundle")) & (F.col("b.owner") == F.col("a.previous"))
                                  & (F.col("b.i") > F.col("a.i")) & (F.col("b.i") - F.col("a.i") <= within))
    rows = (pairs.groupBy("b.cluster", "b.snapshot_date", "b.snapshot_ts", "b.bundle", "b.owner", "b.previous")
            .agg(F.max("a.snapshot_ts").alias("left_at")))  # the move back, once, and when it had left
    bundle = Window.partitionBy("cluster", "snapshot_date", "bundle")
    total = moves.groupBy("cluster", "snapshot_date", "bundle").agg(F.count(F.lit(1)).alias("moves"))
    rows = rows.join(total, ["cluster", "snapshot_date", "bundle"]).withColumn("returns", F.count("*").over(bundle))
    return findings(
        rows, "ping-pong in recorded ownership", F.col("bundle"),
        F.when(F.col("returns") >= 2, "warning").otherwise("info"),
        F.concat(F.lit("moved "), F.col("moves").cast("string"), F.lit(" time(s), "), F.col("returns").cast("string"),
                 F.lit(" of them back to a broker it had left within "), F.lit(str(within)), F.lit(" snapshots")),
        F.lit("Lengthen loadBalancerSheddingGracePeriodMinutes, widen the strategy's band "
              "(loadBalancerBrokerThresholdShedderPercentage) or raise loadBalancerSheddingConditionHitCountThreshold; "
              "if restarts caused it, restart brokers one at a time with time to rebalance in between."),
        ["snapshot_ts", "bundle", "previous", "owner", "left_at"])


def few_bundles(layouts: DataFrame, snapshots: DataFrame) -> DataFrame:
    """A namespace with fewer bundles than live brokers: some brokers can never hold any of its load. Not Pulsar's
    own namespaces (``pulsar/system``, each broker's heartbeat and SLA-monitor namespace): one bundle by design."""
    live = snapshots.select(*KEYS, F.size("brokers").alias("brokers"))
    rows = (layouts.where(~F.col("namespace").rlike(SYSTEM_NAMESPACE_PATTERN))
            .join(live, KEYS).where(F.col("num_bundles") < F.col("brokers")))
    last = F.max("snapshot_ts").over(Window.partitionBy("cluster", "snapshot_date"))
    rows = rows.withColumn("_last", last).where(F.col("snapshot_ts") == F.col("_last"))  # the night's last layout decides
    bounds = F.col("boundaries")
    width = lambda i: hex_to_long(bounds[i + 1]) - hex_to_long(bounds[i])  # noqa: E731
    widest = F.aggregate(F.sequence(F.lit(0), F.size(bounds) - 2), F.lit(0),
                         lambda best, i: F.when(width(i) > width(best), i).otherwise(best))
    rows = rows.withColumn("widest", F.concat(bounds[widest], F.lit("_"), bounds[widest + 1]))
    return findings(
        rows, "fewer bundles than brokers", F.col("namespace"), F.lit("info"),
        F.concat(F.col("num_bundles").cast("string"), F.lit(" bundles for "), F.col("brokers").cast("string"),
                 F.lit(" brokers: uneven by construction")),
        F.concat(F.lit("Split its widest bundle, `pulsar-admin namespaces split-bundle --bundle "),
                 p.shell_quoted(F.col("widest")), F.lit(" --unload "), p.shell_quoted(F.col("namespace")), F.lit(
            "`, until it has a bundle per broker (or create namespaces with defaultNumberOfNamespaceBundles at least "
            "the broker count; loadBalancerAutoBundleSplitEnabled=true splits only busy bundles)")),
        ["snapshot_ts", "namespace", "num_bundles", "brokers"])


def bundle_cap(layouts: DataFrame, config: PulsarConfig | ClusterConfigs) -> DataFrame:
    """A namespace at or over ``loadBalancerNamespaceMaximumBundles`` (at the night's last layout, under the cluster's
    own cap): the split trigger skips its bundles, however hot they run. Not Pulsar's own namespaces."""
    cap = per_cluster(config, lambda c: c.get_int("loadBalancerNamespaceMaximumBundles"), ts="snapshot_ts")
    last = F.max("snapshot_ts").over(Window.partitionBy("cluster", "snapshot_date"))
    rows = (layouts.where(~F.col("namespace").rlike(SYSTEM_NAMESPACE_PATTERN)).withColumn("cap", cap)
            .withColumn("_last", last).where((F.col("snapshot_ts") == F.col("_last"))
                                             & (F.col("num_bundles") >= F.col("cap"))))
    return findings(
        rows, "namespace at the bundle cap", F.col("namespace"), F.lit("warning"),
        F.concat(F.col("num_bundles").cast("string"), F.lit(" bundles, "),
                 F.when(F.col("num_bundles") > F.col("cap"), F.lit("over")).otherwise(F.lit("at")),
                 F.lit(" loadBalancerNamespaceMaximumBundles="), F.col("cap").cast("string"),
                 F.lit(": no bundle of it is split automatically any more")),
        F.lit("Raise loadBalancerNamespaceMaximumBundles (a dynamic key) if its bundles must still split, or spread "
              "its topics over more namespaces; the capacity forecast shows how soon its bundles reach the split "
              "limits."),
        ["snapshot_ts", "namespace", "num_bundles", "cap"])


def unbalanced_domains(failure_domains: DataFrame, usage: DataFrame, ratio: float = 1.5, gap: float = 0.2) -> DataFrame:
    """Failure domains far apart in broker count (the larger holds more than ``ratio`` times the smaller) or in mean
    usage (``gap`` apart): losing the big one, or the hot one, hurts more than the design assumed."""
    per = (failure_domains.join(usage.select(*KEYS, "broker", "max_usage"), [*KEYS, "broker"], "left")
           .groupBy(*KEYS, "domain").agg(F.count("broker").alias("brokers"), exact_avg("max_usage").alias("usage")))
    spread = per.groupBy(*KEYS).agg(
        F.count("domain").alias("domains"), F.max("brokers").alias("most"), F.min("brokers").alias("fewest"),
        F.max("usage").alias("hottest"), F.min("usage").alias("coolest"),
        F.to_json(F.map_from_entries(F.collect_list(F.struct("domain", "brokers")))).alias("brokers_per_domain"))
    rows = spread.where((F.col("domains") > 1) & ((F.col("most") >= ratio * F.col("fewest"))
                                                  | (F.col("hottest") - F.col("coolest") >= gap)))
    return findings(
        rows, "unbalanced failure domains", F.col("cluster"), F.lit("warning"),
        F.concat(F.lit("brokers per domain "), F.col("brokers_per_domain"), F.lit(", mean usage "),
                 p._pct("coolest"), F.lit("–"), p._pct("hottest"), F.lit(" %")),
        F.lit("Even out the domains so that losing any one leaves the same capacity (no command here: which broker "
              "belongs to which domain is a matter of racks and zones; set each domain's brokers with clusters "
              "update-failure-domain); with failureDomainsEnabled=true placement spreads bundles over them."),
        ["snapshot_ts", "brokers_per_domain", "coolest", "hottest"], min_snapshots=2)


def mixed_versions(reports: DataFrame) -> DataFrame:
    """Brokers on different Pulsar versions in one snapshot (a stalled rolling upgrade): load reports and
    strategies differ between releases."""
    per = reports.groupBy(*KEYS).agg(
        F.count_distinct("broker_version").alias("versions"),
        F.to_json(F.map_from_entries(F.collect_list(F.struct("broker", "broker_version")))).alias("by_broker"))
    rows = per.where(F.col("versions") > 1)
    return findings(
        rows, "brokers on different Pulsar versions", F.col("cluster"), F.lit("warning"),
        F.concat(F.col("versions").cast("string"), F.lit(" versions: "), F.col("by_broker")),
        F.lit("Finish the rolling upgrade; until then compare the replays under each version profile "
              "(LB_PULSAR_PROFILE) since strategies differ between releases."),
        ["snapshot_ts", "versions", "by_broker"])


def anti_affinity_placements(audit: DataFrame) -> DataFrame:
    """Bundles of an anti-affinity group moved onto a broker Pulsar's placement would not have picked
    (``gold/anti_affinity_audit`` rows of scope ``placement``), one finding per group. Uneven spreads Pulsar's own
    placement leaves (more namespaces than brokers, a broker that was down) are not findings."""
    rows = audit.where(F.col("scope") == "placement")
    return findings(
        rows, "anti-affinity placement Pulsar would not make", F.col("group_name"), F.lit("warning"),
        F.col("message"),
        F.lit("Something other than Pulsar's placement moved these bundles (an unload with a destination broker, an "
              "assignment by hand, or a load manager without the anti-affinity filter): unload each such bundle "
              "without a destination so Pulsar places it, and find who moves bundles by hand."),
        ["snapshot_ts", "place", "namespaces", "namespace_count", "least_count", "message"])


def pathologies(usage: DataFrame, reports: DataFrame, bundle_stats: DataFrame, ownership: DataFrame,
                layouts: DataFrame, snapshots: DataFrame, failure_domains: DataFrame,
                config: PulsarConfig | ClusterConfigs, audit: DataFrame | None = None) -> DataFrame:
    """Every finding of the night (the report orders them by severity), each cluster's under its own configuration.
    ``audit``: ``gold/anti_affinity_audit`` of the night."""
    owned = p.owned_load(bundle_stats)
    parts = [p.idle_brokers(usage, reports, config, owned, p.pinning_bundles(bundle_stats)),
             p.broken_reporter(usage, owned),
             p.idle_shedding(usage, ownership, config),
             p.unsplittable_bundles(bundle_stats, config), p.broken_usage(usage),
             p.ignored_resources(usage, config), ping_pong(ownership), few_bundles(layouts, snapshots),
             bundle_cap(layouts, config),
             unbalanced_domains(failure_domains, usage), mixed_versions(reports),
             anti_affinity_placements(audit) if audit is not None else None]
    out = parts[0]
    for df in parts[1:]:
        if df is not None:
            out = out.unionByName(df)
    return out
