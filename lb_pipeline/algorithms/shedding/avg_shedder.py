"""``impl/AvgShedder`` (shedding and placement; the default strategy of the newest Pulsar): brokers are scored
by weighted max usage ×100, paired from both ends of the ranking; a pair whose score gap stays at or above the
low threshold for ``HitCountLow`` cycles (or the high threshold for ``HitCountHigh`` cycles) moves
``maxUnloadPercentage`` of its message-rate gap (or, failing the ``minUnloadMessage`` floor, of its throughput
gap) from the high broker to the low one, which is planned as the destination.

Docs vs code: with the default ``minUnloadMessage`` = 1000 msg/s the docs' example (1000 vs 500 msg/s, 250 to
move) moves nothing; hit counters belong to brokers and reset even when nothing can be moved; float32 percents
make a (30, 70) gap 39.9999981, below the high threshold 40.

Release differences (``Release``): 4.0.7 sorts scores with ``(int) (a - b)`` (scores under one point apart tie,
Java's TimSort decides, and may throw); 4.0.8 sorts exactly. 4.0.x plans destinations in a map keyed by the
``BundleData`` value, never cleared, with a random broker when a bundle has no plan (or its planned broker is not a
candidate); PR #26246 keys plans by bundle name for one unload attempt.
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, Unload, ranked, weights_of
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.javahash import JavaHashMap
from lb_pipeline.model.javasort import ComparisonContractViolation, java_int_diff, timsort

NAME = "AvgShedder"


def plan_key(bundle_data: dict | None):
    """``BundleData.equals``/``hashCode`` as a Python key: topics and both averages' fields (``Double.compare``
    semantics through the values' ``repr``)."""
    data = bundle_data or {}

    def avg(name):
        t = data.get(name)
        if t is None:
            return None
        return (int(t.get("maxSamples", 0) or 0), int(t.get("numSamples", 0) or 0),
                *(repr(float(t.get(k, 0.0))) for k in ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")))

    return int(data.get("topics", 0) or 0), avg("shortTermData"), avg("longTermData")


@dataclass
class AvgShedder:
    hit_high: dict[str, int] = field(default_factory=dict)
    hit_low: dict[str, int] = field(default_factory=dict)
    plan: dict = field(default_factory=dict)  # BundleData value (4.0.x) or bundle name (#26246) → destination
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    score_map: JavaHashMap = field(default_factory=JavaHashMap)  # brokerScoreMap keeps its capacity across cycles
    name: str = NAME

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        release = config.release
        if release.avg_plans == "attempt":
            self.plan.clear()
        frame = load.frame(config)
        low = float(config.get_int("loadBalancerAvgShedderLowThreshold"))
        high = float(config.get_int("loadBalancerAvgShedderHighThreshold"))
        hc_low = config.get_int("loadBalancerAvgShedderHitCountLowThreshold")
        hc_high = config.get_int("loadBalancerAvgShedderHitCountHighThreshold")
        score = dict(zip(frame.brokers, (frame.weighted_max(weights_of(config)) * 100.0).tolist()))
        entries = self.score_map.order(frame.brokers)
        if release.avg_int_comparator:
            try:
                order = timsort(entries, lambda a, b: java_int_diff(score[a], score[b]))
            except ComparisonContractViolation as e:
                out.notes.append(f"Pulsar {release.follows} fails this cycle: IllegalArgumentException: {e}")
                return out
        else:
            order = sorted(entries, key=lambda b: _double_compare_key(score[b]))
        pairs = []
        i, j = 0, len(order) - 1
        while i <= j:
            lo, hi = order[i], order[j]
            d = score[hi] - score[lo]
            if d < low:
                for m in (self.hit_high, self.hit_low):
                    m.pop(hi, None)
                    m.pop(lo, None)
            else:
                pairs.append((lo, hi, d))
                for b in (lo, hi):  # twice for the middle broker of an odd list, as in Pulsar
                    self.hit_low[b] = self.hit_low.get(b, 0) + 1
                if d < high:
                    self.hit_high.pop(hi, None)
                    self.hit_high.pop(lo, None)
                else:
                    for b in (lo, hi):
                        self.hit_high[b] = self.hit_high.get(b, 0) + 1
            i, j = i + 1, j - 1
        if not pairs:
            self.hit_high.clear()
            self.hit_low.clear()
            return out
        index = {b: k for k, b in enumerate(frame.brokers)}
        recently = set(load.recently_unloaded)
        for lo, hi, d in pairs:
            hits = (self.hit_high.get(lo, 0) >= hc_high or self.hit_high.get(hi, 0) >= hc_high
                    or self.hit_low.get(lo, 0) >= hc_low or self.hit_low.get(hi, 0) >= hc_low)
            if not hits:
                out.skips.append(Skip(hi, None, f"score gap {d:.1f} with {lo}: hit counts "
                                                f"high={self.hit_high.get(hi, 0)}/{hc_high} low={self.hit_low.get(hi, 0)}/{hc_low}"))
                continue
            for m in (self.hit_high, self.hit_low):
                m.pop(lo, None)
                m.pop(hi, None)
            self._select_for_pair(load, frame, config, index[lo], index[hi], d, high if d >= high else low, recently, out)
        return out

    def _select_for_pair(self, load, frame, config, lo, hi, gap, threshold, recently, out) -> None:
        pct = config.get_float("maxUnloadPercentage")
        rate, tput = frame.rate, frame.throughput
        need_msg = (float(rate[hi]) - float(rate[lo])) * pct
        need_byte = (float(tput[hi]) - float(tput[lo])) * pct
        lo_name, hi_name = frame.brokers[lo], frame.brokers[hi]
        if need_msg > config.get_int("minUnloadMessage"):
            values, remaining, unit = frame.short_rate, need_msg, "msg/s"
        elif need_byte > config.get_int("minUnloadMessageThroughput"):
            values, remaining, unit = frame.short_tput, need_byte, "bytes/s"
        else:
            out.skips.append(Skip(hi_name, None, f"pair with {lo_name} consumed: {need_msg:.0f} msg/s and "
                                                 f"{need_byte:.0f} bytes/s to move are below minUnloadMessage / minUnloadMessageThroughput"))
            return
        amount = remaining
        pos, v = ranked(values, frame.candidates(hi, recently))
        by_value = config.release.avg_plans == "value"
        for p, x in zip(pos.tolist(), v.tolist()):
            if 0 < x <= remaining:
                bundle = frame.bundles[p]
                self.plan[plan_key(load.bundle_data.get(bundle)) if by_value else bundle] = lo_name
                out.unloads.append(Unload(NAME, hi_name, bundle, "ScoreGap", "scoreGap", gap, threshold, amount, unit, x,
                                          destination=lo_name))
                remaining -= x

    def select_broker(self, candidates: list[str], bundle: str, load: LoadData, config: PulsarConfig) -> str | None:
        """AvgShedder as the placement strategy (``selectBroker``): the planned broker if it is a candidate, else a
        random candidate of the sorted list (``getExpectedBroker``), which 4.0.x remembers as the bundle's plan."""
        by_value = config.release.avg_plans == "value"
        key = plan_key(load.bundle_data.get(bundle)) if by_value else bundle
        target = self.plan.get(key)
        if target is not None and target in candidates:
            return target
        if not candidates:
            return None  # Pulsar would divide by zero here
        ranked_candidates = sorted(candidates)
        # |crc32(str(new Random().nextInt()))| mod n; the draw is seeded here so that replays repeat
        pick = ranked_candidates[zlib.crc32(str(self.rng.randint(-(2**31), 2**31 - 1)).encode()) % len(ranked_candidates)]
        if by_value:
            self.plan[key] = pick
        return pick


def _double_compare_key(x: float) -> tuple:
    """Sort key of ``Double.compare``: -0.0 before 0.0, NaN after everything."""
    return (x != x, x, math.copysign(1.0, x) if x == 0 else 0.0)
