"""``impl/UniformLoadShedder``: compare the most and least loaded brokers by message rate (percent difference)
and by throughput (ratio); the broker with the most traffic sheds ``maxUnloadPercentage`` of the gap.

Code details reproduced: a zero minimum is replaced by 1.0 (which then enters the budget), strict ``>``
comparisons (a ratio of exactly 4 does not trigger), rate mode wins when both trigger, Java ``(int)``
truncation of the budget and of each bundle's amount, floors ``minUnloadMessage`` / ``minUnloadMessageThroughput``
(bytes/s), ``maxUnloadBundleNumPerShedding``; a bundle bigger than the remaining budget is skipped, smaller ones
further down are still taken; zero-traffic bundles fit and are selected.
"""

from __future__ import annotations

from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, Unload
from lb_pipeline.model.config import PulsarConfig

NAME = "UniformLoadShedder"
_INT_MAX, _INT_MIN = 2**31 - 1, -(2**31)


def java_int(x: float) -> int:
    """Java's ``(int)`` cast of a double: toward zero, saturating."""
    if x != x:
        return 0
    return max(_INT_MIN, min(_INT_MAX, int(x)))


class UniformLoadShedder:
    name = NAME

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        max_r = max_t = -1.0
        min_r = min_t = 2147483647.0
        over_r = over_t = None
        for broker in load.brokers:
            r, t = load.rate(broker), load.throughput(broker)
            if r > max_r:
                over_r, max_r = broker, r
            if t > max_t:
                over_t, max_t = broker, t
            min_r, min_t = min(min_r, r), min(min_t, t)
        if over_r is None:
            return out
        if abs(min_r) <= 1e-6:
            min_r = 1.0
        if abs(min_t) <= 1e-6:
            min_t = 1.0
        conf_rate = config.get_float("loadBalancerMsgRateDifferenceShedderThreshold")
        conf_tput = config.get_float("loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold")
        rate_diff = (max_r - min_r) * 100 / min_r
        tput_ratio = max_t / min_t
        rate_hit = conf_rate > 0 and rate_diff > conf_rate
        tput_hit = conf_tput > 0 and tput_ratio > conf_tput
        if not (rate_hit or tput_hit):
            return out
        pct = config.get_float("maxUnloadPercentage")
        if rate_hit:
            src, budget, floor = over_r, java_int((max_r - min_r) * pct), config.get_float("minUnloadMessage")
            reason, metric, value, threshold, unit, idx = "MsgRateDifference", "msgRateDifferencePercent", rate_diff, conf_rate, "msg/s", 0
        else:
            src, budget, floor = over_t, java_int((max_t - min_t) * pct), config.get_float("minUnloadMessageThroughput")
            reason, metric, value, threshold, unit, idx = "ThroughputRatio", "msgThroughputRatio", tput_ratio, conf_tput, "bytes/s", 1
        if len(load.bundles_of(src)) <= 1:
            out.skips.append(Skip(src, None, "most loaded broker owns a single bundle"))
            return out
        if budget < floor:
            out.skips.append(Skip(src, None, f"amount {budget} {unit} is below the minimum {floor:g} {unit}"))
            return out
        local = set(load.bundles_of(src))
        items = [(name, LoadData.short_term(bd)[idx]) for name, bd in load.bundle_data_for_shedding().items()
                 if name in local and name not in load.recently_unloaded]
        items.sort(key=lambda x: -x[1])
        cap = config.get_int("maxUnloadBundleNumPerShedding")
        amount, selected = budget, 0
        for name, v in items:
            if cap != -1 and selected >= cap:
                continue
            if v <= budget:
                out.unloads.append(Unload(NAME, src, name, reason, metric, value, threshold, amount, unit, v))
                selected += 1
                budget = budget + java_int(-v)
        return out
