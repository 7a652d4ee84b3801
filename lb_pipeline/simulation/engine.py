"""The simulated cluster, cycle by cycle: the recorded traffic on simulated ownership, closed loop.

Each cycle (one per ``loadBalancerSheddingIntervalMinutes``):

1. at a snapshot boundary, brokers join, leave and restart as recorded; bundles of a broker that left or
   restarted are placed by the balancer's placement path (``ModularLoadManagerImpl`` reassigns them on lookup); a
   bundle that appears in the recorded history (split there) starts on the simulated owner of the bundle whose
   range held it, and a bundle that disappears is dropped;
2. every bundle carries its traffic (interpolated between snapshots) to its simulated owner; each broker's usage
   comes from the load model; the leader's short/long-term bundle averages take the samples the leader takes
   meanwhile (``bundle_averages``: its cadence and, where a snapshot holds them, its own averages);
3. the balancer runs on the ``LoadData`` that results, and its unloads move bundles before the next cycle;
4. the split trigger of the balancer's load manager picks bundles and the configured algorithm cuts them
   (``splitting``; children carry their share of the traffic, ``bundle_set``), unloaded and placed when Pulsar
   would unload them. After shedding: the leader has the children's stats (a broker report) before it next sheds.

What a cycle saw and what moved are returned for ``metrics``; the same arrays feed every strategy, so runs differ
only by their decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lb_pipeline.algorithms.time_average import LONG_SAMPLES, SHORT_SAMPLES
from lb_pipeline.algorithms.shedding.common import LoadData
from lb_pipeline.algorithms.shedding.selection import LookupFailed
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import Weights, percent_usage_array
from lb_pipeline.simulation.arrivals import arrive
from lb_pipeline.simulation.balancers import Balancer
from lb_pipeline.simulation.bundle_averages import BundleAverages
from lb_pipeline.simulation.broker_view import pinned_by_one_topic, reported_brokers
from lb_pipeline.simulation.bundle_set import BundleSet, TopicProfiles
from lb_pipeline.simulation.history import History
from lb_pipeline.simulation.leader_averages import LeaderAverages
from lb_pipeline.simulation.leader_view import Owners, held_by, leader_load
from lb_pipeline.simulation.load_model import LoadModel
from lb_pipeline.simulation.ownership import inherit_owners
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.simulation.residuals import recorded_residuals
from lb_pipeline.simulation.splitting import Splits



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
    splits: list[dict] = field(default_factory=list)  # bundle, broker, children, reason
    # per live broker: above loadBalancerBrokerOverloadedThresholdPercentage with one bundle one topic carries
    # serving at least half its messages (``pinned``): moving other bundles cannot bring it down; only a broker large
    # enough for that bundle can
    pinned: np.ndarray | None = None


def cycle_minutes(config: PulsarConfig) -> int:
    """Minutes between two simulated cycles: ``loadBalancerSheddingIntervalMinutes``, one at least (Pulsar's
    ``LoadSheddingTask`` runs back to back at 0 or less; ``run.cadence_notes`` says so)."""
    return max(1, config.get_int("loadBalancerSheddingIntervalMinutes"))


@dataclass
class Simulation:
    history: History
    model: LoadModel
    config: PulsarConfig
    balancer: Balancer
    policies: Policies = field(default_factory=Policies)
    anchored: bool = False  # at each snapshot take the recorded ownership and usage (one-step-ahead validation)
    profiles: TopicProfiles | None = None  # topic-level stats of the bundles that can split
    splits: Splits | None = None  # the load manager's split trigger; None: bundles split only as recorded
    config_at: Callable[[int], PulsarConfig] | None = None  # the configuration of a cycle's time; None: ``config``
    leader_restarts: frozenset[int] = frozenset()  # snapshots whose leader runs a new load manager (model.at_start)
    # each broker's usage is the load model's on the simulated traffic plus what the model missed at the snapshot
    # (its recorded usage minus the model's on the recorded ownership): the host's own noise stays with the host
    residuals: bool = False
    # the modular leader reads each broker's LocalBrokerData as last written (``reported_brokers``), not its current
    # load: a broker rewrites it only past loadBalancerReportUpdateThresholdPercentage or
    # loadBalancerReportUpdateMaxIntervalMinutes (``ModularLoadManagerImpl.needBrokerDataUpdate``)
    reporter: bool = False
    # when the cycles run (epoch ms): the leader's, read from its log (``leader_cycle.logged_cycles``), the first
    # after a snapshot from that snapshot's traffic, which holds the reports the leader decided from; None: every
    # shedding interval from the first snapshot, the traffic interpolated between snapshots
    schedule: list[int] | None = None
    # the leader's averages at the first snapshot and how often it samples (``leader_averages``); None: every bundle
    # starts from Pulsar's default seed, one sample a minute
    leader: LeaderAverages | None = None
    # moves the history imposes, each taken when the report writes show the new owner's first report
    # (``arrivals.timed_moves``: arrival, bundle index, broker index), in time order
    arrivals: list = field(default_factory=list)

    def __post_init__(self):
        h = self.history
        self.weights = Weights.from_config(self.config)
        self.bundles = BundleSet(h, self.profiles)
        self.owner = np.full(len(h.bundles), -1, np.int64)
        self.averages = BundleAverages(len(h.bundles), self.leader)  # the leader's BundleData of every bundle
        self.snapshot = -1
        self._restarting: set[str] = set()
        self.samples_per_cycle = self.averages.samples(cycle_minutes(self.config))
        self.bundle_index = self.bundles.index
        self._next_split: int | None = None  # when the extensible brokers' SplitScheduler checks next (ms)
        self._residual = recorded_residuals(h, self.model) if self.residuals else None
        self._written: dict[int, tuple] = {}  # broker → (usage row, traffic row, bundles, weighted max, written at)
        self._now = 0
        self._arrived: set[tuple[int, int]] = set()  # (bundle, broker) of the imposed moves taken at their arrival
        self._between: tuple[list[dict], list[dict]] = ([], [])  # moves and splits since the last cycle
        # broker → cycles whose traffic lay past what the load model's fit saw (``LoadModel.extrapolated``)
        self.extrapolated: dict[str, int] = {}
        self._beyond = np.zeros(len(h.brokers), dtype=bool)

    def run(self, progress: Callable[[int, int], None] | None = None):
        """Every cycle of the history, one per ``loadBalancerSheddingIntervalMinutes``."""
        cycles, arrivals = self.cycles(), list(self.arrivals)
        for k, (t, minutes) in enumerate(cycles):
            while arrivals and arrivals[0][0].t < t:
                arrive(self, *arrivals.pop(0))
            self.samples_per_cycle = self.averages.samples(minutes)
            yield self.step(t)
            if progress:
                progress(k + 1, len(cycles))

    def cycles(self) -> list[tuple[int, int]]:
        """(time, minutes since the cycle before) of every cycle. Under ``config_at`` the cadence follows each
        cycle's configuration: ``LoadSheddingTask.start`` schedules the next cycle after the
        ``loadBalancerSheddingIntervalMinutes`` in force when a cycle ends (a dynamic key, read every time)."""
        h = self.history
        if self.schedule:
            minutes = cycle_minutes(self.config)
            return [(int(t), minutes if k == 0 else max(1, round((t - self.schedule[k - 1]) / 60_000)))
                    for k, t in enumerate(self.schedule)]
        if self.config_at is None:
            minutes = cycle_minutes(self.config)
            return [(int(t), minutes) for t in h.cycle_times(minutes)]
        first, end = int(h.times[0]), int(h.times[-1])
        out, t, samples = [], first, None
        while t <= end:
            minutes = cycle_minutes(self.config_at(t))
            out.append((t, samples or minutes))
            samples = minutes
            t += min(minutes * 60_000, end - first + 1)  # past the day: one cycle, as ``History.cycle_times``
        return out

    # --- one cycle ----------------------------------------------------------------------------------------------
    def step(self, t: int) -> Cycle:
        h, bs = self.history, self.bundles
        self._now = t
        i = h.snapshot_at(t)
        self._at_snapshot = t == h.times[i]
        moves: list[dict] = []
        new_snapshot = i != self.snapshot
        if new_snapshot:
            # every snapshot since the last cycle's, in turn: one with no cycle of its own (snapshots closer
            # together than a shedding interval) still brings its recorded splits, restarts and imposed moves
            restarting = set()
            for j in range(i if self.snapshot < 0 else self.snapshot + 1, i + 1):
                self._enter_snapshot(j)
                restarting |= self._restarting
            self._restarting = restarting
            if self.anchored:  # anchored runs do not split: the bundle set is the recorded one
                self.owner = np.where(h.present[i], h.owner[i], -1)
                self._restarting = set()
        live_idx = np.flatnonzero(h.live[i])
        live = [h.brokers[b] for b in live_idx]
        # on the leader's schedule, the cycle right after a snapshot decides from what that snapshot holds; further
        # from it (snapshots sparser than cycles), the traffic between two snapshots is interpolated as on the grid
        held = self.schedule and t - int(h.times[i]) < cycle_minutes(self.config) * 60_000
        recorded = h.traffic_at(int(h.times[i]) if held else t)
        traffic = np.where(bs.present(i)[:, None], bs.traffic(recorded), 0.0)
        samples = np.full(bs.size, self.samples_per_cycle, np.int64)
        if new_snapshot:  # from the leader's own averages at the snapshot, where it holds them
            samples[self.averages.anchor(i, self.owner, h.owner[i])] = self.averages.samples(
                (t - int(h.times[i])) / 60_000, at_least=0)
        self.averages.sample(bs.present(i), traffic, samples)
        state = self.policies.state(live, t)
        load = self._load(i, traffic, live_idx)
        view = {"snapshot": i, "new_snapshot": new_snapshot, "bundle_index": self.bundle_index}
        config = self.config if self.config_at is None else self.config_at(t)
        if new_snapshot and i in self.leader_restarts:  # its strategies start afresh, as the recorded leader's did
            self.balancer.restart(config)
        if new_snapshot:
            gone = self._restarting | {b for k, b in enumerate(h.brokers) if not h.live[i][k]}
            self.balancer.brokers_restarted(gone)
            for b in gone:  # a new process writes its report afresh
                self._written.pop(h.brokers.index(b), None)
        homeless = ~held_by(self.owner, live_idx, len(h.brokers))
        if new_snapshot and self._restarting:  # a restarted broker comes back empty
            homeless |= held_by(self.owner, [h.brokers.index(b) for b in self._restarting], len(h.brokers))
        orphans = np.flatnonzero(bs.present(i) & homeless)
        if len(orphans):  # place them before shedding, as lookups would; a restarting broker is down meanwhile
            self.balancer.placement.new_cycle()
            up = self.policies.state([b for b in live if b not in self._restarting], t) if new_snapshot else state
            for n in orphans.tolist():
                dest = self.balancer.place(bs.names[n], load, config, up, view)
                if dest is not None:
                    moves.append(self._move(i, n, self.owner[n], h.brokers.index(dest), "placed", "orphan"))
            load = self._load(i, traffic, live_idx)
        present = bs.present(i)
        owned = np.bincount(self.owner[present & (self.owner >= 0)], minlength=len(h.brokers))[live_idx]
        unowned = int((present & ~held_by(self.owner, live_idx, len(h.brokers))).sum())
        view["owners"] = Owners(bs.names, h.brokers, self.owner, present & (self.owner >= 0))
        wmax, served = self.weighted_max(self._usage_live, self._limits_live), self._served  # what shedding saw
        over = config.get_int("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        pinned = (pinned_by_one_topic(self.owner, present, traffic, bs.one_topic(i), live_idx, len(h.brokers))
                  & (wmax > over))
        for u in self.balancer.unloads(load, config, t, state, view):
            n = view["bundle_index"][u.bundle]
            if h.brokers[self.owner[n]] != u.broker:
                continue  # moved already this cycle
            try:
                dest = u.destination or self.balancer.placement.select(u.bundle, load, config, state)
            except LookupFailed:  # a broker without load data picked: Pulsar's lookup fails, nothing moves
                break
            if dest is None or dest == u.broker or dest not in live:
                continue
            moves.append(self._move(i, n, self.owner[n], h.brokers.index(dest), u.reason, "unload", u.swap))
        shed = any(m["kind"] == "unload" for m in moves)
        splits: list[dict] = []
        for _ in range(self._split_checks(t) if self.splits is not None and not self.anchored else 0):
            done = self._split(i, recorded, traffic, None if shed or splits else load, live_idx, state, view, moves)
            if done:  # the children are new bundles: their traffic (and the leader's LoadData, rebuilt when None)
                traffic = np.where(bs.present(i)[:, None], bs.traffic(recorded), 0.0)
            splits += done
        self.balancer.bundles_changed({b for m in moves for b in (m["source"], m["destination"]) if b is not None}
                                      | {s["broker"] for s in splits}, t)
        for b in np.flatnonzero(self._beyond).tolist():  # as shedding read it
            self.extrapolated[h.brokers[b]] = self.extrapolated.get(h.brokers[b], 0) + 1
        rate_recorded = float(recorded[h.present[i]][:, :2].sum())
        between, self._between = self._between, ([], [])  # made at arrivals since the last cycle
        return Cycle(t, i, live, wmax, owned, rate_recorded, served, unowned, between[0] + moves, between[1] + splits,
                     pinned)

    def _split_checks(self, t: int) -> int:
        """Split checks due by ``t``: the modular leader's one a cycle (``ModularLoadManagerImpl.updateAll``), the
        extensible brokers' ``SplitScheduler`` one every ``loadBalancerSplitIntervalMinutes`` from the first cycle on,
        none or several a cycle (at 0 or less it cannot start: one a cycle, and ``run.split_notes`` says so)."""
        every = self.splits.config.get_int("loadBalancerSplitIntervalMinutes")
        if not self.splits.extensible or every <= 0:
            return 1
        self._next_split = t if self._next_split is None else self._next_split
        due = 0
        while self._next_split <= t:
            due += 1
            self._next_split += every * 60_000
        return due

    def _split(self, i, recorded, traffic, load, live_idx, state, view, moves) -> list[dict]:
        """The cycle's splits, after shedding (``splitting``): children start on the parent's owner and are unloaded
        and placed when ``loadBalancerAutoUnloadSplitBundlesEnabled`` asks for it (modular load manager); the next
        cycle samples them before any shedding reads them. ``load``: None when shedding moved bundles since."""
        h, bs = self.history, self.bundles
        mask = self.splits.candidates(bs, i, traffic, self.averages.avg[LONG_SAMPLES])
        if mask is None:
            return []
        if load is None:
            load = self._load(i, traffic, live_idx)
        done, children = [], []
        for c in self.splits.choose(bs, i, load, self.owner, h.brokers, mask):
            parent, owner = bs.names[c.bundle], self.owner[c.bundle]
            kids = bs.split(c.bundle, c.boundaries, i)
            if not kids:
                continue
            self._grow(bs.size)
            self.averages.start_afresh(kids)  # Pulsar drops the parent's BundleData; the children start afresh
            self.owner[kids], self.owner[c.bundle] = owner, -1
            children += kids
            done.append({"bundle": parent, "broker": c.broker, "children": [bs.names[k] for k in kids],
                         "reason": c.reason})
        if done and self.splits.unload_children:
            traffic = np.where(bs.present(i)[:, None], bs.traffic(recorded), 0.0)
            load = self._load(i, traffic, live_idx)
            self.balancer.placement.new_cycle()
            for k in children:
                dest = self.balancer.place(bs.names[k], load, self.config, state, view)
                if dest is not None:
                    moves.append(self._move(i, k, self.owner[k], h.brokers.index(dest), "split", "split"))
        return done

    def _grow(self, size: int) -> None:
        extra = size - len(self.owner)
        if extra > 0:
            self.owner = np.append(self.owner, np.full(extra, -1, np.int64))
            self.averages.grow(size)

    def _enter_snapshot(self, i: int) -> None:
        h, bs = self.history, self.bundles
        if self.snapshot < 0:
            self.owner = np.where(h.present[i], h.owner[i], -1)  # only recorded bundles yet
        else:
            prev = self.snapshot
            before = bs.present(prev)
            bs.enter_snapshot(i)
            recorded_owner = np.append(h.owner[i], np.full(bs.size - len(h.bundles), -1))
            inherit_owners(bs.names, before, bs.present(i), self.owner, recorded_owner)
            restarted = h.live[prev] & h.live[i] & (h.start[prev] != h.start[i])
            self._restarting = {h.brokers[b] for b in np.flatnonzero(restarted)}
            self.averages.start_afresh(bs.present(i) & ~before)
            for n, b in h.imposed.get(i, ()):  # a move the load manager did not make happened in the history too
                if bs.present(i)[n] and h.live[i][b] and (n, b) not in self._arrived:
                    self.owner[n] = b
                    self.averages.forget(n)  # moved: its averages start again from its next sample
        self._arrived = set()  # the arrivals taken from here on are the next snapshot's imposed moves
        self.snapshot = i

    def _move(self, i: int, n: int, src: int, dst: int, reason: str, kind: str, swap: bool = False) -> dict:
        h = self.history
        self.owner[n] = dst
        self.averages.forget(n)
        return {"bundle": self.bundles.names[n], "source": h.brokers[src] if src >= 0 else None,
                "destination": h.brokers[dst], "reason": reason, "kind": kind,
                "clients": int(self.bundles.clients(i)[n].sum()), "swap": swap}

    def _broker_traffic(self, traffic: np.ndarray) -> np.ndarray:
        """(B, 4) traffic per broker (bundles without a live owner count nowhere)."""
        mask = self.owner >= 0
        B = len(self.history.brokers)
        return np.stack([np.bincount(self.owner[mask], weights=traffic[mask, f], minlength=B) for f in range(4)], axis=1)

    def weighted_max(self, usage: np.ndarray, limits: np.ndarray) -> np.ndarray:
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
        self._beyond = self.model.extrapolated(feats) & h.live[i]
        if self._residual is not None:
            usage = np.clip(usage + self._residual[i], 0.0, np.where(h.limits[i] > 0, h.limits[i], np.inf))
        if self.anchored and self._at_snapshot:  # ownership is the recorded one: so is the load
            usage[live_idx] = np.nan_to_num(h.usage[i][live_idx])
        self._usage_live, self._limits_live = usage[live_idx], h.limits[i][live_idx]
        self._served = float(feats[live_idx, 0].sum())
        bs = self.bundles
        if self.reporter:
            owned = np.bincount(self.owner[bs.present(i) & (self.owner >= 0)], minlength=len(h.brokers))
            usage, bt = reported_brokers(self._written, usage, bt, owned, live_idx, self.weighted_max(usage, h.limits[i]),
                                         self._now, self.config)
        return leader_load(h, i, live_idx, self.owner, traffic, bt, usage,
                           (self.averages.avg[SHORT_SAMPLES], self.averages.avg[LONG_SAMPLES]),
                           (self.averages.n[SHORT_SAMPLES], self.averages.n[LONG_SAMPLES]), bs.orders,
                           (bs.present(i), bs.clients(i), bs.topics(i)))

