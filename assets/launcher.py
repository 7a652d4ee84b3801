"""The run launcher of the project's instance (``.dagster/dagster.yaml``): Dagster's default launcher with a health
check of the run worker, for run monitoring.

Dagster's ``DefaultRunLauncher`` cannot tell whether a run's process still lives: a run whose worker was killed
(``kill -9``, the kernel's out-of-memory killer, a reboot) stayed STARTED forever, and with the run queue's limit of
one run per day every later run of that day (the landing sensor's, the 02:00 schedule's) waited QUEUED, silently.
Here the worker is the process that logged the run's start, on this host (the default launcher starts it beside
the code server): run monitoring marks the run failed once that process is gone, naming it, and the queue moves.
"""

from __future__ import annotations

from dagster._core.events import DagsterEventType
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus

from lb_pipeline.processes import alive


class LocalRunLauncher(DefaultRunLauncher):
    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data)

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run) -> CheckRunHealthResult:
        pid = worker_pid(self._instance, run.run_id)
        if pid is None or alive(pid):  # in doubt, a run is left to its max runtime, never failed
            return CheckRunHealthResult(WorkerStatus.RUNNING, run_worker_id=str(pid))
        return CheckRunHealthResult(WorkerStatus.FAILED, gone(pid), run_worker_id=str(pid))


def worker_pid(instance, run_id: str) -> int | None:
    """The pid of the process that started the run (its RUN_START event), or None."""
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.RUN_START):
        if entry.dagster_event is not None and entry.dagster_event.pid:
            return int(entry.dagster_event.pid)
    return None


def gone(pid: int) -> str:
    return (f"the run's process (pid {pid}) is gone: killed (kill -9, out of memory?) or the host restarted; "
            "the run is marked failed so that the next run of its day can start")
