"""Shared fixtures: one SparkSession for the whole run, one generated demo history, and one materialization of
the asset graph into a temporary lake that the bronze and silver tests read (Spark jobs cost ~1 s each here,
so the graph runs once, not once per test)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lb_pipeline.settings import SparkSettings, spark_settings_from_env

DEMO_DAY = "2026-01-15"
DEMO_SNAPSHOTS = 4
VOLATILE = {"validated_at"}  # when a check ran: the only column two runs may differ in


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from lb_pipeline.spark.session import get_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    env = spark_settings_from_env()
    settings = SparkSettings(
        master="local[2]", shuffle_partitions=2, app_name="lb-pipeline-tests",
        conf={"spark.ui.enabled": "false", "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse")),
              **env.conf},
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
def pipeline_run(spark, demo_landing, tmp_path_factory):
    """The whole asset graph materialized for the demo day with ``dg.materialize`` against a temporary lake."""
    import dagster as dg

    from assets.definitions import all_assets
    from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource

    from assets.quality import checks

    lake_root, reports_root = tmp_path_factory.mktemp("lake"), tmp_path_factory.mktemp("reports")
    result = dg.materialize(
        [*all_assets, *checks],
        partition_key=DEMO_DAY,
        resources={"spark": SparkResource(), "lake": LakeResource(root=str(lake_root)),
                   "landing": LandingResource(path=str(demo_landing)),
                   "reports": ReportsResource(path=str(reports_root))},
        instance=dg.DagsterInstance.ephemeral(),
    )
    return result, lake_root, reports_root


@pytest.fixture(scope="session")
def lake(pipeline_run):
    from lb_pipeline.spark.lake import Lake

    return Lake(str(pipeline_run[1]))


def table_fingerprints(spark, root: Path) -> dict[str, tuple[int, int]]:
    """Per table: (rows, order-independent checksum of every column but the volatile ones) of the demo day."""
    from pyspark.sql import functions as F

    out = {}
    for log in sorted(root.glob("*/*/_delta_log")):
        table = log.parent
        df = spark.read.format("delta").load(str(table)).where(F.col("snapshot_date") == DEMO_DAY)
        cols = [c for c in df.columns if c not in VOLATILE]
        row = df.select(F.count(F.lit(1)).alias("n"),
                        F.coalesce(F.sum(F.xxhash64(*cols).cast("decimal(38,0)")), F.lit(0)).alias("h")).first()
        out[f"{table.parent.name}/{table.name}"] = (row.n, int(row.h))
    return out


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A Spark standalone master and one worker, started from the installed pyspark (used by the recovery test, whose
# final re-run goes to it: the nightly job runs unchanged on a real cluster).

def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0


def _wait(condition, what: str, logs: list[Path], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout:.0f} s:\n" +
                        "\n".join(p.read_text()[-2000:] for p in logs if p.exists()))
        time.sleep(0.5)


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory):
    """(``spark://127.0.0.1:<port>``, the worker's work dir) of a master with one 2-core worker, stopped (process
    groups killed) after."""
    import pyspark

    home = Path(pyspark.__file__).parent
    tmp = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = {
        "master": ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                   "--webui-port", str(ui)],
        "worker": ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2", "--memory", "3g",
                   "--webui-port", str(free_port()), "--work-dir", str(tmp / "work"), url],
    }
    procs, logs = [], []
    try:
        for name, args in commands.items():
            logs.append(tmp / f"{name}.log")
            procs.append(subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env, cwd=tmp,
                                          stdout=logs[-1].open("w"), stderr=subprocess.STDOUT,
                                          start_new_session=True))
            if name == "master":
                _wait(lambda: _alive_workers(ui) == 0 and _answers(port), "the master listening", logs)
        _wait(lambda: _alive_workers(ui) == 1, "the worker registering with the master", logs)
        yield url, tmp / "work"
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0
