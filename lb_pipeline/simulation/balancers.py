"""What decides moves in a simulated cluster: Pulsar's strategies, and the two baselines they are measured against.

Each balancer answers one cycle with unloads (source, bundle, destination) and owns the placement path that
places bundles left without an owner (their broker left or restarted):

* the modular four run ``ModularLoadManagerImpl.doLoadShedding`` (``algorithms.shedding.driver``) with their
  grace period, hit counts and EMAs carried from cycle to cycle, unloads placed by the cluster's placement strategy;
  given the leader's log (``logged``), ThresholdShedder takes its history from the lines the leader logged before
  each cycle (``algorithms/shedding/logged_history.py``);
* ``TransferShedder`` (extensible load manager) reads ``BrokerLoadData`` and top-k bundles derived from the
  simulated reports, as a migrating user's brokers would publish them; it picks destinations itself, and its
  orphaned bundles are assigned as ``ExtensibleLoadManagerImpl.selectAsync`` does (its broker filters, then the
  extensible ``LeastResourceUsageWithWeight``);
* ``no-balancing`` never unloads (ownership frozen at the first snapshot, orphans still placed);
* ``as-recorded`` moves each bundle to the owner the next snapshot shows (the history the cluster really had).
"""

from __future__ import annotations

import bisect
import random

from lb_pipeline.algorithms.shedding.common import LoadData, Unload
from lb_pipeline.algorithms.shedding.driver import MODULAR_STRATEGIES, STRATEGIES, ModularShedding
from lb_pipeline.algorithms.shedding.logged_history import LoggedHistory
from lb_pipeline.algorithms.shedding.extensible_filters import ExtensiblePlacement
from lb_pipeline.algorithms.shedding.selection import ClusterState, ModularPlacement
from lb_pipeline.algorithms.shedding.transfer_inputs import DerivedLoadState, derive_from_modular
from lb_pipeline.algorithms.shedding.transfer_shedder import TransferShedder
from lb_pipeline.model.config import PulsarConfig

BASELINES = ("no-balancing", "as-recorded")


class Balancer:
    name = ""
    placement: ModularPlacement

    def unloads(self, load: LoadData, config: PulsarConfig, now_ms: int, state: ClusterState, view: dict) -> list[Unload]:
        raise NotImplementedError

    def place(self, bundle: str, load: LoadData, config: PulsarConfig, state: ClusterState, view: dict) -> str | None:
        """Where a bundle without a live owner goes: the placement path (``selectBrokerForAssignment``)."""
        return self.placement.assign(bundle, load, config, state)

    def restart(self, config: PulsarConfig) -> None:
        """The leader runs a new load manager (another broker leads, or it restarted): the state its strategies kept
        in memory is gone (``model.at_start``). The baselines keep none."""

    def brokers_restarted(self, brokers: set[str]) -> None:
        """These brokers restarted or are down: what each broker's own process kept is gone."""

    def bundles_changed(self, brokers: set[str], now_ms: int) -> None:
        """Bundles left, arrived on or split on these brokers this cycle."""

    def logged_from(self) -> dict[str, int]:
        """Broker → when its strategy state was first taken from the leader's log (``Modular.take_log``)."""
        return {}


class Modular(Balancer):
    def __init__(self, strategy: str, config: PulsarConfig, seed: int, placement: str | None = None):
        self.name, self.seed, self.placement_name = strategy, seed, placement
        self.take_log([], [])
        self.restart(config)
        self.notes = list(self.run.notes)

    def restart(self, config):
        self.run = ModularShedding.named(self.name, config, self.seed, self.placement_name)
        self.placement = self.run.placement
        self.taken, self._read = LoggedHistory(), 0

    def logged_from(self) -> dict[str, int]:
        return self.taken.anchored

    def take_log(self, lines: list[list], elections: list[int]) -> None:
        """The leader's ThresholdShedder lines and elections (``logged_history.from_events``), read cycle by cycle."""
        self._lines = sorted(lines, key=lambda x: int(x[1]))
        self._times, self._elections, self._read = [int(x[1]) for x in self._lines], sorted(elections), 0

    def unloads(self, load, config, now_ms, state, view):
        if self._lines and self.name == "ThresholdShedder":  # the leader's state, logged before this cycle
            shedder, before = self.run.strategy, now_ms - 1
            read = bisect.bisect_right(self._times, before)
            k = bisect.bisect_right(self._elections, before)
            self.taken.apply(shedder, before, self._lines[self._read:read], self._elections[k - 1] if k else None,
                             list(load.brokers), lambda: shedder.update_all(load.frame(config), config),
                             max(1, config.get_int("loadBalancerSheddingIntervalMinutes")) * 60_000)
            self._read = max(self._read, read)
        return self.run.run_cycle(load, config, now_ms, state).unloads


class Transfer(Balancer):
    name = "TransferShedder"

    def __init__(self, seed: int):
        self.seed, self.derived = seed, DerivedLoadState()  # each broker derives its own BrokerLoadData
        self.restart(None)
        self.notes = ["TransferShedder reads BrokerLoadData derived from the simulated LocalBrokerData; orphaned "
                      "bundles are placed as the extensible load manager assigns them (its broker filters, then "
                      "LeastResourceUsageWithWeight on that BrokerLoadData)"]

    def restart(self, config):
        self.shedder = TransferShedder()
        self.placement = ExtensiblePlacement(self._store, random.Random(self.seed))

    def _store(self) -> dict[str, dict]:
        """What each broker's reporter last wrote to the load data store."""
        return {b: r.stored for b, r in self.derived.brokers.items() if r.stored is not None}

    def unloads(self, load, config, now_ms, state, view):
        ext = derive_from_modular(load.brokers, config, now_ms, self.derived, state.groups, view["owners"],
                                  isolation=state.isolation, domains=state.broker_domain)
        return self.shedder.run_cycle(ext, config, now_ms).unloads

    def brokers_restarted(self, brokers):  # each broker runs its own reporter: a new process starts it afresh
        self.derived.restarted(brokers)

    def bundles_changed(self, brokers, now_ms):
        """Each move, placement or split is a bundle leaving (``Releasing``, ``Splitting``) or arriving (``Owned``)
        on a broker: its reporter clears its data (``BrokerLoadDataReporter.handleEvent``)."""
        self.derived.changed(brokers, now_ms)


class Frozen(Balancer):
    name = "no-balancing"

    def __init__(self, config: PulsarConfig, seed: int):
        self.placement = Modular("OverloadShedder", config, seed).placement  # the configured placement path
        self.notes = ["no shedding: ownership frozen at the first snapshot; orphaned bundles placed as Pulsar would"]

    def unloads(self, load, config, now_ms, state, view):
        return []


class Recorded(Balancer):
    name = "as-recorded"

    def __init__(self, config: PulsarConfig, seed: int, history):
        self.placement = Modular("OverloadShedder", config, seed).placement
        self.history = history
        self.notes = ["ownership as the snapshots recorded it; moves happen at snapshot times"]

    def place(self, bundle, load, config, state, view):
        recorded = self.history.owner[view["snapshot"], view["bundle_index"][bundle]]
        if recorded >= 0 and self.history.brokers[recorded] in load.brokers:
            return self.history.brokers[recorded]
        return super().place(bundle, load, config, state, view)

    def unloads(self, load, config, now_ms, state, view):
        if not view["new_snapshot"]:
            return []
        h, i = self.history, view["snapshot"]
        out = []
        for bundle, current in view["owners"].items():
            n = view["bundle_index"][bundle]
            recorded = h.owner[i, n]
            if recorded >= 0 and h.brokers[recorded] != current and h.brokers[recorded] in load.brokers:
                out.append(Unload("as-recorded", current, bundle, "Recorded", "ownership", 0.0, 0.0, 0.0, "",
                                  destination=h.brokers[recorded]))
        return out


def make_balancer(name: str, config: PulsarConfig, seed: int, history=None, placement: str | None = None) -> Balancer:
    if name in MODULAR_STRATEGIES:
        return Modular(name, config, seed, placement)
    if name == "TransferShedder":
        return Transfer(seed)
    if name == "no-balancing":
        return Frozen(config, seed)
    if name == "as-recorded":
        return Recorded(config, seed, history)
    raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES + BASELINES)}")
