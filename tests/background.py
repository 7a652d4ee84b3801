"""Nights of the main command that a test only inspects afterwards, run beside the rest of the suite.

The crash-and-rerun scenario is five ``python -m assets.run`` processes with their own JVMs and a standalone
Spark cluster: 290 s of a 1,033 s suite when run in turn (with two kills). The nights run one after the other in a
background thread started with the session (``conftest``), overlapping the in-process tests, which leave a core
idle part of the time; a night's test waits for the result and asserts on it in the foreground, and a run that
breaks raises there, with its log.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lb_pipeline.settings import spark_settings_from_env
from lb_pipeline.spark.session import java_options
from tests.conftest import DEMO_DAY, FIRST_TIER, free_port

ROOT = Path(__file__).resolve().parents[1]
# The nights' processes (and every process they start: JVMs, Python workers, the standalone cluster) run at a lower
# CPU priority than the session's: the foreground's tests are the suite's critical path (each waits on its own small
# Spark jobs, a core and a fifth busy on average), and the nights take what it leaves idle instead of slowing it.
LOW_PRIORITY = ["nice", "-n", "10"] if shutil.which("nice") else []
# The environment as the session started: tests that set variables (monkeypatch, LB_MAX_FILE_BYTES) while a
# night runs must not reach into the runs it starts.
ENV = dict(os.environ)


class Stopped(Exception):
    """The session ended before the night did."""


def main_command(landing: Path, lake: Path, reports: Path, log: Path, **env: str) -> subprocess.Popen:
    """``python -m assets.run`` in its own process group (so ``kill -9`` takes its JVM with it)."""
    return subprocess.Popen([*LOW_PRIORITY, sys.executable, "-m", "assets.run", "--landing", str(landing),
                             "--lake", str(lake), "--reports", str(reports)], cwd=ROOT, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, env={**ENV, **env}, start_new_session=True)


def _until(ready, proc: subprocess.Popen, stop: threading.Event, log: Path, timeout: float = 900) -> None:
    """Wait until ``ready()``. The run ending or stalling first, or the session stopping, kills it and raises."""
    deadline = time.monotonic() + timeout
    while not ready():
        if stop.is_set():
            _kill(proc)
            raise Stopped(log.name)
        if (time.monotonic() > deadline or proc.poll() is not None) and not ready():
            _kill(proc)
            raise AssertionError(f"{log.name}: the run ended or stalled before the moment it was waited for:\n"
                                 f"{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)


def _kill(proc: subprocess.Popen) -> None:
    """``kill -9`` of the whole run at once (Python and its JVM)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _finish(proc: subprocess.Popen, stop: threading.Event, log: Path) -> int:
    _until(lambda: proc.poll() is not None, proc, stop, log)
    return proc.returncode


# The crashed night: kill -9 during bronze, again during silver, again during gold, then a re-run on a Spark
# standalone cluster while a second run of the same day is started beside it.


def after_silver() -> set[str]:
    """The gold tables computed from a silver one, read from the asset graph: a run's commit to one of them is its
    gold work after silver. (Others, such as the load model and the simulation, need only bronze and may come
    before silver.)"""
    from assets.definitions import all_assets

    return {key.path[-1] for a in all_assets for key in a.keys
            if key.path[0] == "gold" and any(d.path[0] == "silver" for d in a.asset_deps.get(key, ()))}


@dataclass
class CrashedNight:
    lake: Path
    reports: Path
    worker_dir: Path
    killed: list  # per kill, in order: (where, the tables that run committed as layer/table, a report existed)
    resumed: list  # per run, the killed ones then the re-run: the steps it did not compute again
    night_runs_between: list  # per kill: a copy of gold/night_runs as the killed run left it
    doubled: subprocess.CompletedProcess
    doubled_seconds: float
    rerun_alive_after_doubled: bool
    rerun_pid: int
    rerun_code: int
    rerun_output: str


def _resumed(log: Path) -> set[str]:
    return set(re.findall(r" - (\w+): not computed again", log.read_text(errors="replace")))


def _commits(lake: Path) -> set[Path]:
    return set(lake.glob("*/*/_delta_log/*.json"))


def crashed_night(landing: Path, tmp: Path, stop: threading.Event) -> CrashedNight:
    lake, reports = tmp / "lake", tmp / "reports"
    # where each run is killed: the first commit of that run to a table of the stage
    gold = after_silver()
    points = [("bronze", lambda c: c.parts[-4] == "bronze"),
              ("silver", lambda c: c.parts[-4] == "silver"),
              ("gold", lambda c: c.parts[-4] == "gold" and c.parts[-3] in gold)]
    killed, between = [], []
    for k, (where, at) in enumerate(points):
        before, log = _commits(lake), tmp / f"killed-{k + 1}-{where}.log"
        run = main_command(landing, lake, reports, log)
        _until(lambda: any(at(c) for c in _commits(lake) - before), run, stop, log)
        _kill(run)
        new = _commits(lake) - before
        killed.append((where, sorted({f"{c.parts[-4]}/{c.parts[-3]}" for c in new}),
                       any(reports.glob(f"*/{DEMO_DAY}.html"))))
        between.append(Path(shutil.copytree(lake / "gold" / "night_runs", tmp / f"night_runs_after_kill_{k + 1}")))

    with standalone_cluster(tmp / "standalone", stop) as (master, work):
        log = tmp / "rerun.log"
        rerun = main_command(landing, lake, reports, log, LB_SPARK_MASTER=master,
                             LB_SPARK_CONF=json.dumps({**spark_settings_from_env(ENV).conf,
                                                        "spark.executor.memory": "2g", "spark.cores.max": "2"}))
        lock = lake / ".locks" / f"{DEMO_DAY}.lock"
        _until(lambda: lock.is_file() and f"pid {rerun.pid} " in lock.read_text(), rerun, stop, log, timeout=300)
        started = time.monotonic()
        doubled = subprocess.run([sys.executable, "-m", "assets.run", "--landing", str(landing), "--lake", str(lake),
                                  "--reports", str(reports)], cwd=ROOT, env=ENV, capture_output=True, text=True,
                                 timeout=300)
        seconds, alive = time.monotonic() - started, rerun.poll() is None
        code = _finish(rerun, stop, log)
        resumed = [_resumed(tmp / f"killed-{k + 1}-{where}.log") for k, (where, _) in enumerate(points)] + [_resumed(log)]
        return CrashedNight(lake, reports, work, killed, resumed, between, doubled, seconds, alive, rerun.pid, code,
                            log.read_text(errors="replace")[-8000:])


# The night of a recorded real run (tests/fixtures/real-runs/writes-threshold: the leader's inputs, every load report the
# brokers wrote and the leader's log collected), as
# production runs it: the Dagster daemon on an instance of the project's settings (.dagster/dagster.yaml: the run
# queue, run monitoring), its landing sensor launching the run. The daemon's run worker had ended every such run at
# bronze_checks with SystemExit: 0 (lb_pipeline/quality/__init__.py). The first run is killed (kill -9 of its
# process and of the code server that started it) during bronze; a snapshot rewritten then makes the sensor ask for
# the day again, and that run must not wait behind the dead one: run monitoring fails it (assets/launcher.py) and
# the queue moves.

REAL_RUN = ROOT / "tests" / "fixtures" / "real-runs" / "writes-threshold"


@dataclass
class RealNight:
    lake: Path
    reports: Path
    code: int  # 0: the run that finished the night succeeded
    output: str  # the daemon's log, the runs' own lines in it
    launched_by: str  # the tag Dagster gives a run a sensor launched
    killed: dict  # the run killed during bronze: its status and the reason run monitoring gave


def real_night(_landing: Path, tmp: Path, stop: threading.Event) -> RealNight:
    import dagster as dg
    from dagster._core.events import DagsterEventType

    from assets.launcher import worker_pid

    landing = Path(shutil.copytree(REAL_RUN / "landing", tmp / "landing"))
    lake, reports, home, log = tmp / "lake", tmp / "reports", tmp / "dagster-home", tmp / "daemon.log"
    home.mkdir()
    shutil.copy(ROOT / ".dagster" / "dagster.yaml", home)
    # the instance's SQLite tables made here, once: the daemon and this test's first poll making them at the same
    # moment stamped the schema twice ("alembic_version has more than one head"), and every later open failed
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)
    daemon = subprocess.Popen([*LOW_PRIORITY, str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w",
                               "workspace.yaml"],
                              cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                              env={**ENV, "DAGSTER_HOME": str(home), "LB_LANDING": str(landing),
                                   "LB_LAKE_ROOT": str(lake), "LB_REPORTS_DIR": str(reports)})
    asked = [0.0]

    def runs():
        """Every run, oldest first, at most every 2 s (None in between)."""
        if time.monotonic() - asked[0] < 2:
            return None
        asked[0] = time.monotonic()
        with dg.DagsterInstance.from_config(str(home)) as instance:
            return list(reversed(instance.get_runs()))

    def reason(run_id: str) -> str:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            return " ".join(e.message or "" for e in instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE))

    try:
        first = {}

        def bronze_started() -> bool:
            found = runs()
            if found and found[0].status.value == "STARTED" and any(lake.glob("bronze/*/_delta_log")):
                with dg.DagsterInstance.from_config(str(home)) as instance:
                    first.update(run_id=found[0].run_id, pid=worker_pid(instance, found[0].run_id))
            return bool(first)

        _until(bronze_started, daemon, stop, log, timeout=900)
        # the worker and the code server that started it (which would otherwise report the worker's end): nothing
        # but run monitoring is left to notice, as after a kill of the whole process group or a crash of the host
        parent = int(Path(f"/proc/{first['pid']}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        for pid in (parent, first["pid"]):
            os.kill(pid, signal.SIGKILL)
        newest = sorted(landing.glob("*/*/manifest.json"))[-1]
        newest.write_bytes(newest.read_bytes())  # rewritten: the sensor asks for the day again
        last = {}

        def finished() -> bool:
            found = runs()
            if found and len(found) > 1 and found[-1].is_finished and found[0].is_finished:
                last.update(status=found[-1].status.value, sensor=found[-1].tags.get("dagster/sensor_name", ""),
                            killed=found[0].status.value)
            return bool(last)

        _until(finished, daemon, stop, log, timeout=1500)
        killed = {"status": last["killed"], "reason": reason(first["run_id"]), "pid": first["pid"]}
    finally:
        _kill(daemon)
    return RealNight(lake, reports, 0 if last["status"] == "SUCCESS" else 1, log.read_text(errors="replace"),
                     last["sensor"], killed)


# A Spark standalone master and one worker, started from the installed pyspark on 127.0.0.1.

@contextmanager
def standalone_cluster(tmp: Path, stop: threading.Event):
    """(``spark://127.0.0.1:<port>``, the worker's work dir) of a master with one 2-core worker; both process groups
    are killed on exit."""
    import pyspark

    home = Path(pyspark.__file__).parent
    tmp.mkdir(parents=True)
    env = {**ENV, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
           # the master's and worker's JVMs, as the session starts a driver's
           "SPARK_DAEMON_JAVA_OPTS": java_options(FIRST_TIER)["spark.driver.extraJavaOptions"]}
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = {
        "master": ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                   "--webui-port", str(free_port())],
        "worker": ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2", "--memory", "3g",
                   "--webui-port", str(free_port()), "--work-dir", str(tmp / "work"), url],
    }
    # Each is ready when its log says so (not its web UI: a UI port taken meanwhile moves the UI elsewhere).
    ready = {"master": "I have been elected leader", "worker": "Successfully registered with master"}
    procs = []
    try:
        for name, args in commands.items():
            log = tmp / f"{name}.log"
            procs.append(subprocess.Popen([*LOW_PRIORITY, str(home / "bin" / "spark-class"), *args], env=env,
                                          cwd=tmp, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                          start_new_session=True))
            _until(lambda: ready[name] in log.read_text(errors="replace"), procs[-1], stop, log, timeout=120)
        yield url, tmp / "work"
    finally:
        for proc in procs:
            _kill(proc)

