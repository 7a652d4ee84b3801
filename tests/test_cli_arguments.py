"""Arguments a command could not use are refused by argparse, naming the argument and the value, before anything runs
(``lb_pipeline.cli_types``): a typed day emptied the lake, a negative seed or an impossible time raised tracebacks."""

from __future__ import annotations

import pytest

from lb_pipeline.cli import main
from tests.conftest import DEMO_DAY


@pytest.mark.parametrize("argv, said", [
    (["simulate", "--landing", "L", "--day", "2026-13-01"], "argument --day: invalid day value: '2026-13-01'"),
    (["ingest", "--day", "2026-01-16' OR '1'='1"], "argument --day: invalid day value"),  # it emptied the lake
    (["ingest", "--day", "2026-1-16"], "argument --day: invalid day value: '2026-1-16'"),
    (["whatif", "split", "S", "--positions", "0x10,zz"], "argument --positions: invalid positions value: '0x10,zz'"),
    (["simulate", "--landing", "L", "--day", DEMO_DAY, "--set", "=1"], "argument --set: invalid key_value value: '=1'"),
    (["simulate", "--landing", "L", "--day", DEMO_DAY, "--seeds", "0"], "argument --seeds: invalid size value: '0'"),
    (["generate", "--seed", "-1"], "argument --seed: invalid count value: '-1'"),  # numpy raised
    (["generate", "--start", "2026-13-01T00:00:00Z"], "argument --start: invalid utc_time value"),
    (["collect", "--admin-url", "http://x", "--timeout", "0"], "argument --timeout: invalid positive value: '0'"),
    (["collect", "--admin-url", "http://x", "--retries", "-1"], "argument --retries: invalid count value: '-1'"),
    (["collect", "--admin-url", "http://x", "--max-response-bytes", "0"], "argument --max-response-bytes: invalid size"),
    (["validate-snapshot", "S", "--tolerance", "-1"], "argument --tolerance: invalid tolerance value: '-1'"),
    (["validate-snapshot", "S", "--max-findings", "-1"], "argument --max-findings: invalid count value: '-1'")])
def test_arguments_are_refused_by_name_before_anything_runs(argv, said, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and said in capsys.readouterr().err


def test_generate_refuses_an_unknown_scenario_by_name(tmp_path, capsys):
    assert main(["generate", "--out", str(tmp_path), "--snapshots", "1", "--scenario", "hot"]) != 0
    assert "unknown scenario 'hot'; choose from hot-topic, or none" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_the_nightly_job_runs_from_the_command_line_with_its_own_arguments_and_exit_status(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    lb = Path(sys.executable).with_name("lb-pipeline")
    helped = subprocess.run([str(lb), "nightly", "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert helped.returncode == 0 and "--landing LANDING" in helped.stdout and "--day DAY" in helped.stdout
    (tmp_path / "landing").mkdir()
    empty = subprocess.run([str(lb), "nightly", "--landing", "landing", "--lake", "lake"], capture_output=True,
                           text=True, cwd=tmp_path, timeout=300)
    assert empty.returncode == 2 and f"no snapshot directories to run under {tmp_path / 'landing'}" in empty.stderr
