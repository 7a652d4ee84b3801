"""Stage ``ingest``: snapshot directories of one UTC day → the bronze Delta tables and the quarantine."""


import dagster as dg

from assets.common import mark_night, table_metadata
from assets.resume import resumed
from assets.partitions import daily
from assets.resources import LakeResource, LandingResource, SparkResource
from lb_pipeline.ingest.bronze import ingest_day
from lb_pipeline.ingest.landing_state import day_state
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.transforms import night_runs

BRONZE_TABLES = [*TABLES, "quarantine"]
PREVIEWED = {"snapshots", "broker_reports", "quarantine"}


@dg.multi_asset(
    specs=[
        dg.AssetSpec(["bronze", name], group_name="ingest", kinds={"spark", "delta"},
                     description=f"bronze/{name}: one row per {name.replace('_', ' ')} entry of each snapshot"
                     if name != "quarantine" else "Files and rows that could not be used, with file, field and reason")
        for name in BRONZE_TABLES
    ],
    partitions_def=daily,
    can_subset=False,
    retry_policy=dg.RetryPolicy(max_retries=2, delay=10),
)
def bronze_tables(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource,
                  landing: LandingResource):
    """Read one day of snapshots with Spark (one pass per table) and replace that day's partitions."""
    day = context.partition_key
    mark_night(spark.session, lake.lake, day, night_runs.RUNNING, context.run.run_id)  # complete once the report is written
    state = day_state(landing.folder, day, {t.name: t.globs for t in TABLES.values()}, spark.session)
    yield from resumed(context, spark, lake, lambda: _ingested(context, spark, lake, landing),
                       extra=None if state is None else [landing.folder, state], resumable=state is not None)


def _ingested(context, spark, lake, landing):
    day, session, the_lake = context.partition_key, spark.session, lake.lake
    result = ingest_day(session, the_lake, landing.folder, day, log=context.log.info)
    if result.tables["snapshots"].rows == 0:
        context.log.warning(f"no snapshot directories for {day} under {landing.folder}: tables written empty")
    if result.quarantine.rows:
        context.log.warning(f"{result.quarantine.rows} files or rows quarantined for {day}: "
                            + ", ".join(f"{k}={v}" for k, v in result.quarantined_by_table.items() if v))
    for name in TABLES:
        written = result.tables[name]
        meta = table_metadata(written, the_lake.read(session, "bronze", name, day) if name in PREVIEWED else None)
        meta["quarantined"] = dg.MetadataValue.int(result.quarantined_by_table.get(name, 0))
        yield dg.MaterializeResult(asset_key=["bronze", name], metadata=meta)
    yield dg.MaterializeResult(
        asset_key=["bronze", "quarantine"],
        metadata=table_metadata(result.quarantine, the_lake.read(session, "bronze", "quarantine", day)),
    )


# The table the first and last steps write; declared so the lineage shows it.
night_runs_table = dg.AssetSpec(
    key=["gold", "night_runs"], group_name="reports", kinds={"delta"},
    description="Per night: running (from the first step on) or complete (the report written); a night left "
                "running stopped half-way, and the readers of earlier nights call it partial",
)
