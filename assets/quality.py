"""Stage ``quality``: one asset check per Great Expectations suite (dagster-ge does not support GX 1.x).

Bronze suites are blocking gates: a failed critical expectation stops the downstream assets of that partition.
Warning-level failures are reported (WARN) without blocking. Every result also lands in ``gold/validation_results``.
"""

import dagster as dg

from assets.resources import LakeResource, SparkResource
from lb_pipeline.quality import views
from lb_pipeline.quality.results import SCHEMA, result_rows
from lb_pipeline.quality.runner import validate


def _check(suite: str, layer_table: tuple[str, str], view, blocking: bool) -> dg.AssetChecksDefinition:
    layer, table = layer_table

    @dg.asset_check(asset=dg.AssetKey([layer, table]), name=suite.replace(".", "_"), blocking=blocking,
                    description=f"Great Expectations suite expectations/{suite}.json")
    def check(context: dg.AssetCheckExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.AssetCheckResult:
        day = context.run.tags.get("dagster/partition")
        s, lk = spark.session, lake.lake
        df = view(lambda ly, t: lk.read(s, ly, t, day)).persist()  # GX's passes run several Spark jobs over it
        try:
            summary = validate(df, suite)
        finally:
            df.unpersist()
        lk.write_partition(s.createDataFrame(result_rows(summary, day, f"{layer}/{table}"), SCHEMA), "gold",
                           "validation_results", day, where={"suite": suite})
        return dg.AssetCheckResult(
            passed=summary.success,
            severity=dg.AssetCheckSeverity.ERROR if summary.critical else dg.AssetCheckSeverity.WARN,
            description="; ".join(f.describe() for f in summary.failures[:5]) or f"{summary.evaluated} expectations passed",
            metadata={"expectations_evaluated": dg.MetadataValue.int(summary.evaluated),
                      "expectations_failed": dg.MetadataValue.int(len(summary.failures)),
                      "failures": dg.MetadataValue.md("\n".join(f"- {f.describe()}" for f in summary.failures) or "none"),
                      "partition": dg.MetadataValue.text(day or "")},
        )

    return check


checks = [_check(name, asset, view, blocking) for name, (asset, view, blocking) in views.SUITES.items()]


# The table the checks write; declared so the lineage and the "quality" group show it.
validation_results = dg.AssetSpec(
    key=["gold", "validation_results"], group_name="quality", kinds={"delta"},
    description="Every expectation's result per partition and suite, written by the data-quality checks",
)
