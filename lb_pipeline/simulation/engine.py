"""The simulated cluster, cycle by cycle: the recorded traffic on simulated ownership, closed loop.

Each cycle (one per ``loadBalancerSheddingIntervalMinutes``):

1. at a snapshot boundary, brokers join, leave and restart as recorded; bundles of a broker that left or
   restarted are placed by the balancer's placement path (``ModularLoadManagerImpl`` reassigns them on lookup); a
   bundle that appears in the recorded history (split there) starts on the simulated owner of the bundle whose
   range held it, and a bundle that disappears is dropped;
2. every bundle carries its traffic (interpolated between snapshots) to its simulated owner; each broker's usage
   comes from the load model; the leader's short/long-term bundle averages take one sample (``TimeAverageMessageData``);
3. the balancer runs on the ``LoadData`` that results, and its unloads move bundles before the next cycle.

What a cycle saw and what moved are returned for ``metrics``; the same arrays feed every strategy, so runs differ
only by their decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import Weights, percent_usage_array
from lb_pipeline.simulation.balancers import Balancer
from lb_pipeline.simulation.history import History
from lb_pipeline.simulation.leader_view import BundleOrders, Owners, leader_load
from lb_pipeline.simulation.load_model import LoadModel
from lb_pipeline.simulation.ownership import inherit_owners
from lb_pipeline.simulation.policies import Policies

SEED = np.array([ta.DEFAULT_SEED[f] for f in ta.FIELDS])


@dataclass
class Cycle:
    ts: int
    snapshot: int
    brokers: list[str]  # live brokers
    weighted_max: np.ndarray  # per live broker, fraction (getMaxResourceUsageWithWeight)
    bundles_owned: np.ndarray  # per live broker
    rate_recorded: float  # msg/s of every present bundle (what the history carries)
    rate_served: float  # msg/s the live brokers serve in the simulation (must equal rate_recorded)
    unowned: int  # bundles no placement could take
    moves: list[dict] = field(default_factory=list)  # bundle, source, destination, reason, clients, kind


@dataclass
class Simulation:
    history: History
    model: LoadModel
    config: PulsarConfig
    balancer: Balancer
    policies: Policies = field(default_factory=Policies)
    anchored: bool = False  # at each snapshot take the recorded ownership and usage (one-step-ahead validation)

    def __post_init__(self):
        h = self.history
        self.weights = Weights.from_config(self.config)
        self.owner = np.full(len(h.bundles), -1, np.int64)
        self.n = {w: np.zeros(len(h.bundles), np.int64) for w in (ta.SHORT_SAMPLES, ta.LONG_SAMPLES)}
        self.avg = {w: np.tile(SEED, (len(h.bundles), 1)) for w in (ta.SHORT_SAMPLES, ta.LONG_SAMPLES)}
        self.snapshot = -1
        self._restarting: set[str] = set()
        # the leader samples each bundle about once a minute (a broker report each): a cycle of N minutes is N samples
        self.samples_per_cycle = max(1, self.config.get_int("loadBalancerSheddingIntervalMinutes"))
        self.bundle_index = {b: n for n, b in enumerate(h.bundles)}
        self.orders = BundleOrders(h.bundles, self.bundle_index)

    def run(self, progress: Callable[[int, int], None] | None = None):
        """Every cycle of the history, one per ``loadBalancerSheddingIntervalMinutes``."""
        times = self.history.cycle_times(self.samples_per_cycle)
        for k, t in enumerate(times):
            yield self.step(int(t))
            if progress:
                progress(k + 1, len(times))

    # --- one cycle ----------------------------------------------------------------------------------------------
    def step(self, t: int) -> Cycle:
        h = self.history
        i = h.snapshot_at(t)
        self._at_snapshot = t == h.times[i]
        moves: list[dict] = []
        new_snapshot = i != self.snapshot
        if new_snapshot:
            self._enter_snapshot(i)
            if self.anchored:
                self.owner = np.where(h.present[i], h.owner[i], -1)
                self._restarting = set()
        live_idx = np.flatnonzero(h.live[i])
        live = [h.brokers[b] for b in live_idx]
        traffic = np.where(h.present[i][:, None], h.traffic_at(t), 0.0)
        self._sample(h.present[i], traffic, self.samples_per_cycle)
        state = self.policies.state(live, t)
        load = self._load(i, traffic, live_idx)
        view = {"snapshot": i, "new_snapshot": new_snapshot, "bundle_index": self.bundle_index}
        homeless = ~np.isin(self.owner, live_idx)
        if new_snapshot and self._restarting:  # a restarted broker comes back empty
            homeless |= np.isin(self.owner, [h.brokers.index(b) for b in self._restarting])
        orphans = np.flatnonzero(h.present[i] & homeless)
        if len(orphans):  # place them before shedding, as lookups would; a restarting broker is down meanwhile
            self.balancer.placement.new_cycle()
            up = self.policies.state([b for b in live if b not in self._restarting], t) if new_snapshot else state
            for n in orphans.tolist():
                dest = self.balancer.place(h.bundles[n], load, self.config, up, view)
                if dest is not None:
                    moves.append(self._move(i, n, self.owner[n], h.brokers.index(dest), "placed", "orphan"))
            load = self._load(i, traffic, live_idx)
        owned = np.bincount(self.owner[h.present[i] & (self.owner >= 0)], minlength=len(h.brokers))[live_idx]
        unowned = int((h.present[i] & ~np.isin(self.owner, live_idx)).sum())
        view["owners"] = Owners(h.bundles, h.brokers, self.owner, h.present[i] & (self.owner >= 0))
        for u in self.balancer.unloads(load, self.config, t, state, view):
            n = view["bundle_index"][u.bundle]
            if h.brokers[self.owner[n]] != u.broker:
                continue  # moved already this cycle
            dest = u.destination or self.balancer.placement.select(u.bundle, load, self.config, state)
            if dest is None or dest == u.broker or dest not in live:
                continue
            moves.append(self._move(i, n, self.owner[n], h.brokers.index(dest), u.reason, "unload"))
        wmax = self._weighted_max(self._usage_live, self._limits_live)
        rate_recorded = float(traffic[:, :2].sum())
        return Cycle(t, i, live, wmax, owned, rate_recorded, self._served, unowned, moves)

    def _enter_snapshot(self, i: int) -> None:
        h = self.history
        if self.snapshot < 0:
            self.owner = np.where(h.present[i], h.owner[i], -1)
        else:
            prev = self.snapshot
            inherit_owners(h, prev, i, self.owner)
            restarted = h.live[prev] & h.live[i] & (h.start[prev] != h.start[i])
            self._restarting = {h.brokers[b] for b in np.flatnonzero(restarted)}
            appeared = h.present[i] & ~h.present[prev]
            self.n[ta.SHORT_SAMPLES][appeared] = 0
            self.n[ta.LONG_SAMPLES][appeared] = 0
            for w in self.avg:
                self.avg[w][appeared] = SEED
        self.snapshot = i

    def _move(self, i: int, n: int, src: int, dst: int, reason: str, kind: str) -> dict:
        h = self.history
        self.owner[n] = dst
        return {"bundle": h.bundles[n], "source": h.brokers[src] if src >= 0 else None, "destination": h.brokers[dst],
                "reason": reason, "kind": kind, "clients": int(h.clients[i, n].sum())}

    def _sample(self, present: np.ndarray, traffic: np.ndarray, samples: int) -> None:
        k = present.astype(np.int64) * samples
        for w in self.avg:
            n = self.n[w]
            for f in range(len(ta.FIELDS)):
                _, self.avg[w][:, f] = ta.update_many(n, self.avg[w][:, f], traffic[:, f], k, w)
            self.n[w] = np.minimum(n + k, w)

    def _broker_traffic(self, traffic: np.ndarray) -> np.ndarray:
        """(B, 4) traffic per broker (bundles without a live owner count nowhere)."""
        mask = self.owner >= 0
        B = len(self.history.brokers)
        return np.stack([np.bincount(self.owner[mask], weights=traffic[mask, f], minlength=B) for f in range(4)], axis=1)

    def _weighted_max(self, usage: np.ndarray, limits: np.ndarray) -> np.ndarray:
        """``getMaxResourceUsageWithWeight`` per broker: float32 percents, heap left out, as a fraction."""
        if not len(usage):
            return np.zeros(0)
        pct = percent_usage_array(usage, limits)
        w = self.weights
        cols = np.stack([pct[:, 0] * w.cpu, pct[:, 2] * w.direct_memory, pct[:, 3] * w.bandwidth_in,
                         pct[:, 4] * w.bandwidth_out], axis=1)
        return cols.max(axis=1) / 100.0

    def _load(self, i: int, traffic: np.ndarray, live_idx: np.ndarray) -> LoadData:
        """The leader's ``LoadData`` of this cycle: ``LocalBrokerData`` per live broker, ``BundleData`` per bundle."""
        h = self.history
        bt = self._broker_traffic(traffic)
        feats = np.stack([bt[:, 0] + bt[:, 1], bt[:, 2], bt[:, 3]], axis=1)
        usage = self.model.predict(feats, h.limits[i])
        if self.anchored and self._at_snapshot:  # ownership is the recorded one: so is the load
            usage[live_idx] = np.nan_to_num(h.usage[i][live_idx])
        self._usage_live, self._limits_live = usage[live_idx], h.limits[i][live_idx]
        self._served = float(feats[live_idx, 0].sum())
        return leader_load(h, i, live_idx, self.owner, traffic, bt, usage,
                           (self.avg[ta.SHORT_SAMPLES], self.avg[ta.LONG_SAMPLES]),
                           (self.n[ta.SHORT_SAMPLES], self.n[ta.LONG_SAMPLES]), self.orders)
