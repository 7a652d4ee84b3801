"""The one Spark session: generated code is compiled once per session, not once per query."""

from lb_pipeline.ingest.reading import spark_conf
from lb_pipeline.spark.session import CODEGEN_CACHE_ENTRIES


def test_a_plan_generated_again_after_more_than_sparks_default_hundred_others_is_not_compiled_again(spark):
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics

    def compiled() -> int:
        return metrics.METRIC_COMPILATION_TIME().getCount()

    def generate(i: int) -> None:  # the plan's code generated and compiled on the driver, no Spark job run
        spark.range(1).selectExpr(f"id * 7 + {1000 + i} AS x")._jdf.queryExecution().executedPlan().execute()

    with spark_conf(spark, {"spark.sql.codegen.factoryMode": "FALLBACK"}):  # Spark's default (the suite's: none)
        generate(0)
        first = compiled()
        for i in range(1, 131):
            generate(i)
        assert compiled() - first >= 130  # each a class of its own (the literal is in its code)
        before = compiled()
        generate(0)
        assert compiled() == before
    assert int(spark.conf.get("spark.sql.codegen.cache.maxEntries")) == CODEGEN_CACHE_ENTRIES
