"""Stage ``quality``: the Great Expectations suites as Dagster asset checks (dagster-ge does not support GX 1.x).

One check per suite, run in one step per layer (``multi_asset_check``): the bronze suites as soon as the bronze tables
land, silver and gold once their layer is written. Each step validates its suites four at a time
(``runner.validate_all``) and writes their results to ``gold/validation_results`` in one commit: a Delta commit and
a Dagster step cost about a second each, which one step per suite paid 24 times.

Bronze suites are blocking gates: a failed critical expectation stops the downstream assets of that partition.
Warning-level failures are reported (WARN) without blocking.
"""

import hashlib

import dagster as dg

from assets.resources import LakeResource, SparkResource
from assets.resume import resumed
from lb_pipeline.quality import views
from lb_pipeline.quality.results import SCHEMA, result_rows
from lb_pipeline.quality.runner import suite_path, validate_all
from lb_pipeline.spark.lake import LAYERS


def _name(suite: str) -> str:
    return suite.replace(".", "_")


def _result(suite: str, summary, day: str | None) -> dg.AssetCheckResult:
    (layer, table), _, _ = views.SUITES[suite]
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey([layer, table]), check_name=_name(suite), passed=summary.success,
        severity=dg.AssetCheckSeverity.ERROR if summary.critical else dg.AssetCheckSeverity.WARN,
        description="; ".join(f.describe() for f in summary.failures[:5]) or f"{summary.evaluated} expectations passed",
        metadata={"expectations_evaluated": dg.MetadataValue.int(summary.evaluated),
                  "expectations_failed": dg.MetadataValue.int(len(summary.failures)),
                  "failures": dg.MetadataValue.md("\n".join(f"- {f.describe()}" for f in summary.failures) or "none"),
                  "partition": dg.MetadataValue.text(day or "")},
    )


def _layer_checks(layer: str) -> dg.AssetChecksDefinition:
    suites = [suite for suite, ((lay, _), _, _) in views.SUITES.items() if lay == layer]
    specs = [dg.AssetCheckSpec(_name(suite), asset=dg.AssetKey(list(views.SUITES[suite][0])),
                               blocking=views.SUITES[suite][2], description=f"Great Expectations suite expectations/{suite}.json")
             for suite in suites]

    @dg.multi_asset_check(specs=specs, name=f"{layer}_checks", can_subset=True)
    def check(context: dg.AssetCheckExecutionContext, spark: SparkResource, lake: LakeResource):
        day = context.run.tags.get("dagster/partition")
        chosen = [suite for suite in suites if _name(suite) in {key.name for key in context.selected_asset_check_keys}]
        # a partitioned night's checks are not run again on tables that have not changed (assets.resume)
        yield from resumed(context, spark, lake, lambda: _validate(context, spark, lake, day, chosen), day=day,
                           step=f"{layer}_checks", config=chosen,
                           extra={s: hashlib.sha256(suite_path(s).read_bytes()).hexdigest() for s in chosen},
                           shared=("gold/validation_results",))

    return check


def _validate(context, spark, lake, day: str | None, chosen: list[str]):
    s, lk = spark.session, lake.lake
    read = lambda ly, t: lk.read(s, ly, t, day)  # noqa: E731
    summaries = validate_all(
        [(suite, lambda view=views.SUITES[suite][1]: view(read)) for suite in chosen],
        done=lambda suite, summary: context.log.info(
            f"{suite}: {summary.evaluated} expectations, {len(summary.failures)} failed"))
    rows = [row for suite, summary in summaries.items()
            for row in result_rows(summary, day, "/".join(views.SUITES[suite][0]))]
    if summaries:
        lk.write_partition(s.createDataFrame(rows, SCHEMA), "gold", "validation_results", day,
                           where={"suite": sorted(summaries)})
    return [_result(suite, summary, day) for suite, summary in summaries.items()]


checks = [_layer_checks(layer) for layer in LAYERS]


# The table the checks write; declared so the lineage and the "quality" group show it.
validation_results = dg.AssetSpec(
    key=["gold", "validation_results"], group_name="quality", kinds={"delta"},
    description="Every expectation's result per partition and suite, written by the data-quality checks",
)
