"""A Spark JVM that dies mid-night (the kernel kills it when memory runs out) is named and replaced: the step's retry
runs on a new JVM and the rest of the night runs. In a process of its own: the suite's session must not die."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent('''
    import os, signal, sys, time
    import dagster as dg
    from assets.resources import SparkResource
    from assets.run import explain_failure

    attempts, pids = [], []

    def kill_jvm(session):
        pid = int(session._jvm.java.lang.ProcessHandle.current().pid())
        os.kill(pid, signal.SIGKILL)
        while os.path.exists(f"/proc/{pid}") and "zombie" not in open(f"/proc/{pid}/status").read().lower():
            time.sleep(0.05)
        return pid

    @dg.asset(retry_policy=dg.RetryPolicy(max_retries=1))
    def first(spark: SparkResource) -> int:
        s = spark.session
        attempts.append(1)
        if len(attempts) == 1:
            pids.append(kill_jvm(s))  # the kernel's OOM killer, as it struck the report step
        return s.range(5).count()

    @dg.asset
    def second(spark: SparkResource, first: int) -> int:
        s = spark.session
        pids.append(int(s._jvm.java.lang.ProcessHandle.current().pid()))
        return first + s.range(2).count()

    @dg.asset
    def doomed(spark: SparkResource) -> int:  # dies on every attempt: the night's line names the cause
        s = spark.session
        kill_jvm(s)
        return s.range(1).count()

    resources = {"spark": SparkResource(master="local[1]")}
    result = dg.materialize([first, second], resources=resources)
    print("RESULT", result.success, result.output_for_node("second"), len(attempts), pids[0] != pids[1], flush=True)
    failed = dg.materialize([doomed], resources=resources, raise_on_error=False)
    print("FAILED", failed.success, explain_failure(failed)[0], flush=True)
''')


def test_a_step_whose_jvm_was_killed_is_retried_on_a_new_one_and_the_night_goes_on():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    (result,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert result == "RESULT True 7 2 True", out[-3000:]  # 5 + 2, on a second JVM, after one retry
    assert "lb-pipeline: the Spark driver JVM exited (killed by the kernel when memory ran out?" in done.stderr
    (failed,) = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert failed.startswith("FAILED False step doomed: ") and "the Spark driver JVM exited" in failed, failed
