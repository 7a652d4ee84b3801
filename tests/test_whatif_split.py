"""``lb-pipeline whatif split`` on generated snapshots."""

import json
import shlex
import shutil
from collections import Counter

import pytest

from lb_pipeline.cli import main
from lb_pipeline.errors import LbError
from lb_pipeline.snapshots import layout
from lb_pipeline.snapshots.generate import generate
from lb_pipeline.snapshots.load import load_snapshot
from lb_pipeline.whatif import commands
from lb_pipeline.whatif.split import render_text, whatif_split


@pytest.fixture(scope="module")
def busy_snapshot(tmp_path_factory):
    dirs = generate(tmp_path_factory.mktemp("whatif"), "demo", seed=7, start="2026-01-15T15:00:00Z", snapshots=1)
    return dirs[0]


def test_hot_bundles_get_every_algorithms_cut_and_children_that_add_up(busy_snapshot):
    results = whatif_split(load_snapshot(busy_snapshot), assume_sustained=True)
    assert results
    for r in results:
        assert r.triggers and (r.modular == "split" or r.extensible == "split" or "skipped" in r.modular)
        for o in r.outcomes:
            if o.splits:
                assert sum(c.topics for c in o.children) == r.topics
                assert sum(c.msg_rate for c in o.children) == pytest.approx(r.msg_rate)
                assert shlex.split(o.command)[:3] == ["pulsar-admin", "namespaces", "split-bundle"]


def test_without_sustained_load_the_extensible_trigger_waits_for_its_hit_count(busy_snapshot):
    results = whatif_split(load_snapshot(busy_snapshot))
    assert any("consecutive cycle" in r.extensible for r in results)


def test_sustained_load_splits_the_bundles_past_the_per_cycle_cap_in_the_cycles_after(busy_snapshot, capsys):
    """A cycle of the extensible trigger stops at loadBalancerMaxNumberOfBundlesToSplitPerCycle: the bundles after
    it get no decision, and the what-if called them "not hot"."""
    snap = load_snapshot(busy_snapshot)
    snap.config = snap.config.overridden(loadBalancerMaxNumberOfBundlesToSplitPerCycle=1,
                                         loadBalancerNamespaceBundleMaxMsgRate=50)
    results = whatif_split(snap, assume_sustained=True)
    owners = Counter(r.owner for r in results if r.extensible == "split")
    assert max(owners.values()) >= 3 and "not hot" not in {r.extensible for r in results if r.modular == "split"}
    for owner, n in owners.items():  # one a cycle on each broker, from the cycle after the hit count (3)
        assert sorted(r.extensible_cycle for r in results if r.owner == owner and r.extensible == "split") == list(
            range(4, 4 + n))
    print(render_text(results, snap))
    assert f"split at cycle {3 + max(owners.values())} of the sustained load" in capsys.readouterr().out


def test_single_topic_hot_bundle_is_flagged(busy_snapshot):
    results = whatif_split(load_snapshot(busy_snapshot), assume_sustained=True)
    assert any(r.no_split_helps for r in results)


def test_namespace_filter(busy_snapshot):
    results = whatif_split(load_snapshot(busy_snapshot), assume_sustained=True)
    ns = results[0].bundle.rsplit("/", 1)[0]
    assert {r.bundle.rsplit("/", 1)[0] for r in whatif_split(load_snapshot(busy_snapshot), ns, True)} == {ns}
    with pytest.raises(LbError, match=f"namespace 'acme/ordres' is not in snapshot {busy_snapshot.name}; it has .*{ns}"):
        whatif_split(load_snapshot(busy_snapshot), "acme/ordres")  # not "no bundle exceeds a split threshold"


def test_commands_are_shell_quoted():
    cmd = commands.split_bundle("ten'ant/ns x", "0x00000000_0x40000000", "topic_count_equally_divide")
    assert shlex.split(cmd)[-1] == "ten'ant/ns x"
    cmd = commands.unload_bundle("a/b", "0x00000000_0x40000000", "broker-1:8080")
    assert shlex.split(cmd) == ["pulsar-admin", "namespaces", "unload", "a/b", "--bundle", "0x00000000_0x40000000",
                                "--destinationBroker", "broker-1:8080"]


def test_cli_json_output(busy_snapshot, capsys):
    assert main(["whatif", "split", str(busy_snapshot), "--assume-sustained", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data and {"bundle", "outcomes", "no_split_helps"} <= set(data[0])


def test_cli_names_the_missing_file_in_one_line(tmp_path, capsys):
    assert main(["whatif", "split", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "manifest.json" in err and "\n" not in err


def test_whatif_shed_applies_a_catastrophic_policy_and_names_one_it_cannot_match(busy_snapshot, tmp_path, capsys):
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    policies = snap / layout.ISOLATION_POLICIES
    # (.|.|.|.|.|.)*x fails on every namespace and broker host after 6^n tries for a backtracking engine
    policies.write_text(json.dumps({"slow": {"namespaces": ["(.|.|.|.|.|.)*x"], "primary": ["(.|.|.|.|.|.)*x"]}}))
    assert main(["whatif", "shed", str(snap), "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    policies.write_text(json.dumps({"backref": {"namespaces": ["x/y"], "primary": ["(a)\\1"]}}))
    assert main(["whatif", "shed", str(snap), "--all"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"lb-pipeline: {policies}: field 'backref.primary': expected a regex matchable in linear time, got '(a)\\\\1' "
        "(a backreference)")


def test_whatif_shed_says_which_strategy_runs_and_when_pulsar_fell_back_to_its_deprecated_load_manager(
        busy_snapshot, tmp_path, capsys):
    assert main(["whatif", "shed", str(busy_snapshot), "--all"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "Configured: ThresholdShedder"
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    dynamic = snap / layout.DYNAMIC_CONFIG
    doc = json.loads(dynamic.read_text()) if dynamic.exists() else {}
    dynamic.write_text(json.dumps({**doc, "loadBalancerLoadPlacementStrategy":
                                   "org.apache.pulsar.broker.loadbalance.impl.AvgShedder"}))
    assert main(["whatif", "shed", str(snap), "--all"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "Configured: SimpleLoadManagerImpl, Pulsar's deprecated load manager (ModularLoadManagerImpl cannot start: "
        "loadBalancerLoadPlacementStrategy AvgShedder needs the same loadBalancerLoadSheddingStrategy, got "
        "'org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder'): none of these strategies runs")


@pytest.mark.parametrize("part, content, field", [
    ("topics", "[]", "(root)"),  # valid JSON of the wrong kind: it failed deep inside with an AttributeError
    ("topics", None, None),  # one bad topic among good ones: refused, as ingest would quarantine that row
    ("lb/brokers", '{"cpu": 5}', "cpu"),
    ("ownership", '["t/ns/0x00000000_0xffffffff"]', "(root)"),
])
def test_whatif_names_a_broker_file_ingest_would_quarantine(busy_snapshot, tmp_path, capsys, part, content, field):
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    victim = sorted((snap / part).glob("*.json"))[0]
    if content is None:  # a negative rate in the file's first topic
        doc = json.loads(victim.read_text())
        stats = next(iter(next(iter(next(iter(doc.values())).values())).values()))
        topic = next(iter(stats))
        stats[topic]["msgRateIn"] = -1.0
        content, field = json.dumps(doc), f"[{topic}].msgRateIn"
    victim.write_text(content)
    for command in ("split", "shed"):
        assert main(["whatif", command, str(snap), *(["--all"] if command == "shed" else [])]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"lb-pipeline: {victim}: field '") and field in err and "\n" not in err, err


def test_whatif_takes_the_release_the_snapshot_reports_and_leaves_out_a_value_pulsar_cannot_use(
        busy_snapshot, tmp_path, capsys, monkeypatch):
    """A 4.0.7 snapshot was once what-iffed with 4.0.8's defaults and code, and one bad dynamic value refused it
    whole, where the nightly run takes 4.0.7's and leaves that value out, as Pulsar does."""
    monkeypatch.delenv("LB_PULSAR_PROFILE", raising=False)
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    manifest = snap / layout.MANIFEST
    manifest.write_text(manifest.read_text().replace('"pulsarVersion":"4.0.8"', '"pulsarVersion":"4.0.7"'))
    dynamic = snap / layout.DYNAMIC_CONFIG
    dynamic.write_text(json.dumps({"loadBalancerBrokerOverloadedThresholdPercentage": "85%",
                                   "loadBalancerSheddingGracePeriodMinutes": "5"}))
    loaded, as_generated = load_snapshot(snap), load_snapshot(busy_snapshot)
    assert as_generated.config.profile == "pulsar-4.0" and loaded.config.profile == "pulsar-4.0.7"
    assert load_snapshot(snap, profile="pulsar-4.0").config.profile == "pulsar-4.0"  # --profile still decides
    threshold = "loadBalancerBrokerOverloadedThresholdPercentage"
    assert loaded.config[threshold] == as_generated.config[threshold]  # the runtime value or Pulsar's default
    assert loaded.config.get_int("loadBalancerSheddingGracePeriodMinutes") == 5  # the good value of the file applies
    assert loaded.notes == [f"{dynamic}: field '{threshold}': expected a Java int (a whole number from -2^31 to 2^31-1; "
                            "Pulsar's default is 85), got '85%'; "
                            "left out, the runtime value or Pulsar's default applies"]
    assert main(["whatif", "shed", str(snap), "--all", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) and out.err == f"lb-pipeline: note: {loaded.notes[0]}\n"


def test_whatif_goes_on_without_a_broker_file_the_snapshot_lacks_and_names_it(busy_snapshot, tmp_path, capsys):
    """A load report or ownership file missing while the manifest does not say so was refused whole (the nightly
    run goes on without it); and TransferShedder, deciding on the snapshot's BrokerLoadData, failed with a
    KeyError when it moved a bundle of a broker whose modular load report was missing."""
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    gone = sorted((snap / "lb" / "brokers").glob("*.json")) + sorted((snap / "ownership").glob("*.json"))[:1]
    for f in gone:
        f.unlink()
    loaded = load_snapshot(snap)
    assert not loaded.reports and len(loaded.ownership) < len(load_snapshot(busy_snapshot).ownership)
    assert sorted(loaded.notes) == sorted(f"{f}: missing, and not in the manifest's missingParts; left out, as the "
                                          "nightly run leaves it" for f in gone)
    assert main(["whatif", "shed", str(snap), "--all", "--json"]) == 0
    out = capsys.readouterr()
    transfer = {r["strategy"]: r for r in json.loads(out.out)}["TransferShedder"]
    assert transfer["unloads"] and "BrokerLoadData" in transfer["notes"][0]  # read from the snapshot's own files
    assert out.err.count("lb-pipeline: note: ") == len(gone)
    assert main(["whatif", "split", str(snap)]) == 0


def test_sustained_load_stops_after_a_day_of_cycles_and_a_negative_hit_count_acts_at_once(busy_snapshot):
    """A hit-count threshold of 2,147,483,647 had ``whatif shed`` loop for billions of cycles; a negative one ran
    no cycle, and the what-if failed (UnboundLocalError) or showed the previous strategy's unloads."""
    from lb_pipeline.whatif.shed import whatif_shed
    from lb_pipeline.whatif.sustained import MAX_CYCLES

    snap = load_snapshot(busy_snapshot)
    keys = ("loadBalancerSheddingConditionHitCountThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
            "loadBalancerNamespaceBundleSplitConditionHitCountThreshold")
    snap.config = snap.config.overridden(**{k: 2**31 - 1 for k in keys})
    for result in whatif_shed(snap, ["AvgShedder", "TransferShedder"]):
        assert any(f"the what-if ran {MAX_CYCLES:,}" in n for n in result.notes), result.notes
    whatif_split(snap, assume_sustained=True)
    assert [n for n in snap.notes if n.startswith(f"{keys[2]}=2147483647 asks for 2,147,483,648 cycles")]
    at_once = {}
    for threshold in (-3, 0):
        snap.config = snap.config.overridden(**{keys[0]: threshold})
        (transfer,) = whatif_shed(snap, ["TransferShedder"])
        at_once[threshold] = transfer.unloads
    assert at_once[-3] == at_once[0] and at_once[0]  # unloads at the first cycle, as Pulsar would


def test_whatif_reads_a_broker_the_manifest_lists_twice_once_and_says_so(busy_snapshot, tmp_path, capsys):
    """As ingest lands such a snapshot (each broker once, the repeat quarantined), the what-ifs read it with a note
    instead of refusing it, and see each broker once."""
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    manifest = json.loads((snap / layout.MANIFEST).read_text())
    first = manifest["brokers"][0]
    (snap / layout.MANIFEST).write_text(json.dumps({**manifest, "brokers": manifest["brokers"] + [first]}))
    loaded = load_snapshot(snap)
    assert loaded.brokers == manifest["brokers"]
    assert loaded.notes == [f"{snap / layout.MANIFEST}: field 'brokers': expected each broker listed once, got "
                            f"{first!r} 2 times: each kept once"]
    assert main(["whatif", "split", str(snap)]) == 0
    assert f"lb-pipeline: note: {loaded.notes[0]}" in capsys.readouterr().err


@pytest.mark.parametrize("part, content, field", [
    ("lb/broker-load-data", "[" * 100_000 + "]" * 100_000, "(file)"),  # json.loads: RecursionError, a traceback
    ("lb/broker-load-data", '{"weightedMaxEMA": "high"}', "weightedMaxEMA"),
    ("lb/top-bundles", '{"topBundlesLoadData": [{"bundleName": "t/n/0x00000000_0xffffffff", "stats": {'
                       '"msgThroughputIn": "lots"}}]}', "topBundlesLoadData[0].stats.msgThroughputIn"),
    ("lb/top-bundles", '{"topBundlesLoadData": [7]}', "topBundlesLoadData[0]"),
])
def test_transfer_shedder_leaves_out_extensible_files_it_cannot_read_and_says_so(
        busy_snapshot, tmp_path, capsys, part, content, field):
    """Ingest never reads these files; the what-if fed them to TransferShedder as they were."""
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    victim = sorted((snap / part).glob("*.json"))[0]
    victim.write_text(content)
    assert main(["whatif", "shed", str(snap), "--strategy", "TransferShedder", "--json"]) == 0
    note = next(n for n in json.loads(capsys.readouterr().out)[0]["notes"] if n.startswith("input: "))
    assert note.startswith(f"input: derived from the modular LocalBrokerData (the snapshot's own files left out: "
                           f"{victim}: field '{field}': expected "), note


def test_whatif_reads_nothing_behind_a_linked_folder(busy_snapshot, tmp_path, capsys):
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    shutil.move(snap / "lb" / "brokers", tmp_path / "elsewhere")
    (snap / "lb" / "brokers").symlink_to(tmp_path / "elsewhere")
    for command in (["split"], ["shed", "--all"]):
        assert main(["whatif", *command, str(snap)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"lb-pipeline: {snap}/lb/brokers/") and "not a symbolic link or behind one" in err, err


def test_whatif_leaves_out_bundle_data_ingest_would_quarantine_and_names_it(busy_snapshot, tmp_path, capsys):
    """A string for a rate in one BundleData stopped both what-ifs with a ValueError traceback."""
    snap = tmp_path / busy_snapshot.name
    shutil.copytree(busy_snapshot, snap)
    victim = sorted((snap / "lb" / "bundle-data").glob("*/*/*.json"))[0]
    doc = json.loads(victim.read_text())
    doc["shortTermData"]["msgRateIn"] = "lots"
    victim.write_text(json.dumps(doc))
    for command in (["split"], ["shed", "--all"]):
        assert main(["whatif", *command, str(snap), "--json"]) == 0
        assert (f"lb-pipeline: note: {victim}: field 'shortTermData.msgRateIn': expected a number, got a string "
                "'lots'; left out, as the nightly run leaves it\n") in capsys.readouterr().err
    bundle = str(victim.relative_to(snap / "lb" / "bundle-data"))[: -len(".json")]
    assert bundle in load_snapshot(busy_snapshot).bundle_data and bundle not in load_snapshot(snap).bundle_data


def test_a_bundle_without_bundle_data_says_the_modular_trigger_could_not_see_its_rates(busy_snapshot, tmp_path):
    """A collected snapshot without the metadata store has no BundleData: the modular trigger counts the bundle's
    rates as 0, and "not hot" read as if the bundle were cool."""
    snap_dir = shutil.copytree(busy_snapshot, tmp_path / busy_snapshot.parent.name / busy_snapshot.name)
    shutil.rmtree(snap_dir / "lb" / "bundle-data")
    results = whatif_split(load_snapshot(snap_dir), assume_sustained=True)
    blind = [r for r in results if r.modular != "split" and "skipped" not in r.modular]
    assert blind and all("the snapshot has no BundleData" in r.modular for r in blind)
    assert all(r.modular != "not hot" for r in results)
