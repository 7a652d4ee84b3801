"""``topic_count_equally_divide`` (``TopicCountEquallyDivideBundleSplitAlgorithm``): cut between the two middle
topic hashes, at ``a + (b - a) // 2``.

Docs vs code: the docs' 6-topic example (hashes 0x10…, 0x20…, 0x35…, 0x65…, 0x70…, 0x75000000) says the
boundary is 0x50000000; the code gives 0x35000000 + (0x65000000 - 0x35000000) // 2 = 0x4d000000 (also 3/3).
We reproduce the code.
"""

from __future__ import annotations

from collections.abc import Iterable

from lb_pipeline.algorithms.splits.common import SplitResult, TopicLoad, hashes
from lb_pipeline.model.bundles import Bundle

NAME = "topic_count_equally_divide"


def topic_count_equally_divide(bundle: Bundle, topics: Iterable[TopicLoad | int]) -> SplitResult:
    h = sorted(hashes(topics))  # duplicates kept, as Pulsar does
    n = len(h)
    if n <= 1:
        return SplitResult(NAME, bundle, None, f"{n} topic(s): at least 2 are needed")
    start, end = h[max(n // 2 - 1, 0)], h[n // 2]
    boundary = start + (end - start) // 2
    if not (bundle.lower < boundary < bundle.upper):
        # NamespaceBundleFactory rejects a boundary on the edge (all topics share the lower bound's hash).
        return SplitResult(NAME, bundle, None, f"boundary 0x{boundary:08x} is not strictly inside the bundle")
    return SplitResult(NAME, bundle, (boundary,), f"middle of topic hashes {n // 2} and {n // 2 + 1} of {n}")
