"""Which bundles Pulsar would split, and why.

* :func:`modular_split_candidates` reproduces ``impl/BundleSplitterTask`` (modular load manager, leader only):
  topic and session counts from the brokers' ``lastStats``, message rate and bandwidth from the **long-term**
  ``BundleData``; no debounce; ``loadBalancerNamespaceMaximumBundles`` counted per namespace within the cycle.
* :class:`ExtensibleSplitStrategy` reproduces ``extensions/strategy/DefaultNamespaceBundleSplitStrategyImpl``:
  runs per owner broker on instantaneous stats, the first reason wins (Topics → Sessions → MsgRate →
  Bandwidth), a bundle must be hot on more than ``loadBalancerNamespaceBundleSplitConditionHitCountThreshold``
  consecutive cycles, at most ``loadBalancerMaxNumberOfBundlesToSplitPerCycle`` splits per cycle, and the
  configured algorithm must return exactly one boundary.

Both compare with Java's arithmetic: ``loadBalancerNamespaceBundleMaxBandwidthMbytes × 1048576`` is an ``int``
product (2048 MB and more wrap: 2048 and 3000 to negative numbers, 4096 to 0, where every bundle with traffic is
past it; 100000 to 1,696 MB; ``limit_notes`` tells the operator), and so is ``consumerCount + producerCount``. The
modular task walks the leader's brokers in ``ConcurrentHashMap`` order (which hot bundles get a namespace's last
slots); each report's ``lastStats`` and the extensible strategy's stats in the order given, which callers take from
the broker's map (``PulsarStats.bundleStats``, a ``ConcurrentHashMap``: a report's JSON lists ``lastStats`` in its
order, and bronze keeps it). Checked against Pulsar 4.0.8's own
``BundleSplitterTask`` and ``DefaultNamespaceBundleSplitStrategyImpl`` (``tests/conformance``, families ``triggers``
and ``extensible-triggers``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lb_pipeline.algorithms.splits import automatic_algorithm
from lb_pipeline.algorithms.splits.common import MIB, SplitResult
from lb_pipeline.algorithms.splits.specified_positions_divide import SplitRefused
from lb_pipeline.model.bundles import Bundle, parse_range, split_bundle_name
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.java_values import java_int
from lb_pipeline.model.javahash import concurrent_hash_map_order

TOPICS, SESSIONS, MSG_RATE, BANDWIDTH = "Topics", "Sessions", "MsgRate", "Bandwidth"


@dataclass(frozen=True)
class Threshold:
    reason: str  # Topics, Sessions, MsgRate or Bandwidth
    value: float
    limit: float

    @property
    def ratio(self) -> float:
        return self.value / self.limit if self.limit > 0 else float("inf")  # a wrapped bandwidth limit is < 0

    def describe(self) -> str:
        unit = {TOPICS: "topics", SESSIONS: "sessions", MSG_RATE: "msg/s", BANDWIDTH: "MiB/s"}[self.reason]
        scale, fmt = (MIB, ",.1f") if self.reason == BANDWIDTH else (1, ",.0f")
        how = f"{self.ratio:.2f}x the limit" if self.limit > 0 else "a limit of 0 or less: any amount passes it"
        return f"{self.reason}: {self.value / scale:{fmt}} {unit} > {self.limit / scale:{fmt}} ({how})"


@dataclass(frozen=True)
class SplitDecision:
    bundle: str
    broker: str
    triggered: tuple[Threshold, ...]  # every exceeded threshold, the deciding one first
    selected: bool  # False: hot, but Pulsar would not split it this cycle (see ``skipped``)
    skipped: str | None = None
    boundary: SplitResult | None = None  # the extensible strategy computes it up front

    @property
    def reason(self) -> str:
        return self.triggered[0].reason if self.triggered else ""


@dataclass(frozen=True)
class SplitLimits:
    max_topics: int
    max_sessions: int
    max_msg_rate: float
    max_bytes: float
    max_bundles: int

    @classmethod
    def from_config(cls, config: PulsarConfig) -> "SplitLimits":
        return cls(
            max_topics=config.get_int("loadBalancerNamespaceBundleMaxTopics"),
            max_sessions=config.get_int("loadBalancerNamespaceBundleMaxSessions"),
            max_msg_rate=config.get_float("loadBalancerNamespaceBundleMaxMsgRate"),
            # int × int in both triggers: 2048 MB and more wrap (2048 → -2048 MB: every bundle with traffic is hot)
            max_bytes=float(java_int(config.get_int("loadBalancerNamespaceBundleMaxBandwidthMbytes") * MIB)),
            max_bundles=config.get_int("loadBalancerNamespaceMaximumBundles"),
        )

    @classmethod
    def lowest(cls, limits: list["SplitLimits"]) -> "SplitLimits":
        """Each threshold at its lowest among ``limits`` (a session limit of 0 or less means none)."""
        sessions = [x.max_sessions for x in limits if x.max_sessions > 0]
        return cls(min(x.max_topics for x in limits), min(sessions) if sessions else 0,
                   min(x.max_msg_rate for x in limits), min(x.max_bytes for x in limits),
                   min(x.max_bundles for x in limits))

    def past(self, topics, sessions, msg_rate, throughput):
        """Whether any threshold is passed, element by element: numpy arrays, pandas Series or Spark Columns."""
        out = (topics > self.max_topics) | (msg_rate > self.max_msg_rate) | (throughput > self.max_bytes)
        return out | (sessions > self.max_sessions) if self.max_sessions > 0 else out

    def exceeded(self, topics: int, sessions: int, msg_rate: float, throughput: float) -> list[Threshold]:
        """Exceeded thresholds in the extensible strategy's priority order (Topics, Sessions, MsgRate, Bandwidth)."""
        out, sessions = [], java_int(sessions)  # consumerCount + producerCount, two Java ints
        if topics > self.max_topics:
            out.append(Threshold(TOPICS, topics, self.max_topics))
        if self.max_sessions > 0 and sessions > self.max_sessions:
            out.append(Threshold(SESSIONS, sessions, self.max_sessions))
        if msg_rate > self.max_msg_rate:
            out.append(Threshold(MSG_RATE, msg_rate, self.max_msg_rate))
        if throughput > self.max_bytes:
            out.append(Threshold(BANDWIDTH, throughput, self.max_bytes))
        return out


def limit_notes(config: PulsarConfig) -> list[str]:
    """The split settings Pulsar takes otherwise than they read, for the operator: the bandwidth limit
    (``SplitLimits.from_config``) and the automatic split algorithm (``getNamespaceBundleSplitAlgorithmByName``)."""
    notes = []
    mbytes = config.get_int("loadBalancerNamespaceBundleMaxBandwidthMbytes")
    taken = SplitLimits.from_config(config).max_bytes  # the limit as the triggers compute it, wrapped
    if taken != mbytes * MIB:
        notes.append(f"loadBalancerNamespaceBundleMaxBandwidthMbytes={mbytes}: both split triggers multiply it by "
                     f"1048576 as a Java int, which wraps to {taken / MIB:,.1f} MB/s, so Pulsar splits "
                     + ("every bundle with traffic and two topics or more" if taken <= 0 else "at that bandwidth")
                     + "; set it to 2047 or less")
    name = config["defaultNamespaceBundleSplitAlgorithm"]
    if name == "specified_positions_divide":  # an automatic split passes no positions: the algorithm's future fails
        notes.append("defaultNamespaceBundleSplitAlgorithm=specified_positions_divide: an automatic split gives it no "
                     "positions, so every split the triggers start fails (\"SplitBoundaries can't be empty\") and hot "
                     "bundles are never split; set range_equally_divide, topic_count_equally_divide or "
                     "flow_or_qps_equally_divide")
    elif automatic_algorithm(config) != name:
        notes.append(f"defaultNamespaceBundleSplitAlgorithm={name!r} is not an algorithm Pulsar knows: it splits with "
                     "range_equally_divide")
    return notes


def modular_split_candidates(brokers: Mapping[str, Mapping], bundle_data: Mapping[str, Mapping],
                             bundle_counts: Mapping[str, int], config: PulsarConfig | None = None) -> list[SplitDecision]:
    """``BundleSplitterTask.findBundlesToSplit``.

    ``brokers``: broker id → ``LocalBrokerData`` JSON (its ``lastStats``); ``bundle_data``: bundle full name →
    ``BundleData`` JSON (its ``longTermData``); ``bundle_counts``: namespace → current number of bundles.
    """
    config = config or PulsarConfig()
    if not config.get_bool("loadBalancerAutoBundleSplitEnabled"):
        return []
    limits = SplitLimits.from_config(config)
    decisions, per_ns = [], defaultdict(int)
    # the leader's LoadData.brokerData is a ConcurrentHashMap: its order decides which hot bundles get a
    # namespace's last slots; each report's lastStats in its own order (Jackson reads it into a LinkedHashMap)
    for broker in concurrent_hash_map_order(brokers):
        for bundle, stats in (brokers[broker].get("lastStats") or {}).items():
            topics = int(stats.get("topics", 0))
            if topics < 2:
                continue
            rate = throughput = 0.0
            if bundle in bundle_data:  # long-term averages; a bundle without data counts as 0
                lt = bundle_data[bundle].get("longTermData") or {}
                rate = float(lt.get("msgRateIn", 0.0)) + float(lt.get("msgRateOut", 0.0))
                throughput = float(lt.get("msgThroughputIn", 0.0)) + float(lt.get("msgThroughputOut", 0.0))
            sessions = int(stats.get("producerCount", 0)) + int(stats.get("consumerCount", 0))
            hot = limits.exceeded(topics, sessions, rate, throughput)
            if not hot:
                continue
            namespace, _ = split_bundle_name(bundle)
            count = bundle_counts.get(namespace, 0)
            if count + per_ns[namespace] < limits.max_bundles:
                per_ns[namespace] += 1
                decisions.append(SplitDecision(bundle, broker, tuple(hot), True))
            else:
                decisions.append(SplitDecision(bundle, broker, tuple(hot), False, skipped=(
                    f"namespace has {count} bundles (+{per_ns[namespace]} this cycle), "
                    f"loadBalancerNamespaceMaximumBundles={limits.max_bundles}")))
    return decisions


@dataclass
class ExtensibleSplitStrategy:
    """``DefaultNamespaceBundleSplitStrategyImpl`` with its per-bundle hit counters kept across cycles."""

    config: PulsarConfig = field(default_factory=PulsarConfig)
    hit_count: dict[str, int] = field(default_factory=dict)

    def find_bundles_to_split(self, broker: str, stats: Mapping[str, Mapping], bundle_counts: Mapping[str, int],
                              boundary_for: Callable[[Bundle], SplitResult],
                              splitting: Mapping[str, str] | None = None,
                              config: PulsarConfig | None = None) -> list[SplitDecision]:
        """One cycle on one owner broker, under ``config`` (Pulsar reads the live configuration each cycle; default:
        the strategy's). ``stats``: bundle full name → ``NamespaceBundleStats`` of the bundles it
        owns; ``bundle_counts``: namespace → its number of bundles, where a missing namespace is a failed lookup
        (Pulsar then skips the bundle); ``splitting``: bundle names currently in the Splitting state;
        ``boundary_for``: the configured split algorithm. ``stats`` is walked in the order given: pass the order of
        the broker's map (``BrokerService.getBundleStats``, a ``ConcurrentHashMap``; a report's JSON lists
        ``lastStats`` in it), which decides the cycle's and a namespace's last slots."""
        c = config if config is not None else self.config
        if not (c.get_bool("loadBalancerEnabled") and c.get_bool("loadBalancerAutoBundleSplitEnabled")):
            return []
        limits = SplitLimits.from_config(c)
        threshold = c.get_int("loadBalancerNamespaceBundleSplitConditionHitCountThreshold")
        per_cycle = c.get_int("loadBalancerMaxNumberOfBundlesToSplitPerCycle")
        for gone in set(self.hit_count) - set(stats):
            del self.hit_count[gone]
        decisions, per_ns = [], defaultdict(int)
        for name, s in stats.items():
            topics = int(s.get("topics", 0))
            if topics < 2:
                continue
            namespace, rng = split_bundle_name(name)
            lower, upper = parse_range(rng)
            if upper - lower <= 1:
                continue
            hot = limits.exceeded(topics, int(s.get("producerCount", 0)) + int(s.get("consumerCount", 0)),
                                  float(s.get("msgRateIn", 0)) + float(s.get("msgRateOut", 0)),
                                  float(s.get("msgThroughputIn", 0)) + float(s.get("msgThroughputOut", 0)))
            if hot:
                self.hit_count[name] = self.hit_count.get(name, 0) + 1
            else:
                self.hit_count.pop(name, None)
                continue
            if self.hit_count[name] <= threshold:
                decisions.append(SplitDecision(name, broker, (hot[0],), False, skipped=(
                    f"hot for {self.hit_count[name]} consecutive cycle(s), must exceed {threshold}")))
                continue
            count = bundle_counts.get(namespace)
            if count is None:  # NamespaceService.getBundleCount failed: Pulsar counts a Failure and moves on
                decisions.append(SplitDecision(name, broker, (hot[0],), False, skipped=(
                    f"the bundle count of {namespace} could not be read (Pulsar: Failure/Unknown, not split)")))
                continue
            if count + per_ns[namespace] >= limits.max_bundles:
                decisions.append(SplitDecision(name, broker, (hot[0],), False, skipped=(
                    f"namespace at loadBalancerNamespaceMaximumBundles={limits.max_bundles}")))
                continue
            low_txt, up_txt = rng.split("_")
            # Pulsar compares text, not numbers: the bundle's name starts with the namespace (no "/": a splitting
            # bundle of acme/orders-eu counts for acme/orders) and its range with the lower or ends with the upper
            if any(other.startswith(namespace) and (other.split("/")[-1].startswith(low_txt)
                                                    or other.split("/")[-1].endswith(up_txt))
                   for other in (splitting or {})):
                decisions.append(SplitDecision(name, broker, (hot[0],), False, skipped="a neighbour is splitting"))
                continue
            try:
                result = boundary_for(Bundle(namespace, lower, upper))
            except SplitRefused as refused:  # the algorithm's future fails (specified_positions_divide has no
                decisions.append(SplitDecision(name, broker, (hot[0],), False, skipped=(  # positions here)
                    f"Pulsar failed to get split boundaries: {refused}")))
                continue
            if not result.splits or len(result.boundaries) != 1:
                decisions.append(SplitDecision(name, broker, (hot[0],), False, boundary=result, skipped=(
                    f"{result.algorithm} must give exactly one boundary: {result.failure or result.reason}")))
                continue
            decisions.append(SplitDecision(name, broker, (hot[0],), True, boundary=result))
            per_ns[namespace] += 1
            del self.hit_count[name]
            if sum(d.selected for d in decisions) == per_cycle:
                break
        return decisions
