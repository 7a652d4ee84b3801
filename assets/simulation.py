"""Stage ``simulation``: the load model, every strategy closed-loop over the day against the baselines, and the
recommended strategy and thresholds (gold)."""

import dagster as dg

from assets.common import day_configs, key, options, write_table
from assets.resources import LakeResource, SparkResource
from assets.resume import resumable
from lb_pipeline.transforms import recommendations as recs
from lb_pipeline.transforms import simulation as sim


class SweepConfig(dg.Config):
    """How wide the night's sweep is: parameter sets per strategy (the cluster's own first) and seeds per set."""

    sets_per_strategy: int = 1
    seeds: int = 1


@dg.asset(key=["gold", "load_model"], deps=[key("bronze", "broker_reports")], **options("simulation"))
@resumable
def load_model(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Per broker and resource: how usage answers the traffic served (robust fit), with R² and residual spread."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    written, meta = write_table(s, lk, sim.load_model(lk.read(s, "bronze", "broker_reports", day)), "gold", "load_model", day)
    meta["fits_from_cluster_pool"] = dg.MetadataValue.int(written.where("source = 'cluster'").count())
    return dg.MaterializeResult(metadata=meta)


_SIM_OPTIONS = {k: v for k, v in options("simulation").items() if k != "kinds"}  # multi_asset: kinds go on the specs
# bundle_data, snapshots and lb_events: the leader's stored averages, when it wrote them, and how often the brokers
# reported (``simulation.leader_averages``); lb_events also what its leader logged, for the validation;
# resource_quotas what a bundle's averages start from where the leader starts them afresh; bundle_time_averages
# the leader's own averages where every report write was kept; report_writes when a move the history imposes
# reached the leader (the validation)
_SIM_DEPS = [key("bronze", t) for t in ("broker_reports", "bundle_reports", "topic_stats", "config", "ownership",
                                         "namespaces", "failure_domains", "bundle_data", "snapshots", "lb_events",
                                         "resource_quotas", "report_writes")] \
    + [key("silver", "bundle_time_averages"), key("gold", "load_model")]


@dg.multi_asset(specs=[dg.AssetSpec(["gold", "simulation_runs"], deps=_SIM_DEPS, kinds={"spark", "delta"}),
                       dg.AssetSpec(["gold", "simulation_timeseries"], deps=_SIM_DEPS, kinds={"spark", "delta"}),
                       dg.AssetSpec(["gold", "simulation_validation"], deps=_SIM_DEPS, kinds={"spark", "delta"},
                                    description="Per cluster: the closed loop of the strategy it ran, scored against "
                                                "the unloads and splits its leader logged and its brokers' usage.")],
                **_SIM_OPTIONS)
@resumable
def simulation(context: dg.AssetExecutionContext, config: SweepConfig, spark: SparkResource, lake: LakeResource):
    """Every strategy and baseline simulated cycle by cycle over the day: one summary row per run, one row per cycle;
    and per cluster the closed loop of its own strategy scored against what its leader logged."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    cfg = day_configs(s, lk, day)

    def runs(cluster_config):  # a sweep starts from each cluster's own values
        return sim.run_list(cluster_config, sets_per_strategy=config.sets_per_strategy, seeds=tuple(range(config.seeds)))

    context.log.info(f"simulating {len(runs(cfg.default))} runs per cluster")
    policies = sim.policy_rows(*(lk.read(s, "bronze", t, day) for t in ("ownership", "namespaces", "config",
                                                                          "failure_domains", "topic_stats")))
    result = sim.simulate_runs(s, lk.read(s, "bronze", "broker_reports", day), lk.read(s, "bronze", "bundle_reports", day),
                               lk.read(s, "gold", "load_model", day), policies, cfg, runs,
                               *(lk.read(s, "bronze", t, day) for t in ("topic_stats", "lb_events", "bundle_data",
                                                                         "snapshots")),
                               quotas=lk.read(s, "bronze", "resource_quotas", day),
                               time_averages=lk.read(s, "silver", "bundle_time_averages", day),
                               report_writes=lk.read(s, "bronze", "report_writes", day)).persist()
    try:
        runs_written, runs_meta = write_table(s, lk, sim.runs_table(result), "gold", "simulation_runs", day)
        _, ts_meta = write_table(s, lk, sim.timeseries_table(result), "gold", "simulation_timeseries", day)
        _, check_meta = write_table(s, lk, sim.validation_table(result), "gold", "simulation_validation", day)
    finally:
        result.unpersist()
    yield dg.MaterializeResult(asset_key=["gold", "simulation_runs"], metadata=runs_meta)
    yield dg.MaterializeResult(asset_key=["gold", "simulation_timeseries"], metadata=ts_meta)
    yield dg.MaterializeResult(asset_key=["gold", "simulation_validation"], metadata=check_meta)


@dg.asset(key=["gold", "recommendations"], deps=[key("gold", "simulation_runs"), key("gold", "simulation_timeseries"),
                                                 key("bronze", "config")], **options("simulation"))
@resumable
def recommendations(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Keep or change the strategy against the current configuration, how sure (the night's uncertainty, the last
    nights' verdicts), and the ``broker.conf`` lines and admin commands that apply a change."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    earlier = lk.read(s, "gold", "recommendations") if lk.exists(s, "gold", "recommendations") else None
    if earlier is not None and "verdict" not in earlier.columns:  # a lake from before verdicts were kept
        earlier = None
    pdf = recs.recommendations(lk.read(s, "gold", "simulation_runs", day), day_configs(s, lk, day),
                              lk.read(s, "gold", "simulation_timeseries", day), earlier)
    written, meta = write_table(s, lk, s.createDataFrame(pdf, recs.RECOMMENDATION_SCHEMA), "gold", "recommendations", day)
    meta["recommended"] = dg.MetadataValue.json({r.cluster: r.strategy for r in pdf.itertuples()})
    meta["decisions"] = dg.MetadataValue.json({r.cluster: r.decision for r in pdf.itertuples()})
    return dg.MaterializeResult(metadata=meta)
