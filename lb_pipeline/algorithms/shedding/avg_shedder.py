"""``impl/AvgShedder`` (shedding and placement; the default strategy of the newest Pulsar): brokers are scored
by weighted max usage ×100, paired from both ends of the ranking; a pair whose score gap stays at or above the
low threshold for ``HitCountLow`` cycles (or the high threshold for ``HitCountHigh`` cycles) moves
``maxUnloadPercentage`` of its message-rate gap (or, failing the ``minUnloadMessage`` floor, of its throughput
gap) from the high broker to the low one, which is planned as the destination.

Docs vs code: with the default ``minUnloadMessage`` = 1000 msg/s the docs' example (1000 vs 500 msg/s, 250 to
move) moves nothing; hit counters belong to brokers and reset even when nothing can be moved; float32 percents
make a (30, 70) gap 39.9999981, below the high threshold 40.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, Unload, weighted_max, weights_of
from lb_pipeline.model.config import PulsarConfig

NAME = "AvgShedder"


@dataclass
class AvgShedder:
    hit_high: dict[str, int] = field(default_factory=dict)
    hit_low: dict[str, int] = field(default_factory=dict)
    plan: dict[str, str] = field(default_factory=dict)  # bundle → planned destination (PR #26246: per attempt)
    name: str = NAME

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        self.plan.clear()
        low = config.get_float("loadBalancerAvgShedderLowThreshold")
        high = config.get_float("loadBalancerAvgShedderHighThreshold")
        hc_low = config.get_int("loadBalancerAvgShedderHitCountLowThreshold")
        hc_high = config.get_int("loadBalancerAvgShedderHitCountHighThreshold")
        weights = weights_of(config)
        score = {b: weighted_max(load, b, weights) * 100 for b in load.brokers}
        order = sorted(score, key=lambda b: score[b])
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
                for b in {lo, hi}:
                    self.hit_low[b] = self.hit_low.get(b, 0) + 1
                if d < high:
                    self.hit_high.pop(hi, None)
                    self.hit_high.pop(lo, None)
                else:
                    for b in {lo, hi}:
                        self.hit_high[b] = self.hit_high.get(b, 0) + 1
            i, j = i + 1, j - 1
        if not pairs:
            self.hit_high.clear()
            self.hit_low.clear()
            return out
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
            self._select_for_pair(load, config, lo, hi, d, high if d >= high else low, out)
        return out

    def _select_for_pair(self, load, config, lo, hi, gap, threshold, out) -> None:
        pct = config.get_float("maxUnloadPercentage")
        need_msg = (load.rate(hi) - load.rate(lo)) * pct
        need_byte = (load.throughput(hi) - load.throughput(lo)) * pct
        if need_msg > config.get_float("minUnloadMessage"):
            by_rate, remaining, unit = True, need_msg, "msg/s"
        elif need_byte > config.get_float("minUnloadMessageThroughput"):
            by_rate, remaining, unit = False, need_byte, "bytes/s"
        else:
            out.skips.append(Skip(hi, None, f"pair with {lo} consumed: {need_msg:.0f} msg/s and {need_byte:.0f} bytes/s "
                                            "to move are below minUnloadMessage / minUnloadMessageThroughput"))
            return
        amount = remaining
        local = set(load.bundles_of(hi))
        items = [(name, LoadData.short_term(bd)[0 if by_rate else 1]) for name, bd in load.bundle_data_for_shedding().items()
                 if name in local and name not in load.recently_unloaded]
        items.sort(key=lambda x: -x[1])
        for name, v in items:
            if 0 < v <= remaining:
                self.plan[name] = lo
                out.unloads.append(Unload(NAME, hi, name, "ScoreGap", "scoreGap", gap, threshold, amount, unit, v,
                                          destination=lo))
                remaining -= v

    def select_broker_for_bundle(self, candidates: list[str], bundle: str) -> str | None:
        """Placement bound to the plan: the planned broker if it is still a candidate."""
        target = self.plan.get(bundle)
        return target if target in candidates else None
