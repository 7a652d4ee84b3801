"""``flow_or_qps_equally_divide`` (``FlowOrQpsEquallyDivideBundleSplitAlgorithm``): walk the topics in hash
order and cut each time the running msg rate or throughput would exceed the bundle maximum.

Docs vs code (the docs' three cases): the code's cut is ``a + (b - a) // 2 + 1`` (the docs drop the ``+1`` and
average "decimal-looking" hex digits: 0x19500000 where the code gives 0x1c800001); the bandwidth limit is in MiB
(×1048576), not MB; the bundle is split only when its total exceeds the maximum by
``flowOrQpsDifferenceThresholdPercentage`` (10 %). Idle topics (rate and throughput both 0) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable

from lb_pipeline.algorithms.splits.common import MIB, SplitResult, TopicLoad
from lb_pipeline.model.bundles import Bundle

NAME = "flow_or_qps_equally_divide"


def flow_or_qps_equally_divide(bundle: Bundle, topics: Iterable[TopicLoad], max_msg_rate: float = 30000,
                               max_bandwidth_mbytes: float = 100, difference_threshold_pct: float = 10) -> SplitResult:
    topics = list(topics)
    max_bytes = max_bandwidth_mbytes * MIB
    diff = difference_threshold_pct / 100.0
    if len(topics) <= 1:
        return SplitResult(NAME, bundle, None, f"{len(topics)} topic(s): at least 2 are needed")
    info: dict[int, tuple[float, float]] = {}
    order: list[int] = []
    total_rate = total_bytes = 0.0
    for t in topics:  # in list order; a later topic with the same hash overwrites the earlier one's stats
        if t.msg_rate <= 0 and t.throughput <= 0:
            continue
        order.append(t.hash)
        info[t.hash] = (t.msg_rate, t.throughput)
        total_rate += t.msg_rate
        total_bytes += t.throughput
    if len(info) < 2:
        return SplitResult(NAME, bundle, None, f"{len(info)} topic(s) with traffic: at least 2 are needed")
    if total_rate < max_msg_rate * (1 + diff) and total_bytes < max_bytes * (1 + diff):
        return SplitResult(NAME, bundle, None,
                           f"total {total_rate:.0f} msg/s and {total_bytes / MIB:.1f} MiB/s are within "
                           f"{difference_threshold_pct:g}% of the limits ({max_msg_rate:g} msg/s, {max_bandwidth_mbytes:g} MiB/s)")
    order.sort()
    run_rate, run_bytes = info[order[0]]
    cuts: list[int] = []
    for prev, cur in zip(order, order[1:]):
        rate, nbytes = info[cur]
        if run_rate + rate > max_msg_rate or run_bytes + nbytes > max_bytes:
            cuts.append(prev + (cur - prev) // 2 + 1)
            run_rate, run_bytes = rate, nbytes
        else:
            run_rate += rate
            run_bytes += nbytes
    if not cuts:
        return SplitResult(NAME, bundle, None, "no cut needed between consecutive topics")
    return SplitResult(NAME, bundle, tuple(cuts), f"{len(cuts)} cut(s) keeping each part under the limits")
