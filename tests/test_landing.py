"""The landing folder is a boundary: ingest lists what it may read without following links or opening anything,
and refuses by name what the snapshot format never writes."""

import json
import os
import sys
from pathlib import Path

import pytest

from lb_pipeline.ingest.landing import list_day
from lb_pipeline.ingest.reading import MIN_SPLIT, OPEN_COST, TASKS, packed, read_listed, task_count
from lb_pipeline.ingest.tables import TABLES, locate

DAY = "2026-01-15"
GLOBS = {t.name: t.globs for t in TABLES.values()}


@pytest.fixture
def snapshot(tmp_path):
    snap = tmp_path / "landing" / "c1" / f"{DAY}T08-00-00Z"
    for rel in ("manifest.json", "lb/brokers/b_8080.json", "topics/b_8080.json", "brokers.json",
                "lb/broker-time-average/b_8080.json", "namespaces/t/n.json"):
        (snap / rel).parent.mkdir(parents=True, exist_ok=True)
        (snap / rel).write_text(json.dumps({"x": 1}))
    return snap


def _listed(snapshot, **kw):
    listing = list_day(None, str(snapshot.parents[1]), DAY, GLOBS, **kw)
    files = {t: sorted(f.rsplit(snapshot.name + "/", 1)[-1] for f in fs) for t, fs in listing.files.items()}
    refused = {u.rsplit("/", 1)[-1]: (field, why) for u, field, why in listing.refused}
    return listing, files, refused


def test_each_file_goes_to_every_table_that_reads_it_and_unread_parts_are_not_refused(snapshot):
    listing, files, refused = _listed(snapshot)
    assert files == {"snapshots": ["manifest.json"], "broker_reports": ["lb/brokers/b_8080.json"],
                     "bundle_reports": ["lb/brokers/b_8080.json"], "topic_stats": ["topics/b_8080.json"],
                     "namespaces": ["namespaces/t/n.json"]}
    assert not refused and not listing.empty_dirs and not listing.empty_files


def test_links_devices_and_foreign_names_are_refused_without_being_opened(snapshot, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("secret")
    os.symlink(outside, snapshot / "topics/link_8080.json")
    os.symlink(tmp_path / "nowhere", snapshot / "topics/dangling_8080.json")
    os.symlink(tmp_path, snapshot / "namespaces/linked")
    os.mkfifo(snapshot / "topics/fifo_8080.json")  # opening a FIFO would block ingest for ever
    (snapshot / "topics/a b;rm.json").write_text("{}")
    (snapshot / "topics/b:8080.json").write_text("{}")
    (snapshot / "README.txt").write_text("hi")
    _, files, refused = _listed(snapshot)
    assert files["topic_stats"] == ["topics/b_8080.json"]
    for name in ("link_8080.json", "dangling_8080.json", "linked"):
        assert refused[name] == ("(path)", "refused: a symbolic link (never followed, not read)"), name
    assert "not a regular file" in refused["fifo_8080.json"][1]
    for name in ("a b;rm.json", "b:8080.json"):
        assert refused[name][0] == "(path)" and "letters, digits" in refused[name][1]
    assert "docs/snapshot-format.md" in refused["README.txt"][1]


def test_a_linked_cluster_or_snapshot_directory_is_refused(snapshot, tmp_path):
    os.symlink(snapshot, snapshot.parent / f"{DAY}T09-00-00Z")
    os.symlink(snapshot.parent, snapshot.parents[1] / "c2")
    _, files, refused = _listed(snapshot)
    assert files["snapshots"] == ["manifest.json"]
    assert refused[f"{DAY}T09-00-00Z"][0] == "(path)" and refused["c2"][0] == "(path)"


def test_directory_names_that_are_no_time_of_the_day_are_refused(snapshot):
    arabic = f"{DAY}T0\u0661-00-00Z"  # an Arabic-Indic one: the same instant as 01:00 to strptime
    for name in (f"{DAY}T25-61-00Z", f"{DAY}T08-00-00Z-copy", arabic):
        (snapshot.parent / name / "cluster").mkdir(parents=True)
        (snapshot.parent / name / "cluster/failure-domains.json").write_text("{}")
    (snapshot.parent / "yesterday").mkdir()  # not of this day at all: not listed
    listing, files, refused = _listed(snapshot)
    assert {n: f for n, (f, _) in refused.items()} == {f"{DAY}T25-61-00Z": "(directory)",
                                                       f"{DAY}T08-00-00Z-copy": "(directory)", arabic: "(directory)"}
    assert locate(f"/l/c/{arabic}/manifest.json") is None
    assert "failure_domains" not in files


def _nest(folder, levels: int, file: str) -> None:
    """``levels`` folders ``d`` one in another under ``folder``, ``file`` at the bottom: created through directory
    descriptors, as a path that long could not even be opened."""
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(parent)
    os.close(os.open(file, os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)


def test_folders_nested_past_the_format_are_refused_and_the_deepest_it_writes_are_listed(snapshot):
    """1,500 nested folders (a path past PATH_MAX) overflowed the recursion and stopped the night."""
    import subprocess

    (snapshot / "lb/bundle-data/t/n/extra").mkdir(parents=True)
    (snapshot / "lb/bundle-data/t/n/0x00000000_0x40000000.json").write_text("{}")
    (snapshot / "lb/bundle-data/t/n/extra/0x00000000_0x40000000.json").write_text("{}")
    _nest(snapshot / "topics", 1500, "b2_8080.json")
    _nest(snapshot / "namespaces/t", 1500, "n2.json")  # validate-snapshot and the what-ifs look for namespaces too
    try:
        listing, files, refused = _listed(snapshot)
        validated = subprocess.run([sys.executable, "-m", "lb_pipeline.cli", "validate-snapshot", "--recursive",
                                    snapshot.parents[1]], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    finally:
        subprocess.run(["rm", "-rf", snapshot / "topics/d", snapshot / "namespaces/t/d"], check=True)  # rmtree recurses
    assert files["bundle_data"] == ["lb/bundle-data/t/n/0x00000000_0x40000000.json"]
    assert files["topic_stats"] == ["topics/b_8080.json"]
    deep = [(u.rsplit(snapshot.name + "/", 1)[-1], f) for u, f, why in listing.refused if "deeper" in why]
    assert deep == [("lb/bundle-data/t/n/extra", "(path)"), ("namespaces/t/d/d/d", "(path)"), ("topics/d/d/d/d", "(path)")]
    assert f"{snapshot}: " in validated.stdout and "RecursionError" not in validated.stderr, validated.stderr[-2000:]


def test_files_over_the_size_limit_are_refused_by_size(snapshot, monkeypatch):
    (snapshot / "topics/big_8080.json").write_text(" " * 5000 + "{}")
    _, files, refused = _listed(snapshot, limit=4096)
    assert "topics/big_8080.json" not in files["topic_stats"]
    assert refused["big_8080.json"][0] == "(file)" and "5002" in refused["big_8080.json"][1]
    monkeypatch.setenv("LB_MAX_FILE_BYTES", "4096")
    assert "big_8080.json" in _listed(snapshot)[2]


def test_empty_files_and_directories_are_listed_for_the_quarantine(snapshot):
    (snapshot / "topics/empty_8080.json").write_text("")
    (snapshot.parent / f"{DAY}T09-30-00Z").mkdir()
    listing, _, _ = _listed(snapshot)
    assert [f.rsplit("/", 1)[-1] for f in listing.empty_files] == ["empty_8080.json"]
    assert [d.rsplit("/", 1)[-1] for d in listing.empty_dirs] == [f"{DAY}T09-30-00Z"]


def test_names_that_are_not_utf8_are_refused_with_their_bytes_escaped(snapshot):
    """Python carries such bytes as lone surrogates, which neither Spark nor a strict UTF-8 terminal takes."""
    import shutil

    landing = snapshot.parents[1]
    shutil.copytree(snapshot, landing / os.fsdecode(b"bad\xffc") / snapshot.name)
    shutil.copytree(snapshot, landing / "a b" / snapshot.name)  # Pulsar's NamedEntity rule has no space
    shutil.copytree(snapshot, landing / "c2:x=y_z.1" / snapshot.name)  # every character it allows
    (landing / "c1" / os.fsdecode(f"{DAY}T".encode() + b"\xfe")).mkdir()
    (snapshot / "topics" / os.fsdecode(b"\xc3(.json")).write_text("{}")
    listing = list_day(None, str(landing), DAY, GLOBS)
    refused = {uri.removeprefix(f"file:{landing}/"): (field, why) for uri, field, why in listing.refused}
    assert set(refused) == {f"bad\\xffc/{snapshot.name}", f"a b/{snapshot.name}", f"c1/{DAY}T\\xfe",
                            f"c1/{snapshot.name}/topics/\\xc3(.json"}
    assert all(why.encode("utf-8") for _, why in refused.values())  # no lone surrogate anywhere
    assert refused[f"bad\\xffc/{snapshot.name}"] == ("(directory)", "expected a cluster folder named as Pulsar names "
        "clusters (a cluster may only hold letters, digits and _ - = : . (Pulsar's NamedEntity rule), got "
        "'bad\\\\xffc'): nothing of it read")
    assert refused[f"c1/{DAY}T\\xfe"][0] == "(directory)" and refused[f"c1/{snapshot.name}/topics/\\xc3(.json"][0] == "(path)"
    assert sum(f.startswith(f"file:{landing}/c2:x=y_z.1/") for f in listing.files["topic_stats"]) == 1
    assert not any("bad" in f or "a b" in f for fs in listing.files.values() for f in fs)  # nothing of them read


def test_validate_snapshot_names_a_folder_that_is_not_utf8_on_a_strict_terminal(snapshot):
    import shutil
    import subprocess

    bad = snapshot.parents[1] / os.fsdecode(b"bad\xffc") / snapshot.name
    shutil.copytree(snapshot, bad)
    run = subprocess.run([sys.executable, "-m", "lb_pipeline.cli", "validate-snapshot", bad], capture_output=True,
                         env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"}, cwd=Path(__file__).parents[1])
    out = run.stdout.decode("utf-8")
    assert run.returncode == 1, run.stderr.decode("utf-8", "replace")[-2000:]
    assert f"bad\\xffc/{snapshot.name}: " in out and ".: (directory): expected a cluster folder named as Pulsar" in out


def test_files_pack_into_tasks_by_their_sizes_alone():
    sizes = {f"file:/l/c/{DAY}T00-00-00Z/topics/b{i}_8080.json": (i % 7 + 1) * 10_000 for i in range(100)}
    sizes["file:/l/big.json"] = 2 * MIN_SPLIT
    sizes.update({f"file:/l/c/{DAY}T01-00-00Z/topics/b{i}_8080.json": 3_000_000 + i for i in range(40)})
    groups = packed(list(sizes), sizes)
    assert sorted(p for g in groups for p in g) == sorted(sizes)  # every file once
    assert groups == packed(sorted(sizes, reverse=True), sizes)  # the listing's order does not matter
    assert groups[0] == ["file:/l/big.json"]  # largest first, alone: it passes a task's share by itself
    share = (sum(sizes.values()) + len(sizes) * OPEN_COST) // TASKS
    assert share > MIN_SPLIT  # a day large enough to be cut in sixteenths
    used = [sum(sizes[p] + OPEN_COST for p in g) for g in groups]
    assert all(u - OPEN_COST <= share for u in used[1:])  # no task holds more than its share
    assert all(u + sizes[g[0]] > share for u, g in zip(used, groups[1:]))  # and each is closed only when full


def test_a_small_day_packs_into_tasks_of_at_least_min_split():
    sizes = {f"file:/l/c/{DAY}T00-00-00Z/bundle-data/b{i}.json": 2_000 + i for i in range(300)}
    groups = packed(list(sizes), sizes)  # 300 files of 2 kB: a sixteenth is 1.3 MB, a task holds 8 MB
    assert sorted(p for g in groups for p in g) == sorted(sizes)
    used = [sum(sizes[p] + OPEN_COST for p in g) for g in groups]
    assert len(groups) == -(-sum(used) // MIN_SPLIT) == 3
    assert all(u - OPEN_COST <= MIN_SPLIT for u in used)  # as Spark packs: a file is counted its open cost more
    assert packed(list(sizes)[:10], sizes) == [sorted(list(sizes)[:10], key=lambda p: -sizes[p])]  # ten: one task


def test_a_worker_reads_only_the_regular_file_it_was_listed(tmp_path):
    good, outside = tmp_path / "good.json", tmp_path / "outside.json"
    good.write_bytes(b'{"a": 1}')
    outside.write_text("secret")
    assert read_listed(f"file:{good}", 100) == b'{"a": 1}'
    os.symlink(outside, tmp_path / "swapped.json")  # a link put where a listed file was
    os.mkfifo(tmp_path / "fifo.json")  # opening a FIFO to read would wait for a writer for ever
    cases = {"swapped.json": "a symbolic link put in its place", "fifo.json": "not a regular file",
             "gone.json": "No such file or directory"}
    for name, why in cases.items():
        with pytest.raises(ValueError, match=why):
            read_listed(f"file:{tmp_path / name}", 100)
    with pytest.raises(ValueError, match="at most 5 bytes"):
        read_listed(f"file:{good}", 5)


def test_validate_snapshot_reads_nothing_behind_a_link_it_refuses(tmp_path):
    """It reported a linked folder refused and then read the files behind it (outside the landing), and a link
    named with bytes that are not UTF-8 too (it no longer knew that name for the one refused)."""
    import shutil

    from lb_pipeline.ingest.validate import validate_snapshot
    from lb_pipeline.snapshots.generate import generate

    generate(tmp_path / "landing", "demo", seed=11, start=f"{DAY}T08:00:00Z", snapshots=1)
    snap, outside = next((tmp_path / "landing").glob("*/*")), tmp_path / "outside"
    shutil.copytree(snap / "lb/brokers", outside)
    for report in outside.iterdir():
        report.write_text('{"outside": ')  # what reading it would report
    shutil.rmtree(snap / "lb/brokers")
    os.symlink(outside, snap / "lb/brokers")
    namespace = sorted((snap / "namespaces").glob("*/*.json"))[0]
    os.symlink(next(outside.iterdir()), os.fsencode(namespace.parent) + b"/ev\xffil.json")
    findings = [(f.file, f.field, f.message) for f in validate_snapshot(snap)]
    link = "refused: a symbolic link (never followed, not read)"
    assert findings == [("lb/brokers", "(path)", link),
                        (f"namespaces/{namespace.parent.name}/ev\\xffil.json", "(path)", link)]


def test_an_empty_log_or_report_writes_file_holds_no_lines_and_is_not_quarantined(snapshot):
    """A log or report-writes file is lines of text: an empty one had been quarantined as "expected a JSON
    document, got an empty file"; an empty JSON file still is."""
    from lb_pipeline.ingest.files import listing_quarantine

    (snapshot / "logs").mkdir()
    (snapshot / "logs/127.0.0.1_8080.log").write_text("")
    (snapshot / "lb").mkdir(exist_ok=True)
    (snapshot / "lb/report-writes.jsonl").write_text("")
    (snapshot / "topics/empty_8080.json").write_text("")
    listing, files, _ = _listed(snapshot)
    assert len(listing.empty_files) == 3 and not files.get("lb_events") and not files.get("report_writes")
    rows = listing_quarantine(listing)
    assert [(r["source_file"].rsplit("/", 1)[-1], r["reason"]) for r in rows] == [
        ("empty_8080.json", "expected a JSON document, got an empty file")]


def test_task_count_is_the_number_of_packed_groups_of_the_distinct_files():
    sizes = {f"file:/l/{i}.json": 3 * 1024 * 1024 for i in range(8)}
    paths = list(sizes)
    assert task_count(paths + paths[:3], sizes) == len(packed(paths, sizes)) == 4  # two 3 MB files to an 8 MB task
    assert task_count([], {}) == 1
    assert task_count(["file:/l/unknown.json"], {}) == 1
