"""A crashed or doubled main command loses nothing.

``kill -9`` during bronze writes, again during silver, again during gold, then a re-run — on a Spark standalone
cluster, Spark's default plans — and every table holds exactly what a clean ``local[2]`` run in the session writes, its
queries planned without adaptive execution or broadcast joins (row count and content checksum per table); each run resumes from what the runs before it completed. A second run of the same day started while one is running
exits at once naming the run that holds the day, and the first completes with one report."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lb_pipeline.partition_lock import PartitionBusy, partition_lock
from tests.background import after_silver
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


def test_kill_9_in_bronze_in_silver_and_in_gold_then_a_rerun_on_a_spark_cluster_equals_a_clean_local_run(
        crashed_night, spark, lake, demo_landing):
    """The re-run that finishes the night goes to a standalone master and worker (``LB_SPARK_MASTER=spark://…``):
    the nightly job runs unchanged on a real cluster, and what it writes equals the ``local[2]`` run's tables. The
    runs themselves ran beside the suite (``tests/background.py``)."""
    night = crashed_night
    (bronze, bronze_tables, _), (silver, silver_tables, _), (gold, gold_tables, report) = night.killed
    assert (bronze, silver, gold) == ("bronze", "silver", "gold")
    layers = lambda tables: {t.split("/")[0] for t in tables if t != "gold/night_runs"}  # noqa: E731
    assert layers(bronze_tables) == {"bronze"}  # killed inside bronze
    # each run resumed from the last: a step the killed run before it completed is not computed again (spark/steps.py)
    assert "bronze_tables" not in night.resumed[0] | night.resumed[1]  # killed inside bronze: the step not complete
    assert "bronze_tables" in night.resumed[2] and "bronze_tables" in night.resumed[3], night.resumed
    assert any(step.startswith("silver__") for step in night.resumed[3]), night.resumed
    written, gold_work = {p.parent.name for p in (night.lake / "silver").glob("*/_delta_log")}, after_silver()
    assert 0 < len({t for t in silver_tables if t.startswith("silver/")}) < len(written)  # inside silver
    assert not {t for t in silver_tables if t.split("/")[1] in gold_work}
    assert {t for t in gold_tables if t.split("/")[1] in gold_work} and not report  # inside gold, before the report
    # each killed night was left marked partial (gold/night_runs: running), the re-run marked it complete
    status = lambda path: [r.status for r in spark.read.format("delta").load(str(path)).collect()]  # noqa: E731
    assert [status(path) for path in night.night_runs_between] == [["running"]] * 3
    assert status(night.lake / "gold" / "night_runs") == ["complete"]
    assert night.doubled.returncode == 3 and f"pid {night.rerun_pid}" in night.doubled.stderr, night.doubled.stderr
    assert night.rerun_alive_after_doubled, "the doubled run should have left while the first still ran"
    assert night.doubled_seconds < 120 and "nightly run for" in night.doubled.stdout
    assert night.rerun_code == 0, night.rerun_output
    # the main command ends with each report and the index of every night beside it, as make demo shows them
    for report in night.reports.resolve().glob(f"*/{DEMO_DAY}.html"):
        assert f"  {report}\n  {report.parent / 'index.html'} (every night of {report.parent.name})" in \
            night.rerun_output
        resumed = re.search(r'<p data-testid="resumed">(.*?)</p>', report.read_text())  # says which run computed what
        assert resumed and all(re.search(rf"run [0-9a-f-]+: [^;]*\b{step}\b", resumed.group(1))
                               for step in night.resumed[3]), resumed

    assert len(list(night.reports.glob(f"*/{DEMO_DAY}.html"))) == \
        len({p.parent.parent.name for p in demo_landing.glob("*/*/manifest.json")})
    assert list(night.worker_dir.glob("app-*/*/stderr")), "no executor ran on the worker: the re-run did not use it"
    clean = table_fingerprints(spark, Path(lake.root))
    assert table_fingerprints(spark, night.lake) == clean and len(clean) >= 20


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
