"""``range_equally_divide`` (``RangeEquallyDivideBundleSplitAlgorithm``, Pulsar's default): cut the hash range
in half; topics are not consulted. ``[0x00000000, 0x80000000)`` → 0x40000000; the full bundle → 0x7fffffff."""

from __future__ import annotations

from lb_pipeline.algorithms.splits.common import SplitResult
from lb_pipeline.model.bundles import Bundle

NAME = "range_equally_divide"


def range_equally_divide(bundle: Bundle) -> SplitResult:
    if not bundle.can_split:
        return SplitResult(NAME, bundle, None, "bundle range is too small to split")
    return SplitResult(NAME, bundle, (bundle.lower + (bundle.upper - bundle.lower) // 2,), "half of the hash range")
