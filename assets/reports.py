"""Stage ``reports``: the nightly HTML report (one self-contained file per cluster and night) and its index."""

import dagster as dg

from assets.common import day_config, key, mark_night
from assets.partitions import daily
from assets.resources import LakeResource, ReportsResource, SparkResource
from lb_pipeline.report.context import build_context, night_clusters
from lb_pipeline.report.render import render_nightly, write_report
from lb_pipeline.spark.steps import Steps
from lb_pipeline.transforms.night_runs import COMPLETE


@dg.asset(key=["reports", "nightly_report"], group_name="reports", partitions_def=daily, kinds={"html"},
          deps=[key("silver", "broker_usage"), key("silver", "bundle_stats"), key("bronze", "quarantine"),
                key("gold", "split_triggers"), key("gold", "split_recommendations"), key("gold", "shedding_decisions"),
                key("gold", "anti_affinity_audit"), key("gold", "broker_load_summary"), key("gold", "validation_results"),
                key("gold", "simulation_runs"), key("gold", "simulation_timeseries"), key("gold", "recommendations"),
                key("gold", "simulation_validation"), key("gold", "capacity_forecast"), key("gold", "pathologies"), key("gold", "night_trends"),
                key("bronze", "lb_events"), key("gold", "night_runs")],
          retry_policy=dg.RetryPolicy(max_retries=2, delay=10),
          op_tags={"dagster/priority": "-1"})  # after the checks that are ready with it: its quality table reads them
def nightly_report(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource,
                   reports: ReportsResource) -> dg.MaterializeResult:
    """What to do, how loaded the brokers are, what each strategy and split algorithm would do, data quality: one
    report per cluster of the night."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    paths, splits, unloads = {}, 0, 0
    resumed: dict[str, list[str]] = {}  # the steps an earlier run computed and this one resumed, by that run
    for step, run_id in Steps(s, lk, day).computed_by().items():
        if run_id != context.run.run_id:
            resumed.setdefault(run_id, []).append(step)
    for cluster in night_clusters(s, lk, day):
        ctx = build_context(s, lk, day, cluster, day_config(s, lk, day, cluster), run_id=context.run.run_id,
                            resumed=resumed)
        paths[cluster] = write_report(reports.folder, cluster, day, render_nightly(ctx), ctx["partial_nights"])
        splits, unloads = splits + len(ctx["actions"]["splits"]), unloads + len(ctx["actions"]["unloads"])
        context.log.info(f"report written to {paths[cluster]}")
    mark_night(s, lk, day, COMPLETE, context.run.run_id)  # the night's last step: its tables are all written
    first = next(iter(paths.values()))
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(first)), "report": dg.MetadataValue.url(first.as_uri()),
        "index": dg.MetadataValue.url((first.parent / "index.html").as_uri()),
        "reports": dg.MetadataValue.json({c: str(p) for c, p in paths.items()}),
        "split_actions": dg.MetadataValue.int(splits), "unload_actions": dg.MetadataValue.int(unloads),
    })
