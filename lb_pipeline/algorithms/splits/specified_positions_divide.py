"""``specified_positions_divide`` (``SpecifiedPositionsBundleSplitAlgorithm``): split at operator-given
positions strictly inside the bundle; needs at least 2 owned topics. Positions are sorted; duplicates survive
(Pulsar then fails on the empty child)."""

from __future__ import annotations

from collections.abc import Iterable

from lb_pipeline.algorithms.splits.common import SplitResult, TopicLoad
from lb_pipeline.model.bundles import Bundle

NAME = "specified_positions_divide"


class SplitRefused(ValueError):
    """Pulsar refuses the request itself (HTTP 412 / IllegalArgument), not merely 'no split'."""


def specified_positions_divide(bundle: Bundle, topics: Iterable[TopicLoad | int], positions: Iterable[int] | None) -> SplitResult:
    positions = sorted(positions or [])
    if not positions:
        raise SplitRefused("SplitBoundaries can't be empty")
    n = len(list(topics))
    if n <= 1:
        return SplitResult(NAME, bundle, None, f"{n} topic(s): at least 2 are needed")
    kept = [p for p in positions if bundle.lower < p < bundle.upper]
    if not kept:
        return SplitResult(NAME, bundle, None, "no position lies strictly inside the bundle")
    return SplitResult(NAME, bundle, tuple(kept), f"{len(kept)} specified position(s) inside the bundle")
