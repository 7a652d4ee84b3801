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


HANGS = """
import os, time, dagster as dg
@dg.asset(partitions_def=dg.DailyPartitionsDefinition("2026-01-01"))
def slow():
    time.sleep(600)
dg.materialize([slow], partition_key="2026-01-15", instance=dg.DagsterInstance.get())
"""


def test_the_main_command_fails_a_run_of_its_day_left_started_by_a_killed_process_and_says_so(tmp_path):
    import os
    import signal
    import time

    from assets.run import fail_runs_left_started

    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HANGS], env={"DAGSTER_HOME": str(home), "PATH": "/usr/bin:/bin"},
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                if [r for r in instance.get_runs() if r.status == dg.DagsterRunStatus.STARTED]:
                    break
            time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert fail_runs_left_started(instance, "2026-01-16") == []  # another day's run is not touched
        (line,) = fail_runs_left_started(instance, "2026-01-15")
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.FAILURE
        assert line.startswith(f"run {run.run_id} of 2026-01-15 (started 20") and \
            line.endswith(f"UTC by pid {proc.pid}) was left STARTED, its process gone: marked failed")
        assert fail_runs_left_started(instance, "2026-01-15") == []
