"""The hostile corpus: a demo day's snapshots broken in 89 ways (files, rows, names, paths, links, devices,
directories), each kind recorded with the file and the quarantine field it must produce, and the rows it must lose."""

import gzip
import json
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from lb_pipeline.ingest.landing import shown
from lb_pipeline.snapshots import layout
from tests.conftest import DEMO_DAY

MAX_BYTES = 3 * 1024 * 1024  # LB_MAX_FILE_BYTES for the run; the demo's largest file is well under it

@dataclass
class Corpus:
    landing: Path
    kinds: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (path from landing, field in quarantine)
    delta: dict[tuple[str, str], int] = field(default_factory=dict)  # (table, file) → rows it must lose (<0) or gain
    dead: set[str] = field(default_factory=set)  # files or snapshot dirs of which nothing may land
    copies: dict[str, str] = field(default_factory=dict)  # snapshot copied under a new time → the one it copies
    real: dict[str, Path] = field(default_factory=dict)  # path from landing, as stored (bytes escaped) → the path
    java_number: str = ""  # a broker file of the untouched snapshot with a limit as Jackson prints it (1.0E7)

    def kind(self, name: str, path: Path, where: str, lost: dict[str, int] | None = None):
        rel = shown(str(path.relative_to(self.landing)))
        assert name not in self.kinds and rel not in {k[0] for k in self.kinds.values()}, name
        self.kinds[name], self.real[rel] = (rel, where), path
        if lost is None:
            self.dead.add(rel)
        for table, n in (lost or {}).items():
            self.delta[(table, rel)] = self.delta.get((table, rel), 0) - n


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _first(path: Path) -> str:
    return next(iter(json.loads(path.read_text())))


def _files(snapshot: Path, pattern: str) -> list[Path]:
    return sorted(snapshot.glob(pattern))


def _as_load_report(d: dict) -> None:
    """``LoadReport``, what ``broker-stats load-report`` returns from a broker on SimpleLoadManagerImpl: its usage under
    ``systemResourceUsage`` (read as LocalBrokerData, every resource would be 0), its bundles under ``bundleStats``."""
    usage = {r: d.pop(r) for r in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")}
    d.update(loadReportType="LoadReport", systemResourceUsage=usage, bundleStats=d.pop("lastStats"))


def _copy_snapshot(c: Corpus, source: Path, hour: int) -> Path:
    name = f"{DEMO_DAY}T{hour:02d}-00-00Z"
    target = source.parent / name
    shutil.copytree(source, target)
    ms = int(datetime.strptime(name, layout.TS_FORMAT).replace(tzinfo=timezone.utc).timestamp() * 1000)
    _edit(target / layout.MANIFEST, lambda d: d.update(snapshotTimestampMs=ms, snapshotTime=name))
    c.copies[str(target.relative_to(c.landing))] = str(source.relative_to(c.landing))
    return target


def build(landing: Path, outside: Path) -> Corpus:
    from tests.hostile_leader import leader_kinds
    from tests.hostile_paths import path_kinds

    c = Corpus(landing)
    s = list(layout.iter_snapshot_dirs(landing, DEMO_DAY))
    clean = _copy_snapshot(c, s[1], 18)  # an untouched snapshot: nothing quarantined, validate-snapshot says OK
    java = _files(clean, "lb/brokers/*")[0]  # valid: Jackson prints the double 10000000.0 as 1.0E7
    _edit(java, lambda d: d["bandwidthIn"].update(limit=10_000_000.0))
    java.write_text(java.read_text().replace('"limit": 10000000.0', '"limit": 1.0E7'))
    assert "1.0E7" in java.read_text(), java
    c.java_number = str(java.relative_to(landing))
    dead = [_copy_snapshot(c, s[1], h) for h in range(12, 18)]  # one per way to spoil a manifest
    huge = [_copy_snapshot(c, s[1], h) for h in range(19, 22)]  # for values Python cannot hold

    # whole files that cannot be read as JSON
    b0, t0, o1, bd0 = _files(s[0], "lb/brokers/*"), _files(s[0], "topics/*"), _files(s[1], "ownership/*"), _files(s[0], "lb/bundle-data/*/*/*")
    b0[0].write_text(b0[0].read_text()[:150]); c.kind("truncated", b0[0], "(file)")
    t0[0].write_text(t0[0].read_text().replace('"msgRateIn":', '"msgRateIn":NaN,"x":', 1)); c.kind("NaN", t0[0], "(file)")
    t0[1].write_text(t0[1].read_text().replace('"msgRateIn":', '"msgRateIn":-Infinity,"x":', 1)); c.kind("Infinity", t0[1], "(file)")
    bd0[0].write_text("[" * 100_000 + "]" * 100_000); c.kind("100,000 nested arrays", bd0[0], "(file)")
    bd0[1].write_text('{"shortTermData":' + '{"a":' * 5_000 + "1" + "}" * 5_000 + "}"); c.kind("5,000 nested objects", bd0[1], "(file)")
    o1[0].write_text(o1[0].read_text()[:-1] + f',"{_first(o1[0])}":{{}}}}'); c.kind("duplicate JSON key", o1[0], _first(o1[0]))
    ns1 = s[1] / "namespaces"
    (ns1 / "acme/orders.json").write_bytes(b"\xff\xfe" + (ns1 / "acme/orders.json").read_bytes()); c.kind("invalid UTF-8", ns1 / "acme/orders.json", "(file)")
    (s[1] / "config/dynamic.json").write_text(""); c.kind("empty file", s[1] / "config/dynamic.json", "(file)")
    (s[1] / "cluster/failure-domains.json").write_text("[]"); c.kind("array at the root", s[1] / "cluster/failure-domains.json", "(root)")
    o1[1].write_text(json.dumps(list(json.loads(o1[1].read_text()).items()))); c.kind("ownership as a list", o1[1], "(root)")
    t0[2].write_text(t0[2].read_text() + " " * (MAX_BYTES + 1)); c.kind("over LB_MAX_FILE_BYTES", t0[2], "(file)")
    t0[3].write_bytes(b"\xef\xbb\xbf" + t0[3].read_bytes()); c.kind("UTF-8 byte order mark", t0[3], "(file)")  # RFC 8259 forbids it
    t0[4].write_bytes(gzip.compress(t0[4].read_bytes())); c.kind("gzip-compressed file", t0[4], "(file)")
    t0[5].write_text(t0[5].read_text() + '\n{"extra": 1}\n'); c.kind("a second JSON document after the first", t0[5], "(file)")
    b0[4].write_bytes(b0[4].read_bytes() + b"\x00" * 64); c.kind("NUL bytes after the JSON", b0[4], "(file)")
    ns0 = s[0] / "namespaces/acme/orders.json"
    with zipfile.ZipFile(ns0.with_suffix(".zip"), "w") as z:
        z.writestr(ns0.name, ns0.read_text())
    ns0.with_suffix(".zip").replace(ns0); c.kind("zip archive", ns0, "(file)")

    # values: one row lost, the file's other rows land
    b1 = _files(s[1], "lb/brokers/*")
    b2 = _files(s[2], "lb/brokers/*")[0]
    _edit(b2, _as_load_report); c.kind("LoadReport of SimpleLoadManagerImpl", b2, "loadReportType")
    _edit(b0[1], lambda d: d.update(numTopics=2**70)); c.kind("integer over 64 bits", b0[1], "numTopics", {"broker_reports": 1})
    _edit(b0[2], lambda d: d.update(numBundles=1e30)); c.kind("1e30 as an integer", b0[2], "numBundles", {"broker_reports": 1})
    _edit(b0[3], lambda d: d.update(brokerVersionString={"v": 1})); c.kind("object for a string", b0[3], "brokerVersionString", {"broker_reports": 1})
    name5 = sorted(json.loads(b0[5].read_text())["lastStats"])[0]
    _edit(b0[5], lambda d: d["lastStats"][name5].update(msgRateIn=-5.0)); c.kind("negative bundle rate", b0[5], f"lastStats[{name5}].msgRateIn", {"bundle_reports": 1})
    _edit(b1[5], lambda d: d.update(msgRateOut=12345.678))
    b1[5].write_text(b1[5].read_text().replace("12345.678", "1e400")); c.kind("1e400", b1[5], "msgRateOut", {"broker_reports": 1})
    _edit(b1[0], lambda d: d["cpu"].update(usage=-500.0)); c.kind("cpu.usage -500", b1[0], "cpu_usage", {"broker_reports": 1})
    _edit(b1[1], lambda d: d.update(msgRateIn=1.0e308)); c.kind("rate 1.0E308", b1[1], "msg_rate_in", {"broker_reports": 1})
    _edit(b1[2], lambda d: d["cpu"].update(limit=-150.0)); c.kind("negative CPU limit", b1[2], "cpu_limit", {"broker_reports": 1})
    tiny = _files(s[2], "lb/brokers/*")[1]  # 0.0f in Pulsar's float32 division: every cluster's night had stopped
    _edit(tiny, lambda d: d["bandwidthIn"].update(limit=1e-300)); c.kind("limit 1e-300", tiny, "limits_usable", {"broker_reports": 1})
    _edit(b1[3], lambda d: d["lastStats"].update({"acme/orders/0xZZ_0x10": {}})); c.kind("non-hex bundle range", b1[3], "lastStats[acme/orders/0xZZ_0x10]", {})
    _edit(b1[4], lambda d: d.update(msgRateIn="fast")); c.kind("string for a number", b1[4], "msgRateIn", {"broker_reports": 1})
    _edit(o1[2], lambda d: d.update({"acme/orders/0x00000000_0x1ffffffff": d[_first(o1[2])]}))
    c.kind("range outside the hash space", o1[2], "acme/orders/0x00000000_0x1ffffffff", {})
    _edit(o1[3], lambda d: d[_first(o1[3])].update(is_active="maybe")); c.kind("boolean 'maybe'", o1[3], "is_active", {"ownership": 1})
    stolen = _first(o1[5])  # a bundle two brokers claim: neither claim lands
    _edit(o1[4], lambda d: d.update({stolen: {"broker_assignment": "shared", "is_controlled": False, "is_active": True}}))
    c.kind("bundle owned twice", o1[4], "bundle", {})
    c.delta[("ownership", str(o1[5].relative_to(landing)))] = -1
    (s[1] / "ownership/ghost.pulsar.svc_8080.json").write_text(o1[5].read_text())
    c.kind("broker not in the manifest", s[1] / "ownership/ghost.pulsar.svc_8080.json", "broker")

    t2 = _files(s[2], "topics/*")

    def topic_edit(path, change):
        def go(doc):
            ns = next(iter(doc)); rng = next(iter(doc[ns])); topics = doc[ns][rng]["persistent"]
            change(topics, next(iter(topics)))
        _edit(path, go)
    topic_edit(t2[0], lambda ts, t: ts.update({"persistent://other-tenant/x/moved": ts[t]}))
    c.kind("topic of another namespace", t2[0], "persistent://other-tenant/x/moved", {})
    topic_edit(t2[1], lambda ts, t: ts[t]["subscriptions"].update({"s": {"consumers": "many"}}))
    c.kind("string for an array", t2[1], ".consumers", {"topic_stats": 1})
    topic_edit(t2[2], lambda ts, t: ts[t].update(producerCount=True)); c.kind("boolean for a number", t2[2], ".producerCount", {"topic_stats": 1})
    topic_edit(t2[3], lambda ts, t: ts.update({"persistent://acme": ts[t]})); c.kind("topic without a local name", t2[3], "persistent://acme]", {})
    src = json.loads(t2[5].read_text())
    # in a bundle of its namespace that the other broker owns too: both copies are owned, which is right cannot be
    # told, and neither lands (a namespace both brokers hold bundles of: not one anti-affinity keeps apart)
    owned4 = [b.rsplit("/", 1) for b in json.loads(_files(s[2], "ownership/*")[4].read_text())]
    ns = next(n for n in src if any(o == n for o, _ in owned4) and any(src[n][r].get("persistent") for r in src[n]))
    rng = next(r for r in src[ns] if src[ns][r].get("persistent")); topic = next(iter(src[ns][rng]["persistent"]))
    other = next(r for o, r in owned4 if o == ns)
    _edit(t2[4], lambda d: d.setdefault(ns, {}).setdefault(other, {}).setdefault("persistent", {}).update(
        {topic: src[ns][rng]["persistent"][topic]}))
    c.kind("topic reported by two brokers", t2[4], "topic", {})
    c.delta[("topic_stats", str(t2[5].relative_to(landing)))] = -1
    # a range Pulsar would read (Long.decode) but never prints: the lake keys bundles by the printed text
    t3, o3 = _files(s[3], "topics/*"), _files(s[3], "ownership/*")
    # not hostile: a topic whose bundle moved while the collector read the brokers, in both brokers' stats under
    # the bundle only the first owns; the owner's copy lands, the other is left out, nothing is quarantined (the
    # landed counts of both files stay as they were)
    src = json.loads(t3[1].read_text())
    ns = next(iter(src)); rng = next(iter(src[ns])); topic = next(iter(src[ns][rng]["persistent"]))
    assert f"{ns}/{rng}" in json.loads(o3[1].read_text()) and f"{ns}/{rng}" not in json.loads(o3[2].read_text())
    _edit(t3[2], lambda d: d.setdefault(ns, {}).setdefault(rng, {}).setdefault("persistent", {}).update(
        {topic: src[ns][rng]["persistent"][topic]}))
    doc = json.loads(t3[0].read_text()); ns = next(iter(doc)); rng = next(iter(doc[ns]))
    t3[0].write_text(t3[0].read_text().replace(f'"{rng}"', f'"{rng.upper()}"', 1))
    c.kind("bundle range in upper case", t3[0], f"{ns}.{rng.upper()}", {"topic_stats": sum(map(len, doc[ns][rng].values()))})
    owned = _first(o3[0]); ns, rng = owned.rsplit("/", 1)
    wide = "_".join("0x0" + b[2:] for b in rng.split("_"))  # 0x080000000_0x090000000: nine digits
    _edit(o3[0], lambda d: d.update({f"{ns}/{wide}": d.pop(owned)})); c.kind("bundle range of nine digits", o3[0], wide, {"ownership": 1})
    ghost = s[3] / "config/runtime/ghost.pulsar.svc_8080.json"
    shutil.copy(_files(s[3], "config/runtime/*")[0], ghost); c.kind("runtime configuration of a broker not in the manifest", ghost, "broker")

    # namespaces and cluster files
    ns2 = s[2] / "namespaces"
    _edit(ns1 / "globex/billing.json", lambda d: d["bundles"].update(boundaries=["0x00000000", "0x80000000", "0x40000000", "0xffffffff"]))
    c.kind("boundaries out of order", ns1 / "globex/billing.json", "bundles.boundaries", {"namespaces": 1})
    _edit(ns1 / "hooli/telemetry.json", lambda d: d["bundles"].update(boundaries=["0x00000010", "0xffffffff"]))
    c.kind("boundaries not covering the ring", ns1 / "hooli/telemetry.json", "bundles.boundaries", {"namespaces": 1})
    _edit(ns1 / "initech/payments.json", lambda d: d.update(antiAffinityGroup=7)); c.kind("number for a group", ns1 / "initech/payments.json", "antiAffinityGroup", {"namespaces": 1})
    (ns2 / "acme/bad name;rm -rf ~.json").write_text((ns2 / "acme/orders.json").read_text())
    c.kind("shell metacharacters in a file name", ns2 / "acme/bad name;rm -rf ~.json", "(path)")
    forged = ns2 / "acme/orders\nquarantine: 0 files, 0 rows - all clean\n.json"  # a line of its own, printed raw
    forged.write_text((ns2 / "acme/orders.json").read_text()); c.kind("line breaks in a file name", forged, "(path)")
    _edit(ns2 / "stark/audit.json", lambda d: d.update(namespace="stark/au dit")); c.kind("namespace name Pulsar forbids", ns2 / "stark/audit.json", "namespace", {"namespaces": 1})
    _edit(ns2 / "umbrella/clicks.json", lambda d: d.update(namespace="globex/billing"))
    c.kind("namespace twice", ns2 / "umbrella/clicks.json", "namespace", {"namespaces": 1})
    c.delta[("namespaces", str((ns2 / "globex/billing.json").relative_to(landing)))] = -1
    s3 = s[3]
    rt = _files(s3, "config/runtime/*")
    key = _first(rt[0])
    _edit(rt[0], lambda d: d.update({key: {"x": 1}})); c.kind("object for a config value", rt[0], key, {"config": 1})
    zone_a = len(json.loads((s3 / "cluster/failure-domains.json").read_text())["zone-a"]["brokers"])
    _edit(s3 / "cluster/failure-domains.json", lambda d: d["zone-a"].update(brokers="broker-0"))
    c.kind("string for a broker list", s3 / "cluster/failure-domains.json", "zone-a.brokers", {"failure_domains": zone_a})
    policies = s3 / layout.ISOLATION_POLICIES
    policies.write_text(json.dumps({"pinned": {"namespaces": ["acme/.*"], "primary": ["broker-0\\..*"]},
                                    "broken": {"namespaces": ["x/y"], "primary": ["(unclosed"]}}))
    c.kind("broken regex", policies, "broken.primary", {})
    c.delta[("config", str(policies.relative_to(landing)))] = 1  # the good policy lands
    # a backreference only a backtracking engine matches: refused; regexes that backtrack catastrophically on every
    # namespace and broker host (6^n ways to fail) land, and the replays apply them to that snapshot's placements
    policies = s[2] / layout.ISOLATION_POLICIES
    policies.write_text(json.dumps({"slow": {"namespaces": ["(.|.|.|.|.|.)*x"], "primary": ["(.|.|.|.|.|.)*x"]},
                                    "backref": {"namespaces": ["x/y"], "primary": ["(a)\\1"]}}))
    c.kind("backreference in an isolation regex", policies, "backref.primary", {})
    c.delta[("config", str(policies.relative_to(landing)))] = 1
    # values Python cannot hold: an integer literal too large for a float, regexes too large or deep to compile,
    # 1e999 (infinity) for an integer; the row or policy is quarantined and the rest of the file lands
    # a broker listed twice (Pulsar lists a set): the snapshot lands with it once, the repeat is quarantined
    _edit(huge[1] / layout.MANIFEST, lambda d: d["brokers"].append(d["brokers"][0]))
    c.kind("broker listed twice in the manifest", huge[1] / layout.MANIFEST, "brokers", {})
    th = _files(huge[0], "topics/*")[0]
    th.write_text(th.read_text().replace('"msgRateIn":', '"msgRateIn":1' + "0" * 400 + ',"x":', 1))
    c.kind("rate of 401 digits", th, ".msgRateIn", {"topic_stats": 1})
    # counts Pulsar declares int (Jackson refuses larger ones): the lake's int column could not hold them either
    tp = _files(huge[0], "topics/*")[1]
    tp.write_text(tp.read_text().replace('"producerCount":', '"producerCount":1099511627776,"x":', 1))
    c.kind("producer count beyond int", tp, ".producerCount", {"topic_stats": 1})
    br = _files(huge[0], "lb/brokers/*")[0]
    br.write_text(br.read_text().replace('"topics":', '"topics":4294967296,"x":', 1))
    c.kind("bundle topics beyond int", br, ".topics", {"bundle_reports": 1})
    # half a UTF-16 surrogate pair, escaped: valid JSON, but no UTF-8 text (the batch conversion failed on it)
    ts = _files(huge[1], "topics/*")[1]
    ts.write_text(re.sub(r'"(persistent://[^"]+)"', lambda m: '"' + m.group(1) + '\\ud800"', ts.read_text(), count=1))
    c.kind("lone surrogate in a topic name", ts, "topic", {"topic_stats": 1})
    # every topic of one file broken: each row refused on its own (one exception per row in a single batch, parsed
    # with the cycle collector paused), none of the file lands, and the file is not refused whole
    tb = _files(huge[2], "topics/*")[0]
    doc, broken = json.loads(tb.read_text()), 0
    for topics in (t for bundles in doc.values() for domains in bundles.values() for t in domains.values()):
        for stats in topics.values():
            stats["msgRateIn"], broken = "fast", broken + 1
    tb.write_text(json.dumps(doc)); c.kind("every topic of a file broken", tb, ".msgRateIn", {"topic_stats": broken})
    pinned = '"pinned": {"namespaces": ["acme/.*"], "primary": ["broker-0\\\\..*"]}'
    for copy, (name, bad) in zip(huge, {
            "regex repetition too large": '"huge": {"namespaces": ["x/y"], "primary": ["a{99999999999}"]}',
            "5,000 nested regex groups": '"deep": {"namespaces": ["x/y"], "primary": ["' + "(" * 5000 + ")" * 5000 + '"]}',
            "1e999 for min_limit": '"inf": {"namespaces": ["x/y"], "primary": ["b"], "auto_failover_policy": '
                                   '{"policy_type": "min_available", "parameters": {"min_limit": 1e999}}}'}.items()):
        policies = copy / layout.ISOLATION_POLICIES
        policies.write_text("{" + pinned + ", " + bad + "}")
        c.kind(name, policies, bad.split('"')[1] + (".auto_failover_policy" if "1e999" in bad else ".primary"), {})
        c.delta[("config", str(policies.relative_to(landing)))] = 1
    # the day's configuration is the last snapshot's: a number Pulsar cannot convert is left out, not read; numbers
    # it can convert, at their extremes, land (a cadence of a billion minutes hung the simulation, split limits of
    # 0 failed the report)
    extremes = {"loadBalancerSheddingIntervalMinutes": "1000000000", "loadBalancerNamespaceBundleMaxTopics": "0",
                "loadBalancerNamespaceBundleMaxMsgRate": "0"}
    _edit(huge[2] / layout.DYNAMIC_CONFIG,
          lambda d: d.update(loadBalancerBrokerOverloadedThresholdPercentage="85%", **extremes))
    c.kind("config number Pulsar cannot convert", huge[2] / layout.DYNAMIC_CONFIG,
           "loadBalancerBrokerOverloadedThresholdPercentage", {"config": -len(extremes)})
    # and names Pulsar falls back from (a placement plugin, a split algorithm it does not know): nothing to
    # quarantine, the replays take Pulsar's fallback instead of failing the night
    for runtime in _files(huge[2], "config/runtime/*.json"):
        _edit(runtime, lambda d: d.update(loadBalancerLoadPlacementStrategy="com.acme.pulsar.OurPlacement",
                                          defaultNamespaceBundleSplitAlgorithm="our_own_divide"))
    bd3 = _files(s3, "lb/bundle-data/*/*/*")
    _edit(bd3[0], lambda d: d.update(longTermData=None)); c.kind("null for an object", bd3[0], "longTermData", {"bundle_data": 1})
    shutil.copy(bd3[1], bd3[1].parent / "0xZZ_0x10.json"); c.kind("bundle file not a range", bd3[1].parent / "0xZZ_0x10.json", "(path)")
    _edit(bd3[2], lambda d: d["longTermData"].update(numSamples=5000, maxSamples=1000))
    c.kind("more samples than the window", bd3[2], "longTermData.numSamples", {"bundle_data": 1})
    leader_kinds(c, landing, s3, s[2], s[0])  # tests/hostile_leader.py

    # paths: never read, quarantined by name (tests/hostile_paths.py)
    path_kinds(c, landing, s, s3, outside, b0, t0, bd3)

    # manifests: nothing of the snapshot lands
    m = [d / layout.MANIFEST for d in dead]
    _edit(m[0], lambda d: d.update(snapshotTimestampMs=d["snapshotTimestampMs"] + 1000)); c.kind("manifest of another second", m[0], "snapshotTimestampMs")
    _edit(m[1], lambda d: d.update(cluster="other-cluster")); c.kind("manifest of another cluster", m[1], "cluster")
    _edit(m[2], lambda d: d.update(formatVersion=99)); c.kind("format version 99", m[2], "format_version")
    _edit(m[3], lambda d: d.update(brokers=["../../etc"])); c.kind("broker id with a path", m[3], "brokers")
    _edit(m[4], lambda d: d.update(complete="maybe")); c.kind("'maybe' for complete", m[4], "complete")
    m[5].write_text(m[5].read_text()[:-20]); c.kind("truncated manifest", m[5], "(file)")
    c.dead.update(str(d.relative_to(landing)) for d in dead)
    return c
