"""The simulated leader's per-bundle averages where a bundle restarts: a move drops its BundleData and it starts again
from its next sample (``ModularLoadManagerImpl.updateBundleData``), from its resource quota where an admin set one
(``getBundleDataOrDefault``)."""

from __future__ import annotations

import pytest
from tests.simulated import bundle_names, history_and_model

from lb_pipeline.model.config import PulsarConfig


def test_a_bundle_moved_between_snapshots_starts_its_averages_again_from_its_next_sample():
    """The leader drops a moved bundle's BundleData while no report lists it (ModularLoadManagerImpl.updateBundleData):
    its averages restart from the new owner's first report, as the simulation's do for a move the history imposes."""
    from lb_pipeline.algorithms import time_average as ta
    from lb_pipeline.simulation.engine import Simulation
    from lb_pipeline.simulation.balancers import make_balancer

    names = bundle_names(2)
    rate = lambda s, k: 10.0 if s < 2 else 400.0  # noqa: E731 - both bundles get hot at snapshot 2
    owner = lambda s, k: 1 if (k == 0 and s >= 2) else 0  # noqa: E731 - bundle 0 moved by hand at snapshot 2
    h, m = history_and_model(n_brokers=2, n_bundles=2, snapshots=4, minutes=1, rate=rate, owner=owner)
    h.imposed = {2: [(h.bundles.index(names[0]), 1)]}
    sim = Simulation(h, m, PulsarConfig(), make_balancer("no-balancing", PulsarConfig(), 0, h))
    for cycle in sim.run():
        if cycle.snapshot == 2:
            break
    moved, stayed = (h.bundles.index(n) for n in names)
    long_term = sim.averages.avg[ta.LONG_SAMPLES]
    assert sim.averages.n[ta.LONG_SAMPLES][moved] == 1 and long_term[moved][0] == pytest.approx(400.0)
    assert sim.averages.n[ta.LONG_SAMPLES][stayed] == 3 and long_term[stayed][0] < 400.0  # 10, 10, then 400


def test_a_moved_bundle_with_a_resource_quota_starts_again_from_the_quota_with_a_full_window():
    """``getBundleDataOrDefault``: where the leader has no stored BundleData, a bundle's ResourceQuota seeds its
    averages with ample history; the moved bundle's first sample on its new owner then weighs 1/10 and 1/1000."""
    import pandas as pd

    from lb_pipeline.algorithms import time_average as ta
    from lb_pipeline.simulation.balancers import make_balancer
    from lb_pipeline.simulation.engine import Simulation
    from lb_pipeline.simulation.leader_averages import leader_averages

    names = bundle_names(2)
    owner = lambda s, k: 1 if (k == 0 and s >= 2) else 0  # noqa: E731 - bundle 0 moved by hand at snapshot 2
    h, m = history_and_model(n_brokers=2, n_bundles=2, snapshots=4, minutes=1, rate=lambda s, k: 400.0, owner=owner)
    h.imposed = {2: [(h.bundles.index(names[0]), 1)]}
    quotas = pd.DataFrame([{"bundle": names[0], "snapshot_ts": pd.Timestamp(int(h.times[0]), unit="ms", tz="UTC"),
                            "msg_rate_in": 50.0, "msg_rate_out": 5.0, "bandwidth_in": 7000.0, "bandwidth_out": 900.0}])
    leader = leader_averages(h, None, quotas=quotas)
    sim = Simulation(h, m, PulsarConfig(), make_balancer("no-balancing", PulsarConfig(), 0, h), leader=leader)
    for cycle in sim.run():
        if cycle.snapshot == 2:
            break
    moved = h.bundles.index(names[0])
    for window in (ta.SHORT_SAMPLES, ta.LONG_SAMPLES):
        assert sim.averages.n[window][moved] == window
        for f, quota in enumerate((50.0, 5.0, 7000.0, 900.0)):
            sample = h.traffic[2, moved, f]
            assert sim.averages.avg[window][moved][f] == pytest.approx(ta.update_loop(window, quota, sample, 1, window)[1])
    # the other bundle has no quota: its averages go on from its own samples
    assert sim.averages.n[ta.LONG_SAMPLES][h.bundles.index(names[1])] == 3
