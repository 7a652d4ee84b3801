"""Gold: the load model per cluster, and the closed-loop simulation runs in parallel on Spark.

The load model is fitted per cluster (``applyInPandas`` over the day's broker reports). The simulation runs one group
per (cluster, slot): the runs, planned on the driver, are shared out over as many slots as Spark has cores, and the
history rows (broker reports, bundle reports, the cluster's load model) are crossed with the slots, so Spark spreads
the runs over its cores, each slot rebuilds the history once, and no history reaches the driver.
Each group emits one row per cycle and one summary row; the two tables are cut from that one result. Topic-level rows
go along only for the bundles that pass a split threshold somewhere in the day (``split_topic_rows``): the simulated
splits divide those bundles' traffic by their topics' hashes, and no other bundle can split.
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.algorithms.splits.triggers import SplitLimits
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.simulation.bundle_set import PROFILE_COLUMNS, TopicProfiles
from lb_pipeline.transforms.gold import cluster_policies
from lb_pipeline.transforms.silver import topic_hash
from lb_pipeline.transforms.arrivals import arrivals
from lb_pipeline.transforms.simulation_inputs import arrivals_of, events_of, leader_rows
from lb_pipeline.transforms.replay_inputs import with_serves
from lb_pipeline.transforms.simulation_slots import Runs, run_cost, runs_of, slot_plan, spread_keys
from lb_pipeline.simulation.arrivals import Arrival
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.leader_averages import (COLUMNS as AVERAGE_COLUMNS, QUOTA_COLUMNS, leader_averages,
                                                   stored_every)
from lb_pipeline.simulation.load_model import MODEL_COLUMNS, RANGE_COLUMNS, LoadModel, fit_load_model
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.simulation.metrics import TIMESERIES_COLUMNS
from lb_pipeline.simulation.real_validation import score
from lb_pipeline.simulation.run import simulate
from lb_pipeline.simulation.sweep import run_list
from lb_pipeline.snapshots import leader_cycle
from lb_pipeline.workers import collector_paused

REPLAYED = "report-writes"  # silver/bundle_time_averages' seeded_from of the averages replayed from every write
LOAD_MODEL_SCHEMA = ("cluster string, snapshot_date string, broker string, resource string, source string, "
                     "intercept double, coef_rate double, coef_tput_in double, coef_tput_out double, r2 double, "
                     "residual_std double, samples int, censored int, max_rate double, max_tput_in double, "
                     "max_tput_out double, beyond_coef_rate double, beyond_coef_tput_in double, "
                     "beyond_coef_tput_out double")
RUN_KEYS = "cluster string, snapshot_date string, run_id string, strategy string, params string, seed int"
SUMMARY = ("usage_std_mean double, usage_std_unpinned_mean double, peak_usage double, pinned_broker_minutes long, "
           "max_over_mean_p95 double, overloaded_broker_minutes long, idle_broker_minutes long, "
           "unloads_total long, placements_total long, splits long, ping_pongs long, grace_violations long, "
           "reconnections_total long, events int, "
           "events_converged int, minutes_to_converge_max double, cycles int, recorded_unloads int, "
           "predicted_unloads int, matched_unloads int, destinations_agree int, precision double, recall double, "
           "validated_against string, "
           "notes string")
CYCLE = ("ts timestamp, snapshot int, interpolated boolean, brokers int, bundles int, usage_mean double, "
         "usage_std double, usage_max double, max_over_mean double, overloaded_brokers int, idle_brokers int, "
         "unloads int, placements int, reconnections long, rate_recorded double, rate_served double, "
         "unowned_bundles int, balanced boolean, pinned_brokers int, usage_std_unpinned double")
# the closed loop of the strategy the cluster ran, scored against what its leader logged (simulation.real_validation)
VALIDATION = ("snapshots int, logged_unloads int, simulated_unloads int, logged_splits int, simulated_splits int, "
              "matched_splits int, "
              "usage_mae_points double, usage_max_error_points double, model_mae_points double, "
              # unloads simulated before the strategy's state could have caught up with the leader's (warm_up.py)
              "warm_up_cycles int, warming_up int, warming_up_matched int, settled_precision double, "
              "settled_recall double, "
              # the bundles of brokers that stopped, owned again by the next snapshot, and the loop's on that broker;
              # how far its count and msg rate per broker were from the record's (simulation.orphan_placements)
              "orphans_lost int, orphans_reowned int, orphans_agree int, orphans_count_off int, "
              "orphans_traffic_off double, "
              # where the loop first parted from the record: the earliest unload made on one side only
              "first_difference_ts timestamp")
OUTPUT_SCHEMA = f"{RUN_KEYS}, kind string, {CYCLE}, {SUMMARY}, {VALIDATION}"
VALIDATION_RUN = "closed-loop-vs-log"  # the run_id of a cluster's validation row
NOT_SIMULATED = "not simulated: "  # the notes of a run whose history could not be simulated, before the reason
_TOTALS = {"unloads": "unloads_total", "placements": "placements_total", "reconnections": "reconnections_total"}
_BROKER_COLS = ["msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out", "start_timestamp_ms",
                "last_update_ms", "broker_version", "load_manager", "persistent_topics_enabled",
                "non_persistent_topics_enabled",
                *(f"{r}_{x}" for r in ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")
                  for x in ("usage", "limit"))]
_BUNDLE_COLS = ["bundle", "msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out", "producer_count",
                "consumer_count", "topics"]


def _names(schema: str) -> list[str]:
    return [c.strip().split(" ")[0] for c in schema.split(",")]


def load_model(broker_reports: DataFrame) -> DataFrame:
    """``gold/load_model``: one fit per (cluster, broker, resource) with its quality."""
    def fit(pdf: pd.DataFrame) -> pd.DataFrame:
        table = fit_load_model(pdf)
        return table.assign(cluster=pdf["cluster"].iloc[0], snapshot_date=pdf["snapshot_date"].max())[_names(LOAD_MODEL_SCHEMA)]
    return broker_reports.groupBy("cluster").applyInPandas(fit, LOAD_MODEL_SCHEMA)


def policy_rows(ownership: DataFrame, namespaces: DataFrame, config_rows: DataFrame,
                failure_domains: DataFrame, topic_stats: DataFrame | None = None) -> DataFrame:
    """Per snapshot: anti-affinity groups, isolation policies and failure domains as JSON (small maps); with
    ``topic_stats``, the bundles serving non-persistent topics (a JSON array)."""
    rows = cluster_policies(ownership, namespaces, config_rows, failure_domains, topic_stats)
    flagged = ["non_persistent"] if topic_stats is not None else []
    return rows.select("cluster", "snapshot_ts", "snapshot_date", F.unix_millis("snapshot_ts").alias("t_ms"), "groups",
                       "isolation", "domains", *flagged)


def _simulate_slot(pdf: pd.DataFrame, configs: ClusterConfigs, plans: dict, slot: int) -> pd.DataFrame:
    """One cluster's history, rebuilt once, and the runs of this slot on it one after the other (as the CLI does):
    shipping the history to a task and rebuilding it cost about 7 s a run on M, more than a baseline's simulation.
    ``plans``: per cluster (None: any other), its runs per slot."""
    cluster = pdf["cluster"].iloc[0]
    config, plan = configs.of(cluster), plans.get(cluster, plans[None])
    runs = plan[slot] if slot < len(plan) else []
    if not runs and slot:
        return _frame(pd.DataFrame())
    day = pdf["snapshot_date"].dropna().max()
    brokers, bundles = (pdf[pdf["kind"] == k] for k in ("broker", "bundle"))
    keys = [{"cluster": cluster, "snapshot_date": day, "run_id": r["run_id"], "strategy": r["strategy"],
             "params": json.dumps(r["params"], sort_keys=True), "seed": int(r["seed"])} for r in runs]
    check = {"cluster": cluster, "snapshot_date": day, "run_id": VALIDATION_RUN, "strategy": configured_strategy(config),
             "params": "{}", "seed": 0, "kind": "validation"}
    try:
        history = build_history(cluster, brokers, bundles, gaps="longest")
    except ValueError as exc:  # a history too broken to simulate: say so in each run's row, the night goes on
        return _frame(pd.DataFrame([{**k, "kind": "run", "cycles": 0, "notes": f"{NOT_SIMULATED}{exc}"} for k in keys]
                                   + ([{**check, "notes": f"{NOT_SIMULATED}{exc}"}] if slot == 0 else [])))
    model_rows = pdf.loc[pdf["kind"] == "model", [c for c in MODEL_COLUMNS + RANGE_COLUMNS if c in pdf.columns]]
    model = LoadModel.from_table(model_rows, history.brokers)
    averages, written = leader_rows(pdf)
    quotas = (pdf.loc[pdf["kind"] == "quota", ["bundle", "snapshot_ts", *QUOTA_COLUMNS]]
              if "bandwidth_in" in pdf.columns else None)
    events, arrived = events_of(pdf), arrivals_of(pdf)
    leader = leader_averages(history, averages, events, written, stored_every(config), quotas)
    policies = Policies.from_rows(pdf[pdf["kind"] == "policy"].to_dict("records"))
    topics = pdf[pdf["kind"] == "topic"]
    profiles = TopicProfiles(history, topics)
    out = [pd.DataFrame([{**check, **_validation(history, model_rows, config, policies, topics, events, day, leader,
                                                 arrived)}])] \
        if slot == 0 else []  # the first slot of each cluster also scores the closed loop against the leader's log
    for run, k in zip(runs, keys):
        with collector_paused():
            result = simulate(history, model, config, run["strategy"], run["params"], int(run["seed"]), policies,
                              profiles=profiles, ran=configs, residuals=True, leader=leader, events=events)
        totals = {_TOTALS.get(name, name): v for name, v in result.summary.items()}
        out += [result.timeseries.assign(**k, kind="cycle", ts=pd.to_datetime(result.timeseries["ts"], unit="ms", utc=True)),
                pd.DataFrame([{**k, "kind": "run", **totals, "notes": "; ".join(result.notes)}])]
    with warnings.catch_warnings():
        # pandas 2 warns that all-NA columns will count toward a concatenation's dtypes (the validation row has
        # none of the runs' figures): the output's Arrow schema sets every column's type, so the rows written are
        # the same either way, and the warning reached the console of every night
        warnings.filterwarnings("ignore", "The behavior of DataFrame concatenation with empty or all-NA",
                                FutureWarning)
        return _frame(pd.concat(out, ignore_index=True))


def _validation(history, model_rows, config, policies, topics, rows: list[dict] | None, day: str, leader,
                arrived: list[Arrival]) -> dict:
    """The columns of a cluster's validation row (``real_validation.score``; ``rows``: the leader's logged events,
    ``arrived``: the bundles' arrivals in the report writes); a failure is the row's note."""
    try:
        with collector_paused():
            r = score(history, model_rows, config, policies, topics, rows, day, leader=leader, arrivals=arrived)
    except (ValueError, KeyError, IndexError) as exc:
        return {"notes": f"not validated: {exc}"}
    finally:
        history.imposed = {}  # the moves the validation imposed are not the runs' history
    scored = VALIDATION_COLUMNS[3:-2]  # after cluster, snapshot_date and strategy (the check's keys); before notes
    first = r["first_difference_ms"]
    return {**{c: r[c] for c in scored}, "notes": "; ".join(r["notes"]),
            "first_difference_ts": None if first is None else pd.Timestamp(first, unit="ms", tz="UTC")}


def _frame(out: pd.DataFrame) -> pd.DataFrame:
    for c in _names(OUTPUT_SCHEMA):
        if c not in out:
            out[c] = None
    return out[_names(OUTPUT_SCHEMA)]


def split_topic_rows(bundle_reports: DataFrame, topic_stats: DataFrame, config: PulsarConfig | ClusterConfigs,
                     runs: Runs) -> DataFrame:
    """Topic rows (hash and traffic) of the bundles past a split threshold at some snapshot of the day, under the
    lowest thresholds any cluster's configuration or any run uses: a bundle's long-term averages never exceed its
    highest recorded traffic, and a child never carries more than its parent, so no other bundle can be split in any
    run."""
    configs = ClusterConfigs.of_any(config).distinct()
    lim = SplitLimits.lowest([SplitLimits.from_config(c) for c in configs] + [
        SplitLimits.from_config(c.overridden(**{k: str(v) for k, v in r["params"].items()}))
        for c in configs for r in runs_of(runs, c)])
    col = F.col
    past = lim.past(col("topics"), col("producer_count") + col("consumer_count"), col("msg_rate_in") + col("msg_rate_out"),
                    col("msg_throughput_in") + col("msg_throughput_out"))
    hot = bundle_reports.where((col("topics") >= 2) & past).select("cluster", "bundle").distinct()
    return (topic_stats.join(F.broadcast(hot), ["cluster", "bundle"], "left_semi")
            .select("cluster", "snapshot_ts", "snapshot_date", "bundle", topic_hash().alias("topic_hash"),
                    *PROFILE_COLUMNS))


def simulate_runs(spark, broker_reports: DataFrame, bundle_reports: DataFrame, model: DataFrame, policies: DataFrame,
                  config: PulsarConfig | ClusterConfigs, runs: Runs, topic_stats: DataFrame | None = None,
                  events: DataFrame | None = None, bundle_data: DataFrame | None = None,
                  snapshots: DataFrame | None = None, quotas: DataFrame | None = None,
                  time_averages: DataFrame | None = None, report_writes: DataFrame | None = None) -> DataFrame:
    """Every run on every cluster's history, under the cluster's own configuration: cycle rows (``kind = 'cycle'``)
    and one summary row each, and per cluster one ``validation`` row: the closed loop of the strategy it ran,
    scored against the unloads and splits its leader logged. ``runs``: the runs, or a function of a cluster's
    configuration that gives its runs (a sweep starts from the cluster's own values). ``topic_stats``: bronze topic
    rows, for the simulated splits (``split_topic_rows``); ``events``: ``bronze/lb_events`` rows; ``bundle_data`` and
    ``snapshots``: ``bronze/bundle_data`` and ``bronze/snapshots``, the leader's stored averages and when it wrote
    them (``simulation.leader_averages``); ``quotas``: ``bronze/resource_quotas``, what a bundle's averages start
    from where the leader starts them afresh; ``time_averages``: ``silver/bundle_time_averages``, whose rows replayed
    from every report write (``seeded_from`` = ``report-writes``) are the leader's own averages at their snapshots;
    ``report_writes``: ``bronze/report_writes``, whose bundles' arrivals on a new owner time the moves the
    validation's history imposes (``transforms.arrivals``)."""
    configs, cores = ClusterConfigs.of_any(config), spark.sparkContext.defaultParallelism
    plans = {}
    for cluster in (None, *configs):
        c = configs.of(cluster)
        todo = runs_of(runs, c)
        plans[cluster] = slot_plan(todo, min(len(todo), cores), lambda r, c=c: run_cost(r, c))
    n = max(len(p) for p in plans.values())
    slots = spread_keys(spark, n) if n else []
    index = {k: i for i, k in enumerate(slots)}
    rows = (with_serves(broker_reports).select("cluster", "snapshot_ts", "snapshot_date", "broker", *_BROKER_COLS)
            .withColumn("kind", F.lit("broker"))
            .unionByName(bundle_reports.select("cluster", "snapshot_ts", "snapshot_date", "broker", *_BUNDLE_COLS)
                         .withColumn("kind", F.lit("bundle")), allowMissingColumns=True)
            .unionByName(model.withColumn("kind", F.lit("model")), allowMissingColumns=True)
            .unionByName(policies.withColumn("kind", F.lit("policy")), allowMissingColumns=True))
    if topic_stats is not None:
        rows = rows.unionByName(split_topic_rows(bundle_reports, topic_stats, config, runs)
                                .withColumn("kind", F.lit("topic")), allowMissingColumns=True)
    if bundle_data is not None:  # the leader's stored BundleData: its averages where the simulation agrees with it
        rows = rows.unionByName(bundle_data.select("cluster", "snapshot_date", *AVERAGE_COLUMNS)
                                .withColumn("kind", F.lit("average")), allowMissingColumns=True)
    if time_averages is not None and "seeded_from" in time_averages.columns:
        rows = rows.unionByName(time_averages.where(F.col("seeded_from") == REPLAYED)
                                .select("cluster", "snapshot_date", *AVERAGE_COLUMNS)
                                .withColumn("kind", F.lit("replayed")), allowMissingColumns=True)
    if report_writes is not None:
        rows = rows.unionByName(arrivals(report_writes).withColumn("kind", F.lit("arrival")), allowMissingColumns=True)
    if quotas is not None:
        rows = rows.unionByName(quotas.select("cluster", "snapshot_ts", "snapshot_date", "bundle", *QUOTA_COLUMNS)
                                .withColumn("kind", F.lit("quota")), allowMissingColumns=True)
    if snapshots is not None and "bundle_data_written_ms" in snapshots.columns:
        rows = rows.unionByName(snapshots.select("cluster", "snapshot_ts", "snapshot_date", "bundle_data_written_ms")
                                .withColumn("kind", F.lit("written")), allowMissingColumns=True)
    if events is not None:  # the unloads and splits the leader logged, its cycles and elections, the brokers' report
        # writes (the leader's sampling cadence where no stored BundleData shows it): a few rows a cycle
        kinds = ("unload", "split-done", "leader", "report-written", *leader_cycle.CYCLE_KINDS)
        rows = rows.unionByName(events.where(F.col("kind").isin(*sorted(set(kinds))))
                                .select("cluster", "snapshot_date", "event_ts", F.col("kind").alias("event"), "bundle",
                                        "from_broker", "to_broker",
                                        # ThresholdShedder's history, where the leader logged it (logged_history)
                                        F.when(F.col("kind") == "shed-attempt", F.col("detail")).alias("detail"))
                                .withColumn("kind", F.lit("event")),
                                allowMissingColumns=True)
    # one task per slot, slot k on partition k (a hash of the key had put two runs in one task, leaving another
    # empty: on L one core idled while the other ran both); grouping by the slot too keeps it the only shuffle
    slot_df = spark.createDataFrame([(k,) for k in slots], "_slot int")
    groups = rows.crossJoin(F.broadcast(slot_df)).repartition(max(1, len(slots)), "_slot")
    return groups.groupBy("_slot", "cluster").applyInPandas(
        lambda pdf: _simulate_slot(pdf, configs, plans, index[int(pdf["_slot"].iloc[0])]), OUTPUT_SCHEMA)


def timeseries_table(result: DataFrame) -> DataFrame:
    return result.where(F.col("kind") == "cycle").select(*_names(RUN_KEYS), *_names(CYCLE))


VALIDATION_COLUMNS = ["cluster", "snapshot_date", "strategy", "snapshots", "brokers", "logged_unloads",
                      "simulated_unloads", "matched_unloads", "destinations_agree", "precision", "recall",
                      "logged_splits", "simulated_splits", "matched_splits", "usage_mae_points", "usage_max_error_points",
                      "model_mae_points", "warm_up_cycles", "warming_up", "warming_up_matched", "settled_precision",
                      "settled_recall", "orphans_lost", "orphans_reowned", "orphans_agree", "orphans_count_off",
                      "orphans_traffic_off", "first_difference_ts", "notes"]


def validation_table(result: DataFrame) -> DataFrame:
    """``gold/simulation_validation``: per cluster, the closed loop of the strategy it ran against its leader's log
    (unload precision and recall, splits, per-broker usage error; null where nothing was logged to score)."""
    return result.where(F.col("kind") == "validation").select(*VALIDATION_COLUMNS)


def runs_table(result: DataFrame) -> DataFrame:
    back = {v: k for k, v in _TOTALS.items()}
    return result.where(F.col("kind") == "run").select(*_names(RUN_KEYS),
                                                       *(F.col(c).alias(back.get(c, c)) for c in _names(SUMMARY)))
