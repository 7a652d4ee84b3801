"""A night that runs out of disk, memory or open files ends with one line per failed step naming what ran out and,
for a disk, which of the night's folders is full and how much is left (a full lake had ended in 1,218 lines of
stacks naming neither)."""

import errno
import os
import subprocess

import dagster as dg
import pytest

from assets.run import explain_failure
from lb_pipeline.errors import ran_out


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB file system (tmpfs), filled to the last byte."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    assert done.returncode == 0, f"the test needs to mount a 1 MiB tmpfs (root, as CI runs): {done.stderr.strip()}"
    try:
        with open(mount / "filler", "wb", buffering=0) as f:
            with pytest.raises(OSError) as full:
                while True:
                    f.write(b"x" * 4096)
            assert full.value.errno == errno.ENOSPC
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_delta_write_on_a_full_disk_is_told_as_the_lakes_disk_being_full(spark, full_disk, tmp_path):
    from lb_pipeline.spark.lake import Lake

    frame = spark.createDataFrame([("2026-01-15", "x" * 100)] * 100, "snapshot_date string, v string")
    with pytest.raises(Exception) as raised:
        Lake(str(full_disk / "lake")).write_partition(frame, "bronze", "t", "2026-01-15")
    line = ran_out(str(raised.value), {"the lake": str(full_disk / "lake"), "the reports": str(tmp_path)})
    assert line.startswith("ran out of disk space (No space left on device): the lake ")
    assert f"{full_disk / 'lake'} (0 B free of 1.0 MB)" in line and "the reports" not in line


def test_a_failed_step_that_ran_out_of_disk_is_one_line_naming_the_full_folder(full_disk, tmp_path):
    @dg.asset
    def writes_a_table():
        raise RuntimeError("writing failed") from OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    result = dg.materialize([writes_a_table], raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    (line,) = explain_failure(result, {"the lake": str(full_disk), "the reports": str(tmp_path)})
    assert line == (f"step writes_a_table: ran out of disk space (No space left on device): the lake {full_disk} "
                    "(0 B free of 1.0 MB). Free space there and run the day again")


def test_memory_and_open_files_that_ran_out_are_named_and_other_errors_are_not():
    assert ran_out("py4j.protocol.Py4JJavaError: ... java.lang.OutOfMemoryError: Java heap space", {}).startswith(
        "ran out of memory (java.lang.OutOfMemoryError): give Spark more")
    assert ran_out("OSError: [Errno 24] Too many open files", {}).startswith("ran out of open files")
    assert ran_out("ValueError: expected a number", {"the lake": "/"}) is None


def test_a_full_disk_no_folder_of_the_night_is_on_says_space_was_freed_or_is_elsewhere(tmp_path):
    line = ran_out("No space left on device", {"the lake": str(tmp_path)})
    assert line == (f"ran out of disk space (No space left on device); none of the lake {tmp_path} is full now "
                    "(space freed since?). Free space and run the day again")
