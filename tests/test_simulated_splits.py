"""Splits the simulation makes itself: Pulsar's triggers and algorithms, children carrying their topics' traffic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.simulated import START, bundle_names, cpu_model, scripted

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.simulation.balancers import make_balancer
from lb_pipeline.simulation.bundle_set import TopicProfiles
from lb_pipeline.simulation.engine import Simulation
from lb_pipeline.simulation.history import build_history
from lb_pipeline.simulation.load_model import LoadModel
from lb_pipeline.simulation.run import run_config, simulate
from lb_pipeline.simulation.splitting import Splits

HOT, COLD = bundle_names(2)  # t/ns 0x00000000_0x80000000 and 0x80000000_0xffffffff
LEFT, RIGHT = "t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000"  # range_equally_divide's halves of HOT
# the hot bundle's four topics: hash, share of its traffic, producers, consumers (2 and 3 in all, as recorded)
TOPICS = [(0x10000000, 0.1, 1, 1), (0x20000000, 0.2, 0, 1), (0x50000000, 0.3, 1, 0), (0x60000000, 0.4, 0, 1)]
RATE = 20_000.0  # msg/s each way: 40,000 > loadBalancerNamespaceBundleMaxMsgRate (30,000); each half stays below


def topic_rows(bundle: str = HOT, snapshots: int = 13, minutes: int = 10) -> pd.DataFrame:
    return pd.DataFrame([{"bundle": bundle, "snapshot_ts": START + pd.Timedelta(minutes=minutes * s), "topic_hash": h,
                          "msg_rate_in": RATE * share, "msg_rate_out": RATE * share,
                          "msg_throughput_in": RATE * share * 1000, "msg_throughput_out": RATE * share * 1000,
                          "producer_count": p, "consumer_count": c}
                         for s in range(snapshots) for h, share, p, c in TOPICS])


def cluster(rate=lambda s, k: (RATE, 50.0)[k], **kw):
    brokers, bundles = scripted(n_brokers=3, bundles=[HOT, COLD], rate=rate, **kw)
    h = build_history("c", brokers, bundles)
    return h, LoadModel.from_table(cpu_model(h.brokers), h.brokers)


def engine(h, m, strategy="ThresholdShedder", config=PulsarConfig(), topics=None) -> Simulation:
    cfg = run_config(config, {})[0]
    return Simulation(h, m, cfg, make_balancer(strategy, cfg, 0), profiles=TopicProfiles(h, topics),
                      splits=Splits(cfg, extensible=strategy == "TransferShedder"))


def test_a_bundle_past_the_message_rate_limit_is_split_in_half_and_its_children_carry_their_topics_traffic():
    h, m = cluster()
    sim = engine(h, m, topics=topic_rows())
    t0 = int(h.times[0])
    first = sim.step(t0)
    assert [(s["bundle"], s["children"]) for s in first.splits] == [(HOT, [LEFT, RIGHT])]
    assert "MsgRate" in first.splits[0]["reason"]
    bs = sim.bundles
    x = bs.traffic(h.traffic_at(t0))
    left, right = bs.index[LEFT], bs.index[RIGHT]
    assert x[left, 0] == pytest.approx(0.3 * RATE) and x[right, 0] == pytest.approx(0.7 * RATE)
    assert x[left, 2] == pytest.approx(0.3 * RATE * 1000)
    assert bs.clients(0)[left].tolist() == [1, 2] and bs.clients(0)[right].tolist() == [1, 1]
    assert not bs.present(0)[bs.index[HOT]] and bs.topics(0)[left] == 2
    # modular: loadBalancerAutoUnloadSplitBundlesEnabled unloads both halves, placed like any lookup, clients reconnect
    placed = [mv for mv in first.moves if mv["kind"] == "split"]
    assert sorted(mv["bundle"] for mv in placed) == [LEFT, RIGHT]
    assert sum(mv["clients"] for mv in placed) == 5
    later = [sim.step(int(t)) for t in h.cycle_times(1)[1:]]
    assert not any(c.splits for c in later)  # 28,000 msg/s at most in either half: under the limit


def test_every_cycle_of_a_run_with_splits_conserves_traffic_and_owns_every_bundle():
    h, m = cluster()
    for strategy in ("OverloadShedder", "TransferShedder"):
        run = simulate(h, m, PulsarConfig(), strategy, profiles=TopicProfiles(h, topic_rows()))
        ts = run.timeseries
        assert run.summary["splits"] == 1
        assert np.allclose(ts["rate_served"], ts["rate_recorded"])
        assert (ts["unowned_bundles"] == 0).all() and ts["bundles"].max() == 3
        assert any(n.startswith("bundles split by the simulated") for n in run.notes) and f"1 split(s): {HOT} (MsgRate, range_equally_divide)" in run.notes


def test_the_split_algorithm_is_the_configured_one():
    h, m = cluster()
    cfg = PulsarConfig().overridden(defaultNamespaceBundleSplitAlgorithm="topic_count_equally_divide")
    first = engine(h, m, config=cfg, topics=topic_rows()).step(int(h.times[0]))
    # the middle of the 2nd and 3rd topic hashes: 0x20000000 + (0x50000000 - 0x20000000) // 2
    assert first.splits[0]["children"] == ["t/ns/0x00000000_0x38000000", "t/ns/0x38000000_0x80000000"]


@pytest.mark.parametrize("strategy", ["ThresholdShedder", "TransferShedder"])
def test_specified_positions_as_the_automatic_algorithm_fails_every_split_as_in_pulsar(strategy):
    """An automatic split passes no positions: Pulsar's split fails ("SplitBoundaries can't be empty"), the bundle
    stays whole, and the run goes on (it raised and stopped the night before)."""
    h, m = cluster()
    cfg = PulsarConfig().overridden(defaultNamespaceBundleSplitAlgorithm="specified_positions_divide")
    run = simulate(h, m, cfg, strategy)
    assert run.summary["splits"] == 0
    assert f"{HOT} not split: specified_positions_divide: SplitBoundaries can't be empty" in run.notes


def test_without_topic_stats_a_child_carries_its_share_of_the_hash_range_and_the_notes_say_so():
    h, m = cluster()
    run = simulate(h, m, PulsarConfig(), "ThresholdShedder")
    assert run.summary["splits"] >= 1
    assert any(n.startswith(f"no topic-level stats for {HOT}") for n in run.notes)
    assert np.allclose(run.timeseries["rate_served"], run.timeseries["rate_recorded"])


def test_the_namespace_bundle_cap_holds():
    h, m = cluster(rate=lambda s, k: 40_000.0)  # both bundles hot, halves still hot: splitting would go on
    cfg = PulsarConfig().overridden(loadBalancerNamespaceMaximumBundles="5")
    sim = engine(h, m, config=cfg)
    cycles = [sim.step(int(t)) for t in h.cycle_times(1)]
    assert sum(len(c.splits) for c in cycles) == 3
    assert max(int(c.bundles_owned.sum()) for c in cycles) == 5


def test_the_extensible_manager_splits_after_its_hit_count_and_keeps_the_children_on_the_owner():
    h, m = cluster()
    sim = engine(h, m, strategy="TransferShedder", topics=topic_rows())
    times = h.cycle_times(1)
    cycles = [sim.step(int(t)) for t in times[:6]]
    hit = [k for k, c in enumerate(cycles) if c.splits]
    assert hit == [3]  # hot on more than loadBalancerNamespaceBundleSplitConditionHitCountThreshold (3) cycles
    assert not [mv for c in cycles for mv in c.moves if mv["kind"] == "split"]  # children stay where they are


def test_a_split_interval_the_extensible_manager_cannot_start_with_is_said():
    h, m = cluster()
    run = simulate(h, m, PulsarConfig().overridden(loadBalancerSplitIntervalMinutes="0"), "TransferShedder")
    assert any(n.startswith("loadBalancerSplitIntervalMinutes=0: a broker on ExtensibleLoadManagerImpl cannot start")
               for n in run.notes)
    modular = simulate(h, m, PulsarConfig().overridden(loadBalancerSplitIntervalMinutes="0"), "ThresholdShedder")
    assert not any("loadBalancerSplitIntervalMinutes" in n for n in modular.notes)  # the leader splits in updateAll


def test_children_stay_on_their_owner_when_split_bundles_are_not_unloaded():
    h, m = cluster()
    cfg = PulsarConfig().overridden(loadBalancerAutoUnloadSplitBundlesEnabled="false")
    sim = engine(h, m, "OverloadShedder", config=cfg, topics=topic_rows())
    first = sim.step(int(h.times[0]))
    assert first.splits and not [mv for mv in first.moves if mv["kind"] == "split"]
    assert {h.brokers[sim.owner[sim.bundles.index[c]]] for c in (LEFT, RIGHT)} == {first.splits[0]["broker"]}


def test_no_splits_when_automatic_splitting_is_off_and_none_in_the_baselines():
    h, m = cluster()
    off = simulate(h, m, PulsarConfig().overridden(loadBalancerAutoBundleSplitEnabled="false"), "OverloadShedder")
    assert off.summary["splits"] == 0 and any("loadBalancerAutoBundleSplitEnabled=false" in n for n in off.notes)
    for baseline in ("no-balancing", "as-recorded"):
        run = simulate(h, m, PulsarConfig(), baseline)
        assert run.summary["splits"] == 0 and (run.timeseries["bundles"] == 2).all()


def test_a_split_the_recording_makes_later_takes_over_the_simulated_one_without_moving_anything():
    # Pulsar made the same split at snapshot 3: the halves appear in the recording, on broker-0
    names = [HOT, COLD, LEFT, RIGHT]
    owner = lambda s, k: ((0 if s < 3 else None), 0, *((0 if s >= 3 else None),) * 2)[k]  # noqa: E731
    rate = lambda s, k: (RATE, 50.0, 0.3 * RATE, 0.7 * RATE)[k]  # noqa: E731
    brokers, bundles = scripted(n_brokers=3, bundles=names, owner=owner, rate=rate)
    h = build_history("c", brokers, bundles)
    sim = engine(h, LoadModel.from_table(cpu_model(h.brokers), h.brokers), topics=topic_rows())
    times = h.cycle_times(1)
    before, split = None, []
    for t in times:
        c = sim.step(int(t))
        split += [(int(t), s["bundle"]) for s in c.splits]
        if t == h.times[3] - 60_000:
            before = {b: sim.owner[sim.bundles.index[b]] for b in (LEFT, RIGHT)}
        if t == h.times[3]:
            assert not [mv for mv in c.moves if mv["kind"] == "orphan"] and not c.splits
            came_from = {mv["bundle"]: h.brokers.index(mv["source"]) for mv in c.moves}
            assert {b: came_from.get(b, sim.owner[sim.bundles.index[b]]) for b in (LEFT, RIGHT)} == before
            assert c.rate_served == pytest.approx(c.rate_recorded) and int(c.bundles_owned.sum()) == 3
    assert split == [(int(h.times[0]), HOT)]  # the simulation split first, as Pulsar would have
    assert sim.bundles.size == 4  # the halves used the recording's own slots: no bundle counted twice


@pytest.mark.parametrize("split_every, shed_every, first", [(1, 5, 5), (5, 1, 15), (2, 3, 6), (1, 1, 3)])
def test_the_extensible_brokers_check_for_splits_every_split_interval_whatever_the_shedding_interval(
        split_every, shed_every, first):
    """SplitScheduler runs at its own fixed rate from the first cycle on: a bundle hot from the start splits at the
    fourth check (hit count 3), in the shedding cycle the check falls in (minute 3 of checks a minute: the cycle at
    minute 5 of cycles five minutes apart). It once checked once a shedding cycle: minute 15 and 9 for the first and
    third."""
    h, m = cluster()
    config = PulsarConfig().overridden(loadBalancerSplitIntervalMinutes=split_every,
                                       loadBalancerSheddingIntervalMinutes=shed_every)
    sim = engine(h, m, strategy="TransferShedder", config=config, topics=topic_rows())
    cycles = [sim.step(int(t)) for t in h.cycle_times(shed_every)[:20]]
    assert [k * shed_every for k, c in enumerate(cycles) if c.splits] == [first]  # minutes after the first cycle


def test_the_as_recorded_baseline_counts_the_splits_the_history_holds():
    # HOT splits into LEFT and RIGHT at snapshot 3 (recorded); COLD is deleted at snapshot 5 (no split)
    names = [HOT, COLD, LEFT, RIGHT]
    owner = lambda s, k: ((0 if s < 3 else None), (0 if s < 5 else None), *((0 if s >= 3 else None),) * 2)[k]  # noqa: E731
    brokers, bundles = scripted(n_brokers=3, bundles=names, owner=owner, rate=lambda s, k: 50.0)
    h = build_history("c", brokers, bundles)
    assert h.recorded_splits() == 1
    run = simulate(h, LoadModel.from_table(cpu_model(h.brokers), h.brokers), PulsarConfig(), "as-recorded")
    assert run.summary["splits"] == 1
