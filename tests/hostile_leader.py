"""The hostile corpus's kinds on what the collector reads from the metadata store (``--metadata-store``) and the
brokers' logs (``--broker-log``): an admin's resource quotas, a report's topic-kind flag, every report write since
the snapshot before (``--every``), and the leader's log lines: each bad one quarantined by name and field, the good
ones land."""

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

    # the leader's log (collect --broker-log): a line dated in 9999 (Arrow cannot hold it in nanoseconds: the
    # simulation step had failed, and the night with it) and one from before 1970 are quarantined by row, the line
    # beside them lands
    taken = json.loads((s2 / layout.MANIFEST).read_text())["snapshotTime"][:19]
    owned = _files(s0, "ownership/*")[0]  # the untouched snapshot's: another kind may have broken s2's
    broker, bundle = layout.broker_from_file_stem(owned.stem), next(iter(json.loads(owned.read_text())))
    line = ("{ts}.123Z [pulsar-load-manager-1-1] INFO  o.a.p.b.l.i.ModularLoadManagerImpl - [ThresholdShedder] "
            f"Unloading bundle: {bundle} from broker {broker} to dest broker {broker}\n")
    log = s2 / layout.broker_log(broker)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(line.format(ts=taken) + line.format(ts="9999-12-31T23:59:59") + line.format(ts="0001-01-01T00:00:00"))
    c.kind("log line from 9999", log, "logged_by_snapshot", {})
    c.delta[("lb_events", str(log.relative_to(landing)))] = 1
