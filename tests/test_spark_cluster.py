"""The nightly job runs unchanged on a real Spark cluster: a standalone master and worker started from the
installed pyspark on 127.0.0.1, the main command pointed at it with ``LB_SPARK_MASTER=spark://…``, and every
table it writes equal (rows and content checksum) to the ``local[2]`` run's."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest

from tests.conftest import DEMO_DAY, free_port, table_fingerprints

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]


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


def test_the_nightly_job_on_a_standalone_cluster_writes_what_local_mode_writes(
        standalone_master, spark, lake, demo_landing, tmp_path):
    master, work = standalone_master
    env = {**os.environ, "LB_SPARK_MASTER": master,
           "LB_SPARK_CONF": json.dumps({"spark.executor.memory": "2g", "spark.cores.max": "2"})}
    run = subprocess.run([sys.executable, "-m", "assets.run", "--landing", str(demo_landing), "--lake",
                          str(tmp_path / "lake"), "--reports", str(tmp_path / "reports")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert list((tmp_path / "reports").glob(f"*/{DEMO_DAY}.html"))
    # the work ran on the cluster's executor, not in a local driver
    apps = list(work.glob("app-*/*/stderr"))
    assert apps, "no executor ran on the worker"
    clean = table_fingerprints(spark, Path(lake.root))
    assert table_fingerprints(spark, tmp_path / "lake") == clean and len(clean) >= 20
