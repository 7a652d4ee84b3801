"""The code location root: it only gathers the stage modules and sets run-wide policy.

The in-process executor keeps one JVM (one SparkSession) for the whole run; Dagster's default multiprocess
executor would start a JVM per step (~10 s each).
"""

import dagster as dg

from assets import ingest, planning, quality, reports, shedding, simulation, splits, stats
from assets.automation import landing_sensor, nightly_job, nightly_schedule
from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource

all_assets = dg.load_assets_from_modules([ingest, stats, splits, shedding, simulation, planning, reports])
external_tables = [quality.validation_results, ingest.night_runs_table]

defs = dg.Definitions(
    assets=[*all_assets, *external_tables],
    asset_checks=quality.checks,
    jobs=[nightly_job],
    schedules=[nightly_schedule],
    sensors=[landing_sensor],
    resources={
        "spark": SparkResource(),
        "lake": LakeResource(),
        "landing": LandingResource(),
        "reports": ReportsResource(),
    },
    executor=dg.in_process_executor,
)
