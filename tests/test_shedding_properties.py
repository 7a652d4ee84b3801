"""Properties of every shedding strategy over generated cluster histories (state carried cycle to cycle)."""

import pytest

from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, ModularShedding, apply_unloads
from lb_pipeline.algorithms.shedding.transfer_inputs import DerivedLoadState, derive_from_modular
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.snapshots.generate import generate
from lb_pipeline.snapshots.load import load_snapshot
from lb_pipeline.whatif.shed import STRATEGIES, whatif_shed

LOW_THRESHOLDS = {"loadBalancerAvgShedderHitCountHighThreshold": "1", "loadBalancerSheddingConditionHitCountThreshold": "0",
                  "minUnloadMessage": "100"}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A demo history with a broker above the overload threshold (the premise of "never moved anything" below: a
    calm history, seed 21 since the presets cap their topics, gives OverloadShedder nothing to do)."""
    dirs = generate(tmp_path_factory.mktemp("shed"), "demo", seed=25, snapshots=12)
    snaps = [load_snapshot(d) for d in dirs]
    assert max(r["cpu"]["usage"] / r["cpu"]["limit"] for s in snaps for r in s.reports.values()) > 0.85
    return snaps


@pytest.mark.parametrize("strategy", list(MODULAR_STRATEGIES))
def test_modular_decisions_are_owned_live_outside_grace_and_conserve_load(history, strategy):
    config = history[0].config.overridden(**LOW_THRESHOLDS)
    run = ModularShedding.named(strategy, config, seed=1)
    unloaded_at: dict[str, int] = {}
    total = 0
    for snap in history:
        load, _ = LoadData.from_reports(snap.reports, snap.bundle_data)
        result = run.run_cycle(load, config, snap.timestamp_ms, snap.cluster_state())
        for u in result.unloads:
            assert u.bundle in load.bundles_of(u.broker)
            assert u.destination in snap.brokers and u.destination != u.broker
            if u.bundle in unloaded_at:
                assert snap.timestamp_ms - unloaded_at[u.bundle] >= 30 * 60_000
            unloaded_at[u.bundle] = snap.timestamp_ms
        after = apply_unloads(load, result.unloads)
        assert sum(after.rate(b) for b in after.brokers) == pytest.approx(sum(load.rate(b) for b in load.brokers))
        assert sum(len(after.bundles_of(b)) for b in after.brokers) == sum(len(load.bundles_of(b)) for b in load.brokers)
        total += len(result.unloads)
    assert total > 0, f"{strategy} never moved anything on an unbalanced cluster"


def test_transfer_shedder_decisions_over_a_history(history):
    config = history[0].config.overridden(**LOW_THRESHOLDS)
    shedder, state, total = TransferShedder(), DerivedLoadState(), 0
    for snap in history:
        ext = derive_from_modular(snap.reports, config, snap.timestamp_ms, state, snap.groups, snap.ownership)
        result = shedder.run_cycle(ext, config, snap.timestamp_ms)
        for u in result.unloads:
            assert u.bundle in snap.reports[u.broker]["lastStats"]
            assert u.destination in snap.brokers and u.destination != u.broker
            assert snap.groups.get(u.bundle.rsplit("/", 1)[0]) is None  # bundles with policies stay
        total += len(result.unloads)
    assert total > 0


def test_whatif_shed_runs_every_strategy_and_uses_the_snapshots_extensible_data(history):
    results = whatif_shed(history[6], list(STRATEGIES))
    assert [r.strategy for r in results] == list(STRATEGIES)
    transfer = results[-1]
    assert any("BrokerLoadData and top bundles of the snapshot" in n for n in transfer.notes)
    for r in results:
        assert len(r.commands) == len(r.unloads)
        assert all(c.startswith("pulsar-admin namespaces unload ") for c in r.commands)
