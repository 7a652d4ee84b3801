"""Folders that cannot be listed (permissions, vanished) and cluster folders that look hidden: every listing of the
landing folder names what it could not read and goes on with the rest. Tests run as root here, whom mode 000 does
not stop, so a folder's listing is made to fail as it does for another user (``PermissionError`` from
``os.scandir``)."""

import json
import os

import dagster as dg
import pytest

from assets.automation import landing_sensor
from assets.resources import LandingResource
from assets.run import days_in
from lb_pipeline.ingest.files import listing_quarantine
from lb_pipeline.ingest.landing import list_day
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.snapshots.generate import generate

DAY = "2026-01-15"
GLOBS = {t.name: t.globs for t in TABLES.values()}


@pytest.fixture
def landing(tmp_path):
    """Two clusters of two snapshots each: ``locked`` cannot be listed, ``open`` can."""
    for cluster in ("locked", "open"):
        generate(tmp_path, "demo", seed=3, start=f"{DAY}T08:00:00Z", snapshots=2, cluster_name=cluster)
    return tmp_path


@pytest.fixture
def unlistable(monkeypatch, landing):
    """``landing/locked`` as mode 000 makes it for a user other than root."""
    scandir, locked = os.scandir, str(landing / "locked")

    def refusing(path="."):
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", locked)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    return landing / "locked"


def test_ingest_refuses_a_cluster_folder_it_cannot_list_by_name_and_lists_the_other(landing, unlistable):
    listing = list_day(None, str(landing), DAY, GLOBS)
    assert listing.refused == [(f"file:{unlistable}", "(directory)",
                                "refused: a folder that cannot be listed (Permission denied): nothing in it read")]
    files = [f for fs in listing.files.values() for f in fs]
    assert files and all(f.startswith(f"file:{landing / 'open'}/") for f in files)
    (row,) = listing_quarantine(listing)
    assert (row["cluster"], row["snapshot_ts"], row["field"], row["raw"]) == ("locked", None, "(directory)", None)


def test_the_main_command_names_the_folder_it_cannot_list_and_runs_the_other_clusters_days(landing, unlistable):
    days, skipped = days_in(str(landing))
    assert days == [DAY]
    assert skipped == [f"{unlistable}: cannot be listed (Permission denied): nothing in it read"]


def test_the_landing_sensor_warns_of_a_folder_it_cannot_list_and_requests_the_others(landing, unlistable):
    ctx = dg.build_sensor_context(resources={"landing": LandingResource(path=str(landing))},
                                  instance=dg.DagsterInstance.ephemeral())
    (request,) = landing_sensor(ctx)
    assert request.partition_key == DAY and "open/" in request.run_key
    assert set(json.loads(ctx.cursor)["newest"]) == {"open"}


def test_a_what_if_on_a_cluster_it_cannot_list_says_which_folder_and_why(landing, unlistable):
    from lb_pipeline.errors import LbError
    from lb_pipeline.simulation.landing import snapshot_dirs

    with pytest.raises(LbError, match="locked: cannot be listed \\(Permission denied\\)"):
        snapshot_dirs(landing, DAY, "locked")
    cluster, dirs = snapshot_dirs(landing, DAY, "open")
    assert cluster == "open" and [d.parent.name for d in dirs] == ["open", "open"]


def test_a_cluster_named_with_a_leading_dot_is_read_like_any_other(tmp_path):
    """Pulsar accepts ``.prod`` and ``collect`` writes its folder; ingest, the main command and the sensor had
    passed it over as hidden (0 rows, no line). A snapshot folder with a leading dot is still the collector's
    unfinished one."""
    generate(tmp_path, "demo", seed=3, start=f"{DAY}T08:00:00Z", snapshots=1, cluster_name=".prod")
    (tmp_path / ".prod" / f".{DAY}T09-00-00Z.tmp").mkdir()
    listing = list_day(None, str(tmp_path), DAY, GLOBS)
    assert listing.files["snapshots"] == [f"file:{tmp_path / '.prod' / f'{DAY}T08-00-00Z' / 'manifest.json'}"]
    assert not listing.refused
    assert days_in(str(tmp_path)) == ([DAY], [])
    (request,) = landing_sensor(dg.build_sensor_context(resources={"landing": LandingResource(path=str(tmp_path))},
                                                        instance=dg.DagsterInstance.ephemeral()))
    assert request.run_key == f"{DAY}@.prod/{DAY}T08-00-00Z"
