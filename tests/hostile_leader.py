"""The hostile corpus's kinds on what the collector reads from the metadata store (``--metadata-store``): an
admin's resource quotas, a report's topic-kind flag, and every report write since the snapshot before
(``--every``): each bad one quarantined by name and field, the good ones land."""

import json
from pathlib import Path

from lb_pipeline.snapshots import layout
from tests.hostile_corpus import Corpus, _edit, _files


def leader_kinds(c: Corpus, landing: Path, s3: Path, s2: Path, s0: Path) -> None:
    rq3 = _files(s3, "lb/resource-quota/*/*/*")  # an admin's quotas (the metadata store, as collected)
    _edit(rq3[0], lambda d: d.update(msgRateIn=-5.0)); c.kind("negative quota rate", rq3[0], "msgRateIn", {"resource_quotas": 1})
    _edit(rq3[1], lambda d: d.update(bandwidthOut="lots")); c.kind("quota bandwidth a string", rq3[1], "bandwidthOut", {"resource_quotas": 1})
    _edit(rq3[2], lambda d: d.update(dynamic="maybe")); c.kind("quota flag 'maybe'", rq3[2], "dynamic", {"resource_quotas": 1})
    b3 = _files(s3, "lb/brokers/*")[0]  # Jackson refuses it, so the leader holds no report of that broker either
    _edit(b3, lambda d: d.update(nonPersistentTopicsEnabled=[True]))
    c.kind("array for a broker's topic-kind flag", b3, "nonPersistentTopicsEnabled", {"broker_reports": 1})
    # every report write since the snapshot before (collect --every with --metadata-store): a bad line is
    # quarantined by its number and field, one made after its snapshot was taken by row (it would stand as the
    # snapshot's time and bring the later snapshots' writes into its averages), the good ones land
    for snap, name, bad in ((s3, "report write with a rate as a string", lambda w: w["lastStats"][next(iter(
                                 w["lastStats"]))].update(msgRateIn="fast")),
                            (s2, "report write of a broker id with a path", lambda w: w.update(broker="../../etc")),
                            (s0, "report write from 2100", lambda w: w.update(mtime=4_102_444_800_000))):
        report = _files(snap, "lb/brokers/*")[1]
        good = {"zxid": 7, "mtime": json.loads((snap / layout.MANIFEST).read_text())["snapshotTimestampMs"] - 5000,
                "broker": layout.broker_from_file_stem(report.stem), "version": 3,
                "lastStats": json.loads(report.read_text())["lastStats"]}
        spoiled = json.loads(json.dumps({**good, "zxid": 8}))
        bad(spoiled)
        (snap / layout.REPORT_WRITES).write_text(json.dumps(good) + "\n" + json.dumps(spoiled) + "\n")
        field = {s3: f"line 2: lastStats[{next(iter(good['lastStats']))}].msgRateIn", s2: "line 2: broker",
                 s0: "written_by_snapshot"}[snap]
        c.kind(name, snap / layout.REPORT_WRITES, field, {})
        c.delta[("report_writes", str((snap / layout.REPORT_WRITES).relative_to(landing)))] = len(good["lastStats"])
