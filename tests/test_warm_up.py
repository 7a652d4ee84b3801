"""How long a replayed strategy's choices are estimates: until the state it started later than the leader wore off."""

import pytest

from lb_pipeline.algorithms.shedding.warm_up import FOREVER, SEED_WEIGHT, estimate_note, seed_weight, warm_up_cycles
from lb_pipeline.model.config import PulsarConfig


def test_threshold_shedders_seed_has_worn_off_at_the_first_cycle_it_weighs_five_percent_or_less():
    config = PulsarConfig()
    n = warm_up_cycles("ThresholdShedder", config)
    assert n == 29  # 0.9 ** 29 = 4.7 %, 0.9 ** 28 = 5.2 %
    assert seed_weight("ThresholdShedder", config, n) <= SEED_WEIGHT < seed_weight("ThresholdShedder", config, n - 1)
    assert "still weighs 5%" in estimate_note("ThresholdShedder", config, n)
    assert estimate_note("ThresholdShedder", config, n + 1) is None


@pytest.mark.parametrize("history, cycles", [("0", 0), ("0.5", 5), ("1.0", FOREVER)])
def test_a_history_share_of_zero_keeps_no_seed_and_one_never_forgets_it(history, cycles):
    config = PulsarConfig({"loadBalancerHistoryResourcePercentage": history})
    assert warm_up_cycles("ThresholdShedder", config) == cycles
    assert (estimate_note("ThresholdShedder", config, 1) is None) == (cycles == 0)


def test_avg_shedder_is_an_estimate_while_its_hit_counts_could_lag_and_stateless_strategies_never_are():
    config = PulsarConfig({"loadBalancerAvgShedderHitCountLowThreshold": "5",
                           "loadBalancerAvgShedderHitCountHighThreshold": "3"})
    assert warm_up_cycles("AvgShedder", config) == 5
    assert "hit counts" in estimate_note("AvgShedder", config, 5) and estimate_note("AvgShedder", config, 6) is None
    for strategy in ("OverloadShedder", "UniformLoadShedder", "TransferShedder"):
        assert warm_up_cycles(strategy, config) == 0 and estimate_note(strategy, config, 1) is None
