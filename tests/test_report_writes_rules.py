"""The report writes' row rules: a write made after its snapshot was taken, or a transaction repeated in one
snapshot, refused alike at ingest (Spark), by ``validate-snapshot`` and by the what-if path (a landing folder)."""

import json
from pathlib import Path

import pytest

from lb_pipeline.ingest.tables import TABLES
from tests.test_report_writes import BUNDLE, _parse


@pytest.mark.spark
def test_a_write_made_after_its_snapshot_was_taken_is_quarantined_by_row_alike_at_ingest_and_by_validate_snapshot(
        spark):
    """Left in, a write from 2100 would stand as its snapshot's time and bring every later snapshot's writes into
    that snapshot's averages; one within the collection's margin (or before the snapshot) lands."""
    from lb_pipeline.ingest.tables import COMMON
    from lb_pipeline.quality import row_rules

    start = 1767225600000  # the snapshot's time, 2026-01-01T00:00:00Z
    stats = {BUNDLE: {"msgRateIn": 1.0, "msgRateOut": 2, "msgThroughputIn": 3, "msgThroughputOut": 4}}
    times = [start - 3_600_000, start + 299_000, start + 300_999, start + 301_000, 4_102_444_800_000]
    content = "\n".join(json.dumps({"zxid": z, "mtime": t, "broker": "h:1", "version": z, "lastStats": stats})
                        for z, t in enumerate(times, 1))
    rows, bad = _parse(content.encode())
    assert bad == [] and len(rows) == 5
    python_kept, python_rejected = row_rules.check_rows("report_writes", rows)
    assert [r["zxid"] for r in python_kept] == [1, 2, 3]
    assert [(r["zxid"], field) for r, field, _ in python_rejected] == [(4, "written_by_snapshot"), (5, "written_by_snapshot")]
    assert "before the collector finished the snapshot" in python_rejected[0][2]
    kept, rejected = row_rules.split("report_writes", spark.createDataFrame(rows, f"{COMMON}, {TABLES['report_writes'].schema}"))
    assert sorted(r.zxid for r in kept.collect()) == [1, 2, 3]
    assert sorted((json.loads(r.raw)["zxid"], r.field, r.reason) for r in rejected.collect()) == [
        (z, "written_by_snapshot", why) for (r, _, why), z in zip(python_rejected, (4, 5))]


def test_the_what_if_path_refuses_the_report_writes_ingest_quarantines_and_replays_the_rest(tmp_path):
    """From a landing folder (simulate, validate-simulation), a write from after its snapshot and a transaction
    repeated in one snapshot are left out and named, as ingest's row rules quarantine them; with the write from
    2100 left out, the averages replayed are those of the untouched folder, to the last bit."""
    import shutil

    import pandas as pd

    from lb_pipeline.quality import row_rules
    from lb_pipeline.simulation.landing import read_history, read_leader
    from lb_pipeline.simulation.landing_writes import _row_rules, _writes
    from lb_pipeline.simulation.leader_averages import COLUMNS
    from lb_pipeline.snapshots import layout

    source = Path(__file__).parent / "fixtures" / "real-runs" / "writes-threshold" / "landing"
    day = "2026-12-06"

    def spoiled(name: str, repeat: bool) -> Path:
        landing = Path(shutil.copytree(source, tmp_path / name))
        snap = sorted((landing / "lbtest").iterdir())[5]
        lines = (snap / layout.REPORT_WRITES).read_text().splitlines()
        late = json.loads(lines[0]) | {"zxid": 10**9, "mtime": 4_102_444_800_000}
        (snap / layout.REPORT_WRITES).write_text("\n".join([*lines, *lines[-1:] * repeat, json.dumps(late)]) + "\n")
        return snap

    snap = spoiled("both", repeat=True)
    refused: list[str] = []
    rows = _writes(snap, snap.parent.parent.resolve(), "lbtest", refused)
    notes: list[str] = []
    kept = _row_rules(rows, notes)
    assert kept == row_rules.check_rows("report_writes", rows)[0]  # as ingest keeps them
    assert any("written_by_snapshot" in n for n in notes)
    repeated = len(snap.joinpath(layout.REPORT_WRITES).read_text().splitlines()) - 1  # the repeat's line
    assert [n for n in refused if ": zxid:" in n] and all(f"lines {repeated - 1}, {repeated}" in n
                                                          for n in refused if ": zxid:" in n)

    def replayed(folder: Path):
        said: list[str] = []
        cluster, _, bundles, *_ = read_history(folder, day)
        averages = read_leader(folder, day, cluster, said, bundles)[0]
        rows = averages[averages["replayed"]][list(COLUMNS)]
        return rows.sort_values(["snapshot_ts", "bundle"]).reset_index(drop=True), said

    got, said = replayed(spoiled("late", repeat=False).parent.parent)
    want, _ = replayed(source)
    assert len(want) == 390 and any("written_by_snapshot" in n for n in said)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
