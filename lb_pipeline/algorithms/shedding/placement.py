"""Placement strategies of the modular load manager (and the extensible LeastResourceUsageWithWeight).

Random tie-breaks are drawn from an explicit ``random.Random`` so that replays are reproducible; Pulsar's own
choice among equally good brokers is random, so compare candidate sets, not single picks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import LoadData, weighted_max, weights_of
from lb_pipeline.model.config import PulsarConfig


def long_term_rate(load: LoadData, broker: str) -> float:
    """``TimeAverageBrokerData`` long-term msgRateIn + msgRateOut: the sum over the broker's lastStats bundles."""
    total = 0.0
    for bundle in (load.local(broker).get("lastStats") or {}):
        lt = (load.bundle_data.get(bundle) or {}).get("longTermData") or {}
        total += float(lt.get("msgRateIn", 50.0)) + float(lt.get("msgRateOut", 50.0))
    return total


@dataclass
class LeastLongTermMessageRate:
    """``impl/LeastLongTermMessageRate``: lowest long-term message rate; brokers over the overload threshold
    score infinity (if all do, all are candidates); uniform random among the best."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    name: str = "LeastLongTermMessageRate"
    _scores: tuple = (None, {})  # (the LoadData scored, broker → score): shedding places many bundles per cycle

    def best(self, candidates: list[str], load: LoadData, config: PulsarConfig) -> list[str]:
        if self._scores[0] is not load:
            thr = config.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0
            weights = weights_of(config)
            self._scores = (load, {b: float("inf") if weighted_max(load, b, weights) > thr else long_term_rate(load, b)
                                   for b in load.brokers})
        scores = self._scores[1]
        best, m = [], float("inf")
        for b in candidates:
            s = scores[b]
            if s < m:
                best, m = [b], s
            elif s == m:
                best.append(b)
        return best or list(candidates)

    def select(self, candidates: list[str], load: LoadData, config: PulsarConfig, bundle: str | None = None) -> str | None:
        best = self.best(candidates, load, config)
        return self.rng.choice(best) if best else None


@dataclass
class LeastResourceUsageWithWeight:
    """``impl/LeastResourceUsageWithWeight`` (modular): EMA of the weighted max usage advanced once per call;
    brokers at least ``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` below the average."""

    history: dict[str, float] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    name: str = "LeastResourceUsageWithWeight"

    def best(self, candidates: list[str], load: LoadData, config: PulsarConfig) -> list[str]:
        if not candidates:
            return []
        p = config.get_float("loadBalancerHistoryResourcePercentage")
        weights = weights_of(config)
        total = 0.0
        for b in candidates:
            h = self.history.get(b)
            if not load.bundles_of(b) or load.rate(b) == 0:  # a restarted broker starts a fresh history
                h = None
            r = weighted_max(load, b, weights)
            self.history[b] = r if h is None else h * p + (1 - p) * r
            total += self.history[b]
        avg = total / len(candidates)
        d = config.get_float("loadBalancerAverageResourceUsageDifferenceThresholdPercentage") / 100.0
        best = [b for b in candidates if self.history.get(b, 1.0) + d <= avg]
        return best or list(candidates)

    def select(self, candidates, load, config, bundle=None):
        best = self.best(candidates, load, config)
        return self.rng.choice(best) if best else None


@dataclass
class ExtensibleLeastResourceUsageWithWeight:
    """``extensions/strategy/LeastResourceUsageWithWeight``: ``weightedMaxEMA`` from ``BrokerLoadData``."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    name: str = "LeastResourceUsageWithWeight (extensible)"

    def best(self, candidates: list[str], ema: dict[str, float], config: PulsarConfig) -> list[str]:
        known = [b for b in candidates if b in ema]
        best = []
        if known:
            avg = sum(ema[b] for b in known) / len(known)
            d = config.get_float("loadBalancerAverageResourceUsageDifferenceThresholdPercentage") / 100.0
            best = [b for b in known if ema[b] + d <= avg]
        return best or list(candidates)

    def select(self, candidates, ema, config):
        best = self.best(candidates, ema, config)
        return self.rng.choice(best) if best else None


@dataclass
class RoundRobinBrokerSelector:
    count: int = 0
    cache: list[str] = field(default_factory=list)
    name: str = "RoundRobinBrokerSelector"

    def select(self, candidates, load=None, config=None, bundle=None):
        if not candidates:
            return None
        idx = self.count % len(candidates)
        self.count = 0 if self.count == 2**31 - 1 else self.count + 1
        if len(self.cache) < idx + 1 or len(self.cache) != len(candidates) or self.cache[idx] not in candidates:
            self.cache = list(candidates)
        return self.cache[idx]
