"""A crashed or doubled main command loses nothing.

``kill -9`` during bronze writes, again during gold writes, then a re-run — on a Spark standalone cluster — and
every table holds exactly what a clean ``local[2]`` run writes (row count and content checksum per table). A second run of the same day started while one is running
exits at once naming the run that holds the day, and the first completes with one report."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lb_pipeline.partition_lock import PartitionBusy, partition_lock
from tests.conftest import DEMO_DAY, table_fingerprints

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]


def test_the_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    with partition_lock(tmp_path, DEMO_DAY):
        with pytest.raises(PartitionBusy, match=f"pid {os.getpid()}"):
            with partition_lock(tmp_path, DEMO_DAY):
                pass
        with partition_lock(tmp_path, "2026-01-16"):  # another day is free
            pass
    with partition_lock(tmp_path, DEMO_DAY):  # released on exit
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from lb_pipeline.partition_lock import "
                               f"partition_lock\nwith partition_lock({str(tmp_path)!r}, {DEMO_DAY!r}):\n"
                               " print('held', flush=True); time.sleep(600)"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(PartitionBusy):
        with partition_lock(tmp_path, DEMO_DAY):
            pass
    holder.kill()
    holder.wait()
    with partition_lock(tmp_path, DEMO_DAY):
        pass


def _start(landing, lake, reports, log: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "assets.run", "--landing", str(landing), "--lake", str(lake),
                             "--reports", str(reports)], cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)  # its own process group: the JVM dies with it


def _kill_when(proc: subprocess.Popen, ready, log: Path, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
            pytest.fail(f"the run ended or stalled before the moment to kill it:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # kill -9, the whole run at once (Python and its JVM)
    proc.wait()


def _committed(lake: Path, pattern: str):
    return lambda: any(lake.glob(f"{pattern}/_delta_log/*.json"))


def test_kill_9_in_bronze_and_in_gold_then_a_rerun_on_a_spark_cluster_equals_a_clean_local_run(
        spark, lake, demo_landing, tmp_path, standalone_master):
    """The re-run that finishes the night goes to a standalone master and worker (``LB_SPARK_MASTER=spark://…``):
    the nightly job runs unchanged on a real cluster, and what it writes equals the ``local[2]`` run's tables."""
    crashed, reports = tmp_path / "lake", tmp_path / "reports"
    first = _start(demo_landing, crashed, reports, tmp_path / "first.log")
    _kill_when(first, _committed(crashed, "bronze/snapshots"), tmp_path / "first.log")
    assert not any(crashed.glob("silver/*/_delta_log"))  # killed inside bronze
    second = _start(demo_landing, crashed, reports, tmp_path / "second.log")
    _kill_when(second, _committed(crashed, "gold/*"), tmp_path / "second.log")
    assert not any(reports.glob(f"*/{DEMO_DAY}.html"))  # killed inside gold, before the report

    master, work = standalone_master
    on_cluster = {**os.environ, "LB_SPARK_MASTER": master,
                  "LB_SPARK_CONF": json.dumps({"spark.executor.memory": "2g", "spark.cores.max": "2"})}
    third = _start(demo_landing, crashed, reports, tmp_path / "third.log", env=on_cluster)
    lock = crashed / ".locks" / f"{DEMO_DAY}.lock"
    deadline = time.monotonic() + 300
    while not (lock.is_file() and f"pid {third.pid} " in lock.read_text()):
        assert third.poll() is None and time.monotonic() < deadline, (tmp_path / "third.log").read_text()[-3000:]
        time.sleep(0.1)
    started = time.monotonic()
    doubled = subprocess.run([sys.executable, "-m", "assets.run", "--landing", str(demo_landing), "--lake", str(crashed),
                              "--reports", str(reports)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert doubled.returncode == 3 and f"pid {third.pid}" in doubled.stderr, doubled.stderr[-2000:]
    assert third.poll() is None, "the doubled run should have left while the first still ran"
    assert time.monotonic() - started < 120 and "nightly run for" in doubled.stdout
    assert third.wait(timeout=900) == 0, (tmp_path / "third.log").read_text()[-3000:]

    assert len(list(reports.glob(f"*/{DEMO_DAY}.html"))) == len({p.parent.parent.name for p in demo_landing.glob("*/*/manifest.json")})
    assert list(work.glob("app-*/*/stderr")), "no executor ran on the worker: the re-run did not use the cluster"
    clean = table_fingerprints(spark, Path(lake.root))
    assert table_fingerprints(spark, crashed) == clean and len(clean) >= 20


def test_a_lake_on_an_object_store_is_locked_in_a_local_folder_named_after_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with partition_lock("s3a://bucket/lake", DEMO_DAY):
        with pytest.raises(PartitionBusy, match="s3a://bucket/lake"):
            with partition_lock("s3a://bucket/lake", DEMO_DAY):
                pass
        with partition_lock("s3a://bucket/other-lake", DEMO_DAY):
            pass
    assert len(list((tmp_path / ".cache" / "lb_pipeline" / "locks").glob(f"*/{DEMO_DAY}.lock"))) == 2


def test_a_remote_landing_folder_needs_the_days_named(capsys):
    from assets.run import main

    assert main(["--landing", "s3a://bucket/snapshots", "--lake", "s3a://bucket/lake"]) == 2
    assert "--day" in capsys.readouterr().err
