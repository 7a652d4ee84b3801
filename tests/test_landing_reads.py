"""Where a listed file belongs and what the reader opens: the landing folder, not a folder above it, places a
file; a hard link or a folder swapped for a link since the listing is refused, never read."""

import os

import pytest

from lb_pipeline.ingest.landing import list_day
from lb_pipeline.ingest.reading import read_listed
from lb_pipeline.ingest.tables import locate
from tests.test_landing import DAY, GLOBS, _listed, snapshot  # noqa: F401 - snapshot is a fixture


def test_a_landing_folder_inside_a_folder_named_like_a_snapshot_time_is_not_taken_for_a_snapshot(tmp_path):
    """The cluster and snapshot of a file are the two folders after the landing folder, wherever that sits: a
    parent named like a snapshot time (a folder per deployment, say) had been taken for the snapshot."""
    from lb_pipeline.ingest.files import listing_quarantine

    root = tmp_path / f"{DAY}T00-00-00Z" / "landing"
    snap = root / "c1" / f"{DAY}T08-00-00Z"
    (snap / "topics").mkdir(parents=True)
    (snap / "topics" / "b_8080.json").write_text("{}")
    (snap / "topics" / "empty.json").write_text("")  # listed for the quarantine
    listing = list_day(None, str(root), DAY, GLOBS)
    assert listing.root == f"file:{root}"
    (uri,) = listing.files["topic_stats"]
    cluster, ts, rel = locate(uri, listing.root)
    assert (cluster, ts.strftime("%H:%M"), rel) == ("c1", "08:00", "topics/b_8080.json")
    assert locate(uri)[0] != "c1"  # without the landing folder, its parent would have been the snapshot
    (row,) = listing_quarantine(listing)
    assert (row["cluster"], row["snapshot_ts"].strftime("%H:%M"), row["bronze_table"]) == ("c1", "08:00", "topic_stats")


def test_validate_snapshot_places_a_snapshot_under_a_folder_named_like_a_snapshot_time(tmp_path):
    from lb_pipeline.ingest.snapshot_check import check_snapshot
    from lb_pipeline.snapshots.generate import generate

    root = tmp_path / f"{DAY}T00-00-00Z" / "landing"
    generate(root, "demo", seed=5, start=f"{DAY}T08:00:00Z", snapshots=1)
    (snap,) = root.glob("*/*T*")
    got = check_snapshot(str(snap))
    assert got.manifest_usable and got.quarantined == []


def test_a_hard_link_is_refused_by_name_unless_hard_links_are_read(snapshot, tmp_path, monkeypatch):
    """A hard link's other name may be outside the landing folder: its text (a password file, say) had been read
    and stored in the quarantine's raw column. A collector that hard-links unchanged files opts in."""
    from lb_pipeline.ingest.files import listing_quarantine

    outside = tmp_path / "outside.json"
    outside.write_text('{"password": "hunter2"}')
    os.link(outside, snapshot / "topics/linked_8080.json")
    listing, files, refused = _listed(snapshot)
    assert files["topic_stats"] == ["topics/b_8080.json"]
    assert refused["linked_8080.json"][0] == "(path)" and "a hard link (2 names of one file" in refused["linked_8080.json"][1]
    assert all(q["raw"] is None for q in listing_quarantine(listing))  # by name: nothing of it read
    monkeypatch.setenv("LB_READ_HARD_LINKS", "1")
    _, files, refused = _listed(snapshot)
    assert files["topic_stats"] == ["topics/b_8080.json", "topics/linked_8080.json"] and not refused


def test_a_worker_refuses_a_file_hard_linked_since_it_was_listed(tmp_path):
    listed = tmp_path / "listed.json"
    listed.write_bytes(b"{}")
    os.link(listed, tmp_path / "elsewhere.json")
    with pytest.raises(ValueError, match="a hard link since it was listed"):
        read_listed(f"file:{listed}", 100, hard_links=False)
    assert read_listed(f"file:{listed}", 100, hard_links=True) == b"{}"


def test_validate_snapshot_names_a_hard_link_and_does_not_read_it(tmp_path):
    from lb_pipeline.ingest.validate import validate_snapshot
    from lb_pipeline.snapshots.generate import generate

    generate(tmp_path / "landing", "demo", seed=11, start=f"{DAY}T08:00:00Z", snapshots=1)
    snap = next((tmp_path / "landing").glob("*/*"))
    report = sorted((snap / "lb/brokers").iterdir())[0]
    os.link(report, tmp_path / "outside.json")
    found = {(f.file, f.field): f.message for f in validate_snapshot(snap)}
    rel = str(report.relative_to(snap))
    assert "a hard link (2 names" in found[(rel, "(path)")]


def test_a_folder_swapped_for_a_link_after_the_listing_leads_nowhere_outside(snapshot, tmp_path):
    """A race: a folder of the snapshot renamed away and replaced by a link to an outside folder holding a file of
    the same name, between the listing and the read. ``O_NOFOLLOW`` on the file alone had followed the folder and
    stored the outside file as a good row; opened from the landing folder down, no component is followed."""
    root = snapshot.parents[1]
    listing = list_day(None, str(root), DAY, GLOBS)
    (uri,) = listing.files["namespaces"]  # namespaces/t/n.json
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "n.json").write_text('{"antiAffinityGroup": "STOLEN-OUTSIDE-SECRET"}')
    (snapshot / "namespaces" / "t").rename(snapshot / "namespaces" / "t-away")
    os.symlink(outside, snapshot / "namespaces" / "t")
    assert read_listed(uri, 100, root=None) == (outside / "n.json").read_bytes()  # what the last component alone let through
    with pytest.raises(ValueError, match="a folder on its path was replaced by a link since it was listed"):
        read_listed(uri, 100, root=listing.root)
    os.unlink(snapshot / "namespaces" / "t")
    (snapshot / "namespaces" / "t-away").rename(snapshot / "namespaces" / "t")
    assert read_listed(uri, 100, root=listing.root) == b'{"x": 1}'  # the genuine file, read from the root down
    with pytest.raises(ValueError, match="expected a file inside the landing folder"):
        read_listed(f"file:{tmp_path / 'outside' / 'n.json'}", 100, root=listing.root)


def test_a_file_renamed_in_place_of_the_listed_one_is_refused_not_read(snapshot, tmp_path):
    """Not a link and one name only: another file renamed over the listed one since the listing. The worker reads
    a file only if it is the one listed (device and inode)."""
    from lb_pipeline.ingest.reading import REPLACED

    root = snapshot.parents[1]
    listing = list_day(None, str(root), DAY, GLOBS)
    (uri,) = listing.files["namespaces"]
    assert read_listed(uri, 100, root=listing.root, listed=listing.ids[uri]) == b'{"x": 1}'
    other = tmp_path / "other.json"
    other.write_text('{"antiAffinityGroup": "NOT-THE-FILE-LISTED"}')
    other.rename(uri[len("file:"):])
    with pytest.raises(ValueError, match="not the file listed"):
        read_listed(uri, 100, root=listing.root, listed=listing.ids[uri])
    assert REPLACED.startswith("refused: not the file listed")
    assert b"NOT-THE-FILE-LISTED" in read_listed(uri, 100, root=listing.root)  # no identity given: what it had read
