"""Placement strategies of the modular load manager (and the extensible LeastResourceUsageWithWeight).

Each ``select(candidates, load, config, bundle)`` is ``ModularLoadManagerStrategy.selectBroker``: ``candidates``
in the order the caller's set iterates. Pulsar's pick among equally good brokers is ``ThreadLocalRandom``; here
it is an explicit ``random.Random`` so that replays repeat, and ``best(...)`` gives the set Pulsar picks from.
``preallocated`` (broker → {bundle: BundleData}) is what the leader has assigned but not yet seen reported
(``BrokerData.preallocatedBundleData``); the placement pipeline (``selection.py``) fills it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import LoadData, weights_of
from lb_pipeline.algorithms.shedding.frame import DEFAULT_RATE
from lb_pipeline.model.config import PulsarConfig


def long_term_rate(load: LoadData, broker: str) -> float:
    """``TimeAverageBrokerData`` long-term msgRateIn + msgRateOut. A report that carries ``timeAverageData`` is
    used as is; otherwise the leader's ``reset``: the sum over the broker's ``lastStats`` bundles of their
    long-term averages (the default 50 msg/s each way for a bundle it has no data of)."""
    report = load.brokers[broker]
    tad = report.get("timeAverageData")
    if tad is not None:
        return float(tad.get("longTermMsgRateIn", 0.0)) + float(tad.get("longTermMsgRateOut", 0.0))
    rate_in = rate_out = 0.0
    for bundle in (report.get("lastStats") or {}):
        data = load.bundle_data.get(bundle)
        if data is None:
            rate_in, rate_out = rate_in + DEFAULT_RATE, rate_out + DEFAULT_RATE
            continue
        lt = data.get("longTermData") or {}
        rate_in += float(lt.get("msgRateIn", 0.0))
        rate_out += float(lt.get("msgRateOut", 0.0))
    return rate_in + rate_out


def _preallocated(load: LoadData, broker: str, preallocated: dict | None) -> dict:
    reported, held = load.brokers[broker].get("preallocatedBundleData"), (preallocated or {}).get(broker)
    if not held:  # mostly nothing is preallocated: no merged copy
        return reported or {}
    return {**(reported or {}), **held}


@dataclass
class LeastLongTermMessageRate:
    """``impl/LeastLongTermMessageRate``: lowest long-term message rate (plus what is preallocated to the
    broker); brokers over the overload threshold score infinity (if all do, all are candidates)."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    name: str = "LeastLongTermMessageRate"
    reads_broker_data = True  # a candidate without load data: Pulsar's getScore throws (NullPointerException)

    def scorer(self, load: LoadData, config: PulsarConfig, preallocated: dict | None = None):
        """broker → its score, what does not depend on the broker read once (placement scores every candidate of
        every bundle it places)."""
        frame = load.frame(config)
        thr = config.get_int("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
        weights = weights_of(config)
        cache = frame.cache.setdefault(("lltmr", thr, weights), {})

        def score(broker: str) -> float:
            if broker not in cache:
                usage = frame.weighted_max(weights)[frame.index[broker]]
                cache[broker] = None if usage > thr else long_term_rate(load, broker)
            base = cache[broker]
            if base is None:
                return float("inf")
            total = 0.0
            for data in _preallocated(load, broker, preallocated).values():
                lt = (data or {}).get("longTermData") or {}
                total += float(lt.get("msgRateIn", 0.0)) + float(lt.get("msgRateOut", 0.0))
            return total + base
        return score

    def best(self, candidates: list[str], load: LoadData, config: PulsarConfig, preallocated: dict | None = None) -> list[str]:
        best, m = [], float("inf")
        score = self.scorer(load, config, preallocated)
        for b in candidates:
            s = score(b)
            if s < m:
                best, m = [b], s
            elif s == m:
                best.append(b)
        return best or list(candidates)

    def select(self, candidates: list[str], load: LoadData, config: PulsarConfig, bundle: str | None = None,
               preallocated: dict | None = None) -> str | None:
        best = self.best(candidates, load, config, preallocated)
        return best[self.rng.randrange(len(best))] if best else None


@dataclass
class LeastResourceUsageWithWeight:
    """``impl/LeastResourceUsageWithWeight`` (modular): EMA of the weighted max usage advanced once per call for
    every candidate (a broker without bundles or message rate starts afresh); brokers at least
    ``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` below the candidates' average."""

    history: dict[str, float] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    name: str = "LeastResourceUsageWithWeight"
    reads_broker_data = True  # a candidate without load data: Pulsar's update of its EMA throws

    def on_active_brokers_change(self, active) -> None:
        keep = set(active)
        self.history = {b: u for b, u in self.history.items() if b in keep}

    def best(self, candidates: list[str], load: LoadData, config: PulsarConfig, preallocated: dict | None = None) -> list[str]:
        if not candidates:
            return []
        frame = load.frame(config)
        usage = frame.weighted_max(weights_of(config))
        p = config.get_float("loadBalancerHistoryResourcePercentage")
        total = 0.0
        for b in candidates:
            i = frame.index[b]
            h = self.history.get(b)
            if frame.bundle_count[i] == 0 or (frame.rate_in[i] == 0 and frame.rate_out[i] == 0):
                h = None  # a restarted broker starts a fresh history
            r = float(usage[i])
            self.history[b] = r if h is None else h * p + (1.0 - p) * r
            total += self.history[b]
        avg = total / len(candidates)
        d = config.get_int("loadBalancerAverageResourceUsageDifferenceThresholdPercentage") / 100.0
        best = [b for b in candidates if self.history.get(b, 1.0) + d <= avg]
        return best or list(candidates)

    def select(self, candidates, load, config, bundle=None, preallocated=None):
        best = self.best(candidates, load, config)
        return best[self.rng.randrange(len(best))] if best else None


@dataclass
class ExtensibleLeastResourceUsageWithWeight:
    """``extensions/strategy/LeastResourceUsageWithWeight``: ``weightedMaxEMA`` from ``BrokerLoadData``."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    name: str = "LeastResourceUsageWithWeight (extensible)"

    def best(self, candidates: list[str], ema: dict[str, float], config: PulsarConfig) -> list[str]:
        known = [b for b in candidates if b in ema]
        best = []
        if known:
            total = 0.0
            for b in known:  # summed in candidate order, as Java adds
                total += ema[b]
            avg = total / len(known)
            d = config.get_int("loadBalancerAverageResourceUsageDifferenceThresholdPercentage") / 100.0
            best = [b for b in known if ema[b] + d <= avg]
        return best or list(candidates)

    def select(self, candidates, ema, config):
        best = self.best(candidates, ema, config)
        return self.rng.choice(best) if best else None


@dataclass
class RoundRobinBrokerSelector:
    """``impl/RoundRobinBrokerSelector``: a counter over a cached copy of the candidate list."""

    count: int = 0
    cache: list[str] = field(default_factory=list)
    name: str = "RoundRobinBrokerSelector"

    def select(self, candidates, load=None, config=None, bundle=None, preallocated=None):
        if not candidates:
            return None
        idx = self.count % len(candidates)
        self.count = 0 if self.count == 2**31 - 1 else self.count + 1
        if len(self.cache) < idx + 1 or len(self.cache) != len(candidates) or self.cache[idx] not in candidates:
            self.cache = list(candidates)
        return self.cache[idx]
