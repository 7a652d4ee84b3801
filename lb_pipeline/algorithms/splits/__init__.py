"""The four bundle split algorithms of Pulsar, one module each, and a dispatcher by Pulsar's names."""

from __future__ import annotations

from collections.abc import Iterable

from lb_pipeline.algorithms.splits.common import SplitResult, TopicLoad
from lb_pipeline.algorithms.splits.flow_or_qps_equally_divide import flow_or_qps_equally_divide
from lb_pipeline.algorithms.splits.range_equally_divide import range_equally_divide
from lb_pipeline.algorithms.splits.specified_positions_divide import SplitRefused, specified_positions_divide
from lb_pipeline.algorithms.splits.topic_count_equally_divide import topic_count_equally_divide
from lb_pipeline.model.bundles import Bundle
from lb_pipeline.model.config import PulsarConfig

ALGORITHMS = ("range_equally_divide", "topic_count_equally_divide", "specified_positions_divide",
              "flow_or_qps_equally_divide")
AUTOMATIC_ALGORITHMS = tuple(a for a in ALGORITHMS if a != "specified_positions_divide")


def automatic_algorithm(config: PulsarConfig) -> str:
    """The algorithm of an automatic split (``NamespaceService.getNamespaceBundleSplitAlgorithmByName`` with no
    name): ``defaultNamespaceBundleSplitAlgorithm`` if Pulsar knows it, else range_equally_divide, without a word
    (a name of a snapshot's config that Pulsar does not know cannot stop a replay)."""
    name = config["defaultNamespaceBundleSplitAlgorithm"]
    return name if name in ALGORITHMS else "range_equally_divide"


def split_boundary(algorithm: str, bundle: Bundle, topics: Iterable[TopicLoad], config: PulsarConfig | None = None,
                   positions: Iterable[int] | None = None) -> SplitResult:
    """``NamespaceService.getSplitBoundary`` for one algorithm name, with the broker config's limits."""
    config = config or PulsarConfig()
    topics = list(topics)
    if algorithm == "range_equally_divide":
        return range_equally_divide(bundle)
    if algorithm == "topic_count_equally_divide":
        return topic_count_equally_divide(bundle, topics)
    if algorithm == "specified_positions_divide":
        return specified_positions_divide(bundle, topics, positions)
    if algorithm == "flow_or_qps_equally_divide":
        return flow_or_qps_equally_divide(
            bundle, topics, config.get_float("loadBalancerNamespaceBundleMaxMsgRate"),
            config.get_float("loadBalancerNamespaceBundleMaxBandwidthMbytes"),
            config.get_float("flowOrQpsDifferenceThresholdPercentage"))
    raise SplitRefused(f"unknown split algorithm {algorithm!r}; Pulsar supports {', '.join(ALGORITHMS)}")


__all__ = ["ALGORITHMS", "AUTOMATIC_ALGORITHMS", "SplitRefused", "SplitResult", "TopicLoad", "automatic_algorithm",
           "split_boundary", "flow_or_qps_equally_divide", "range_equally_divide", "specified_positions_divide",
           "topic_count_equally_divide"]
