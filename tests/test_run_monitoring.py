"""Run monitoring on the project's instance (``.dagster/dagster.yaml``): a run whose process is gone is failed by
the run launcher's health check, so the run queue's one-run-per-day limit lets the next run start (a killed run had
stayed STARTED forever, and every later run of its day QUEUED). The whole path, a run killed under the daemon and
the next run of the day launched, is in the daemon's night (``tests/background.py``)."""

import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
from dagster._core.launcher import WorkerStatus

from assets.launcher import LocalRunLauncher
from lb_pipeline.processes import alive

ROOT = Path(__file__).resolve().parents[1]
RUN = """
import os, dagster as dg
@dg.asset
def one():
    return 1
dg.materialize([one], instance=dg.DagsterInstance.get())
print(os.getpid())
"""


def test_the_health_check_fails_a_run_whose_process_is_gone_and_keeps_a_live_one(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / ".dagster" / "dagster.yaml", home)
    done = subprocess.run([sys.executable, "-c", RUN], env={"DAGSTER_HOME": str(home), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    pid = int(done.stdout.split()[-1])
    assert not alive(pid)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_launcher, LocalRunLauncher) and instance.run_monitoring_enabled
        (gone,) = instance.get_runs()
        result = instance.run_launcher.check_run_worker_health(gone)
        assert result.status == WorkerStatus.FAILED
        assert f"the run's process (pid {pid}) is gone" in result.msg

        @dg.asset
        def here():
            return 1

        dg.materialize([here], instance=instance)  # a run this (living) process started
        live = instance.get_runs()[0]
        assert instance.run_launcher.check_run_worker_health(live).status == WorkerStatus.RUNNING
