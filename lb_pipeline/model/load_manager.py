"""Which load manager and shedding strategy a configuration makes the brokers run, as Pulsar picks them.

``LoadManager.create`` (4.0.7 and 4.0.8, read with ``javap``) creates ``loadManagerClassName`` by reflection and
initializes it; a blank name, a class it cannot create, or any exception of ``initialize`` leaves the broker on
``SimpleLoadManagerImpl``, Pulsar's deprecated load manager, with a warning in its log. ``ModularLoadManagerImpl.
initialize`` throws on a placement or shedding class it cannot create (``ModularLoadManagerStrategy.create`` and
``createLoadSheddingStrategy`` have no fallback) and on AvgShedder placement beside another shedding strategy. A
class outside Pulsar's packages is a plugin: whether the brokers could load it, a snapshot cannot tell.
"""

from __future__ import annotations

from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER, IMPL, MODULAR_LOAD_MANAGER, PulsarConfig

SIMPLE_LOAD_MANAGER = IMPL + "SimpleLoadManagerImpl"
LEGACY = "SimpleLoadManagerImpl"  # what configured_strategy names when the brokers run it: nothing to replay
# the classes of org.apache.pulsar.broker.loadbalance.impl that implement LoadSheddingStrategy and
# ModularLoadManagerStrategy in 4.0.8 (AvgShedder both)
_SHEDDING = {"OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"}
_PLACEMENT = {"LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector", "AvgShedder"}


def impl_name(class_name: str) -> str:
    """The simple name of one of Pulsar's modular load-balancing classes (``…loadbalance.impl.ThresholdShedder`` →
    ``ThresholdShedder``). A class of another package keeps its full name: Pulsar creates it by that name
    (``Reflections.createInstance``), so ``com.acme.ThresholdShedder`` is a plugin of its own, not Pulsar's."""
    short = class_name[len(IMPL):]
    return short if class_name.startswith(IMPL) and short and "." not in short else class_name


def is_plugin(class_name: str) -> bool:
    """A class of a package of its own (``com.acme.Shedder``); Pulsar's must be one it has."""
    return "." in class_name and not class_name.startswith("org.apache.pulsar.")


def legacy_reason(config: PulsarConfig) -> str | None:
    """Why the brokers run ``SimpleLoadManagerImpl`` under ``config``, or None where they run what it names."""
    manager = config["loadManagerClassName"]
    if not manager:
        return "loadManagerClassName is blank"
    if manager == SIMPLE_LOAD_MANAGER:
        return "loadManagerClassName names it"
    if manager == EXTENSIBLE_LOAD_MANAGER or is_plugin(manager):
        return None
    if manager != MODULAR_LOAD_MANAGER:
        return f"Pulsar has no load manager {manager!r}"
    placement, shedding = config["loadBalancerLoadPlacementStrategy"], config["loadBalancerLoadSheddingStrategy"]
    for key, name, known in (("loadBalancerLoadPlacementStrategy", placement, _PLACEMENT),
                             ("loadBalancerLoadSheddingStrategy", shedding, _SHEDDING)):
        if not is_plugin(name) and not (name.startswith(IMPL) and impl_name(name) in known):
            return f"ModularLoadManagerImpl cannot start: Pulsar has no {key} {name!r}"
    if impl_name(placement) == "AvgShedder" and shedding != placement:
        return ("ModularLoadManagerImpl cannot start: loadBalancerLoadPlacementStrategy AvgShedder needs the same "
                f"loadBalancerLoadSheddingStrategy, got {shedding!r}")
    return None


def configured_strategy(config: PulsarConfig) -> str:
    """The shedding strategy the cluster runs: ``LEGACY`` where the brokers fall back to ``SimpleLoadManagerImpl``
    (``legacy_reason``); a plugin load manager's full name; the extensible load manager's TransferShedder (a
    modular strategy is no ``NamespaceUnloadStrategy``: ``UnloadScheduler.createNamespaceUnloadStrategy`` falls
    back to it); else the modular load manager's shedding strategy, Pulsar's by its simple name, a plugin by its
    full name."""
    if legacy_reason(config):
        return LEGACY
    manager = config["loadManagerClassName"]
    if manager == EXTENSIBLE_LOAD_MANAGER:
        return "TransferShedder"
    if manager != MODULAR_LOAD_MANAGER:
        return manager
    return impl_name(config["loadBalancerLoadSheddingStrategy"])
