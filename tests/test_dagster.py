"""The Dagster code location: it loads, materializes the graph against a temporary lake, and serves the UI."""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg
import pytest

from assets.definitions import defs
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]


def test_asset_keys_mirror_the_lake_and_groups_follow_stages():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"bronze/topic_stats", "bronze/quarantine", "silver/bundle_stats", "silver/broker_usage"} <= keys
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert {"ingest", "stats", "splits", "shedding", "simulation", "planning", "quality"} <= groups
    for k in graph.get_all_asset_keys():
        layer = k.path[0]
        assert layer in {"bronze", "silver", "gold", "reports"}


def test_runs_use_the_in_process_executor():
    assert defs.resolve_job_def("nightly").executor_def.name == "in_process"


@pytest.mark.spark
def test_the_asset_graph_materializes_against_a_temporary_lake(pipeline_run, spark):
    result, lake_root, _ = pipeline_run
    assert result.success
    # the night marked complete by its last step, by the run that wrote it
    (night,) = spark.read.format("delta").load(str(lake_root / "gold" / "night_runs")).collect()
    assert (night.status, night.run_id) == ("complete", result.run_id)
    mats = {m.asset_key.to_user_string(): m for m in result.get_asset_materialization_events()
            for m in [m.event_specific_data.materialization]}
    assert mats["bronze/snapshots"].metadata["dagster/row_count"].value == 4
    assert mats["silver/bundle_stats"].metadata["path"].value == str(lake_root / "silver" / "bundle_stats")
    assert (lake_root / "silver" / "bundle_stats" / "_delta_log").is_dir()


def test_definitions_validate_cli():
    out = subprocess.run([sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_webserver_lists_the_asset_groups(tmp_path):
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1",
                             "-p", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    query = (b'{"query": "{ assetNodes { groupName assetKey { path } '
             b'assetChecksOrError { ... on AssetChecks { checks { name blocking } } } } }"}')
    try:
        deadline, body = time.time() + 120, None
        while time.time() < deadline and body is None:
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=query,
                                             headers={"Content-Type": "application/json"})
                body = urllib.request.urlopen(req, timeout=10).read().decode()
            except OSError:
                time.sleep(1)
        assert body is not None, "dagster-webserver did not answer within 120 s"
        import json

        nodes = json.loads(body)["data"]["assetNodes"]
        assert {"ingest", "stats", "splits", "shedding"} <= {n["groupName"] for n in nodes}
        assert ["silver", "broker_usage"] in [n["assetKey"]["path"] for n in nodes]
        checks = {c["name"]: c["blocking"] for n in nodes for c in (n.get("assetChecksOrError") or {}).get("checks", [])}
        assert checks.get("bronze_broker_reports") is True and checks.get("silver_bundle_stats") is False
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_main_command_records_runs_in_a_dagster_home_it_creates_and_refuses_one_that_is_a_file(
        tmp_path, monkeypatch, capsys):
    """``DAGSTER_HOME=runs python -m assets.run …``: Dagster wants an existing, absolute folder."""
    from assets import run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", "runs/dagster")
    instance = run.recording_instance()
    assert (tmp_path / "runs" / "dagster").is_dir() and os.environ["DAGSTER_HOME"] == str(tmp_path / "runs" / "dagster")
    assert instance.root_directory == str(tmp_path / "runs" / "dagster")
    assert "created DAGSTER_HOME" in capsys.readouterr().err
    instance.dispose()
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "a-file"))
    assert run.recording_instance() is None
    assert "is not a folder" in capsys.readouterr().err
