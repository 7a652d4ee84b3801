"""Shared fixtures: one SparkSession for the whole run, one generated demo history, and one materialization of
the asset graph into a temporary lake that the bronze and silver tests read (Spark jobs cost ~1 s each here,
so the graph runs once, not once per test); the real recording's night holds the 100-broker cluster as well. The
nights that tests only inspect run beside the rest, in the background (``tests/background.py``)."""

import json
import os
import shutil
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lb_pipeline.settings import SparkSettings, spark_settings_from_env

# Every Spark of the run (this session's, and the nights the tests start as processes, which read LB_SPARK_CONF)
# evaluates expressions outside whole-stage code generation interpreted: on the suite's small days, generating and
# compiling a class per projection cost more than running it (docs/benchmarks.md: a warm demo night's JVM spent 40 %
# of its CPU in code generation). Results are the same either way; it is Spark's own fallback path.
TEST_SPARK_CONF = {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# The JVMs of the processes the suite starts (the background nights, the main command's tests) compile with the JIT's
# first tier only: they live a few minutes on small days, where the optimizing compiler's work does not pay back (the
# crashed night's five runs alone: 408.8 → 271.9 CPU-s of the host, 233.5 → 193.7 s). Not the session's own JVM,
# which runs the whole suite: its hot paths pay back (first tier only, it had used 758 CPU-s by half the suite
# against 630 for all of it).
FIRST_TIER = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
              "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
# The session's own JVM collects garbage with the parallel collector, not G1: its heap holds every table version the
# read cache keeps for the whole suite, and G1's concurrent marking had cost 97 of the JVM's 732 CPU-s over the
# suite (its collector threads 38 more); with the parallel collector its collector threads took 63 of 638.
SESSION_JVM = {"spark.driver.extraJavaOptions": "-XX:+UseParallelGC"}  # unless LB_SPARK_CONF names the JVM's own
# The session's queries are planned without adaptive execution or broadcast joins: on the suite's small tables a
# query's stages each re-planned at run time, and a broadcast each, cost more than they save (the session's JVM 703 ->
# 653 CPU-s over the suite, its Spark modules 743 -> 713 s on a host slower by a sixth). The nights the suite starts as
# processes keep Spark's defaults, and test_recovery compares such a night with the session's table by table: the
# tables must not depend on the plan (lb_pipeline/transforms/exact.py).
SESSION_PLANS = {"spark.sql.adaptive.enabled": "false", "spark.sql.autoBroadcastJoinThreshold": "-1"}
os.environ["LB_SPARK_CONF"] = json.dumps({**TEST_SPARK_CONF, **FIRST_TIER, **spark_settings_from_env().conf})

DEMO_DAY = "2026-01-15"
DEMO_SNAPSHOTS = 4
VOLATILE = {"validated_at"}  # when a check ran: the only column two runs may differ in, but in gold/night_runs
VOLATILE_NIGHT_RUNS = {"run_id", "marked_at"}  # which run marked the night, and when


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from lb_pipeline.spark.session import get_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    env = spark_settings_from_env()
    settings = SparkSettings(
        master="local[2]", shuffle_partitions=2, app_name="lb-pipeline-tests",
        conf={"spark.ui.enabled": "false", "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse")),
              **SESSION_JVM, **SESSION_PLANS, **{k: v for k, v in env.conf.items() if FIRST_TIER.get(k) != v}},
        delta_jars_dir=env.delta_jars_dir, ivy_settings=env.ivy_settings, ivy_dir=env.ivy_dir,
    )
    session = get_session(settings)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_landing(tmp_path_factory) -> Path:
    from lb_pipeline.snapshots.generate import generate

    landing = tmp_path_factory.mktemp("landing")
    generate(landing, "demo", seed=11, start=f"{DEMO_DAY}T08:00:00Z", snapshots=DEMO_SNAPSHOTS)
    return landing


@pytest.fixture(scope="session")
def fortnight_landing(tmp_path_factory) -> list[Path]:
    """Fourteen generated demo days of four snapshots each (growth, weekends, incidents, brokers added and
    removed): the generator's multi-day tests and the capacity forecast's backtest share it."""
    from lb_pipeline.snapshots.generate import generate

    return generate(tmp_path_factory.mktemp("fortnight"), "demo", seed=3, snapshots=4, days=14)


def whole_night(landing: Path, day: str, lake_root: Path, reports_root: Path):
    """The whole asset graph, checks included, materialized for ``day`` with ``dg.materialize`` in this process."""
    import dagster as dg

    from assets.definitions import all_assets
    from assets.quality import checks
    from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource

    return dg.materialize(
        [*all_assets, *checks],
        partition_key=day,
        resources={"spark": SparkResource(), "lake": LakeResource(root=str(lake_root)),
                   "landing": LandingResource(path=str(landing)), "reports": ReportsResource(path=str(reports_root))},
        instance=dg.DagsterInstance.ephemeral(),
    )


@pytest.fixture(scope="session")
def pipeline_run(spark, demo_landing, tmp_path_factory):
    """The whole asset graph materialized for the demo day against a temporary lake."""
    lake_root, reports_root = tmp_path_factory.mktemp("lake"), tmp_path_factory.mktemp("reports")
    result = whole_night(demo_landing, DEMO_DAY, lake_root, reports_root)
    shutil.copytree(lake_root, tmp_path_factory.getbasetemp() / "pristine-lake")
    return result, lake_root, reports_root


@pytest.fixture
def demo_lake_copy(pipeline_run, tmp_path, tmp_path_factory) -> Path:
    """A copy of the demo night's lake as that night left it (tests before may have written to the shared one), with
    its steps' records: a night run on it resumes every step whose inputs the test leaves alone."""
    return Path(shutil.copytree(tmp_path_factory.getbasetemp() / "pristine-lake", tmp_path / "lake"))


# The night of the first real Pulsar 4.0.7 recording (tests/fixtures/real-pulsar-4.0.7, cluster lbtest, exactly as the
# first collector wrote it) and, beside it in the same landing and night, a generated cluster of M's broker count
# (cluster hundred: few topics and two snapshots, since the report's size is set by the brokers): one night's fixed
# cost for both, each test reading its own cluster.
REAL_FIXTURE = Path(__file__).parent / "fixtures" / "real-pulsar-4.0.7"
REAL_DAY = "2026-11-22"
HUNDRED_SHAPE = dict(brokers=100, topics=3_000, snapshots=2, interval_minutes=60, bundles_per_namespace=(4, 8),
                     topics_per_namespace=150)


@pytest.fixture(scope="session")
def real_and_hundred_night(spark, tmp_path_factory):
    """(result, lake, reports root) of the whole graph, checks included, on the real recording and the 100 brokers."""
    import shutil

    from lb_pipeline.snapshots.generate import Preset, generate
    from lb_pipeline.spark.lake import Lake

    tmp = tmp_path_factory.mktemp("real-and-hundred")
    landing = Path(shutil.copytree(REAL_FIXTURE, tmp / "landing"))
    generate(landing, Preset("M-brokers", **HUNDRED_SHAPE), seed=3, start=f"{REAL_DAY}T08:00:00Z",
             cluster_name="hundred")
    result = whole_night(landing, REAL_DAY, tmp / "lake", tmp / "reports")
    return result, Lake(str(tmp / "lake")), tmp / "reports"


@pytest.fixture(scope="session")
def lake(pipeline_run):
    from lb_pipeline.spark.lake import Lake

    return Lake(str(pipeline_run[1]))


def table_fingerprints(spark, root: Path) -> dict[str, tuple[int, int]]:
    """Per table: (rows, order-independent checksum of every column but the volatile ones) of the demo day. One
    query over the union of the tables' hashes (a query per table took 5.5 s a lake, warm; this 3.8 s)."""
    from pyspark.sql import functions as F

    names, hashes = [], None
    for log in sorted(root.glob("*/*/_delta_log")):
        table = log.parent
        df = spark.read.format("delta").load(str(table)).where(F.col("snapshot_date") == DEMO_DAY)
        volatile = VOLATILE | (VOLATILE_NIGHT_RUNS if table.name == "night_runs" else set())
        names.append(name := f"{table.parent.name}/{table.name}")
        one = df.select(F.lit(name).alias("table"),
                        F.xxhash64(*[c for c in df.columns if c not in volatile]).cast("decimal(38,0)").alias("h"))
        hashes = one if hashes is None else hashes.unionByName(one)
    out = {name: (0, 0) for name in names}  # a table with no row of the day
    if hashes is not None:
        for r in hashes.groupBy("table").agg(F.count(F.lit(1)).alias("n"), F.sum("h").alias("h")).collect():
            out[r.table] = (r.n, int(r.h))
    return out


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Nights that tests only inspect run beside the rest of the suite (tests/background.py), one after the other in a
# thread started with the session; each only when a collected test asks for it.
BACKGROUND = ("crashed_night", "real_night")


def pytest_collection_modifyitems(items):
    """The tests that inspect a background night run last, in the order of ``BACKGROUND``: one reached mid-session
    held the rest of the suite while it waited (test_quality's samples of the daemon's night waited 69 s in a 816 s
    run), where the tests after it could have run beside the night."""
    rank = {name: k + 1 for k, name in enumerate(BACKGROUND)}
    items.sort(key=lambda item: max((rank[n] for n in BACKGROUND if n in item.fixturenames), default=0))


@pytest.fixture(scope="session", autouse=True)
def _background_nights(request, tmp_path_factory):
    from tests import background

    wanted = [n for n in BACKGROUND if any(n in item.fixturenames for item in request.session.items)]
    if not wanted:
        yield {}
        return
    landing, stop = request.getfixturevalue("demo_landing"), threading.Event()
    pool = ThreadPoolExecutor(1, thread_name_prefix="night")
    try:
        yield {n: pool.submit(getattr(background, n), landing, tmp_path_factory.mktemp(n), stop) for n in wanted}
    finally:
        stop.set()  # an interrupted session kills the night still running instead of waiting for it
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def crashed_night(_background_nights):
    return _background_nights["crashed_night"].result()


@pytest.fixture(scope="session")
def real_night(_background_nights):
    return _background_nights["real_night"].result()
