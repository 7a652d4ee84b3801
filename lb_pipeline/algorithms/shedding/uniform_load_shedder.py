"""``impl/UniformLoadShedder``: compare the most and least loaded brokers by message rate (percent difference)
and by throughput (ratio); the broker with the most traffic sheds ``maxUnloadPercentage`` of the gap.

Code details reproduced: a zero minimum is replaced by 1.0 (which then enters the budget), strict ``>``
comparisons (a ratio of exactly 4 does not trigger), rate mode wins when both trigger, Java ``(int)``
truncation of the budget and of each bundle's amount (``MutableInt``, 32-bit), floors ``minUnloadMessage`` /
``minUnloadMessageThroughput`` (bytes/s), ``maxUnloadBundleNumPerShedding``; a bundle bigger than the remaining
budget is skipped, smaller ones further down are still taken; zero-traffic bundles fit and are selected.
Release difference: 4.0.x keeps a bundle while ``value <= budget + 1000`` in both modes; master (PR #21906)
compares with the budget alone (``Release.uniform_fit_slack``).
"""

from __future__ import annotations

from lb_pipeline.algorithms.shedding.common import LoadData, SheddingResult, Skip, Unload, ranked
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.java_values import int_cast, java_int

NAME = "UniformLoadShedder"
class UniformLoadShedder:
    name = NAME

    def find_bundles_for_unloading(self, load: LoadData, config: PulsarConfig) -> SheddingResult:
        out = SheddingResult()
        frame = load.frame(config)
        max_r = max_t = -1.0
        min_r = min_t = 2147483647.0
        over_r = over_t = None
        for i, (r, t) in enumerate(zip(frame.rate.tolist(), frame.throughput.tolist())):  # strict, map order
            if r > max_r:
                over_r, max_r = i, r
            if t > max_t:
                over_t, max_t = i, t
            if r < min_r:
                min_r = r
            if t < min_t:
                min_t = t
        if -1e-6 <= min_r <= 1e-6:
            min_r = 1.0
        if -1e-6 <= min_t <= 1e-6:
            min_t = 1.0
        conf_rate = config.get_float("loadBalancerMsgRateDifferenceShedderThreshold")
        conf_tput = config.get_float("loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold")
        rate_diff = (max_r - min_r) * 100 / min_r  # min is never 0 after the substitution
        tput_ratio = max_t / min_t
        rate_hit = conf_rate > 0 and rate_diff > conf_rate
        tput_hit = conf_tput > 0 and tput_ratio > conf_tput
        if not (rate_hit or tput_hit):
            return out
        pct = config.get_float("maxUnloadPercentage")
        if rate_hit:
            src, budget, floor = over_r, int_cast((max_r - min_r) * pct), config.get_int("minUnloadMessage")
            values, reason, metric, value, threshold, unit = frame.short_rate, "MsgRateDifference", "msgRateDifferencePercent", rate_diff, conf_rate, "msg/s"
        else:
            src, budget, floor = over_t, int_cast((max_t - min_t) * pct), config.get_int("minUnloadMessageThroughput")
            values, reason, metric, value, threshold, unit = frame.short_tput, "ThroughputRatio", "msgThroughputRatio", tput_ratio, conf_tput, "bytes/s"
        if src is None:  # every broker below -1: Pulsar would fail on a null broker
            out.notes.append("no broker with traffic above -1: Pulsar's UniformLoadShedder would fail here")
            return out
        broker = frame.brokers[src]
        if frame.bundle_count[src] <= 1:
            out.skips.append(Skip(broker, None, "most loaded broker owns a single bundle"))
            return out
        if budget < floor:
            out.skips.append(Skip(broker, None, f"amount {budget} {unit} is below the minimum {floor} {unit}"))
            return out
        pos, v = ranked(values, frame.candidates(src, set(load.recently_unloaded)))
        cap = config.get_int("maxUnloadBundleNumPerShedding")
        slack = config.release.uniform_fit_slack
        amount, selected, limit = budget, 0, java_int(budget + slack)
        for p, x in zip(pos.tolist(), v.tolist()):
            if cap != -1 and selected >= cap:
                break  # Pulsar skips every remaining bundle
            if x <= limit:
                out.unloads.append(Unload(NAME, broker, frame.bundles[p], reason, metric, value, threshold, amount, unit, x))
                selected += 1
                budget = java_int(budget + int_cast(-x))  # MutableInt.add(Number): the amount truncated to int
                limit = java_int(budget + slack)
        return out

