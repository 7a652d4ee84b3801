"""Which load manager a configuration makes the brokers run, as ``LoadManager.create`` picks it (4.0.8)."""

import pytest

from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER, IMPL, PulsarConfig
from lb_pipeline.model.load_manager import LEGACY, SIMPLE_LOAD_MANAGER, configured_strategy, legacy_reason

EXT_TRANSFER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"


@pytest.mark.parametrize("settings, ran", [
    ({}, "ThresholdShedder"),
    ({"loadBalancerLoadSheddingStrategy": IMPL + "UniformLoadShedder"}, "UniformLoadShedder"),
    ({"loadBalancerLoadSheddingStrategy": "com.acme.ThresholdShedder"}, "com.acme.ThresholdShedder"),  # a plugin
    # a placement of its own does not stop the modular load manager: its strategy is replayed (the driver notes
    # the placement it replays with instead)
    ({"loadBalancerLoadPlacementStrategy": "com.acme.Placement"}, "ThresholdShedder"),
    ({"loadBalancerLoadSheddingStrategy": IMPL + "AvgShedder", "loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder"},
     "AvgShedder"),
    ({"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER}, "TransferShedder"),
    ({"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER, "loadBalancerLoadSheddingStrategy": EXT_TRANSFER}, "TransferShedder"),
    # a load manager of its own, even one named like Pulsar's extensible one: a plugin (4.0.8 checks the instance)
    ({"loadManagerClassName": "com.acme.ExtensibleLoadManagerImpl"}, "com.acme.ExtensibleLoadManagerImpl"),
])
def test_the_strategy_the_brokers_run(settings, ran):
    config = PulsarConfig(settings)
    assert configured_strategy(config) == ran and legacy_reason(config) is None


@pytest.mark.parametrize("settings, reason", [
    ({"loadManagerClassName": ""}, "loadManagerClassName is blank"),
    ({"loadManagerClassName": SIMPLE_LOAD_MANAGER}, "loadManagerClassName names it"),
    ({"loadManagerClassName": IMPL + "ModularLoadManagerWrapper"},  # no constructor without arguments
     f"Pulsar has no load manager '{IMPL}ModularLoadManagerWrapper'"),
    # ModularLoadManagerImpl.initialize throws: createLoadSheddingStrategy has no fallback in 4.0.x
    ({"loadBalancerLoadSheddingStrategy": IMPL + "TransferShedder"},
     f"ModularLoadManagerImpl cannot start: Pulsar has no loadBalancerLoadSheddingStrategy '{IMPL}TransferShedder'"),
    ({"loadBalancerLoadSheddingStrategy": EXT_TRANSFER},  # no LoadSheddingStrategy
     f"ModularLoadManagerImpl cannot start: Pulsar has no loadBalancerLoadSheddingStrategy '{EXT_TRANSFER}'"),
    ({"loadBalancerLoadSheddingStrategy": IMPL + "sub.AvgShedder"},
     f"ModularLoadManagerImpl cannot start: Pulsar has no loadBalancerLoadSheddingStrategy '{IMPL}sub.AvgShedder'"),
    ({"loadBalancerLoadSheddingStrategy": "ThresholdShedder"},  # Class.forName needs the package
     "ModularLoadManagerImpl cannot start: Pulsar has no loadBalancerLoadSheddingStrategy 'ThresholdShedder'"),
    ({"loadBalancerLoadPlacementStrategy": IMPL + "OverloadShedder"},  # no ModularLoadManagerStrategy
     f"ModularLoadManagerImpl cannot start: Pulsar has no loadBalancerLoadPlacementStrategy '{IMPL}OverloadShedder'"),
    ({"loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder"},
     "ModularLoadManagerImpl cannot start: loadBalancerLoadPlacementStrategy AvgShedder needs the same "
     f"loadBalancerLoadSheddingStrategy, got '{IMPL}ThresholdShedder'"),
])
def test_a_load_manager_pulsar_cannot_start_leaves_the_brokers_on_the_deprecated_one(settings, reason):
    config = PulsarConfig(settings)
    assert legacy_reason(config) == reason and configured_strategy(config) == LEGACY
