"""The one Spark session: generated code is compiled once per session, not once per query; the JIT's code is kept
for the JVM's life."""

from lb_pipeline.ingest.reading import spark_conf
from lb_pipeline.spark.session import CODEGEN_CACHE_ENTRIES, java_options
from tests.round_trips import counted


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


def test_building_a_query_makes_no_round_trips_to_record_python_call_sites(spark):
    """PySpark's DataFrame debugging records every call's Python call site in the JVM: three times the round trips."""
    from pyspark.errors import utils
    from pyspark.sql import functions as F

    def round_trips() -> int:
        with counted() as sent:
            df = spark.range(3).select((F.col("id") + F.lit(1)).alias("a"), F.upper(F.lit("x")).alias("b"))
            df.where(F.col("a") > 1)
        return sent[0]

    cached = utils._enable_debugging_cache
    try:
        utils._enable_debugging_cache = None  # read again from the session, as its first DataFrame call did
        assert not utils.is_debugging_enabled()
        round_trips()  # what a first use looks up once
        configured = round_trips()
        utils._enable_debugging_cache = True  # PySpark's default
        recording = round_trips()
    finally:
        utils._enable_debugging_cache = cached
    assert 0 < configured and 2 * configured < recording


def _vm_option(spark, name: str) -> str:
    jvm = spark._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    return bean.getVMOption(name).getValue()


def test_the_sessions_jvm_keeps_the_code_its_jit_compiled_in_a_code_cache_twice_javas_default(spark):
    assert _vm_option(spark, "UseCodeCacheFlushing") == "false"
    assert int(_vm_option(spark, "ReservedCodeCacheSize")) == 480 * 1024 * 1024
    # the suite's own options for this JVM (tests/conftest.py) were given too
    assert _vm_option(spark, "UseParallelGC") == "true"


def test_jvm_options_given_in_the_settings_come_after_the_sessions_own_so_they_win():
    given = {"spark.driver.extraJavaOptions": "-XX:+UseCodeCacheFlushing -Dx=1", "spark.sql.shuffle.partitions": "3"}
    options = java_options(given)
    assert options["spark.driver.extraJavaOptions"].endswith(" -XX:+UseCodeCacheFlushing -Dx=1")
    assert options["spark.driver.extraJavaOptions"].startswith("-XX:-UseCodeCacheFlushing ")
    assert options["spark.executor.extraJavaOptions"] == "-XX:-UseCodeCacheFlushing -XX:ReservedCodeCacheSize=480m"
