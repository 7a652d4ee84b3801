"""What the modular shedders read (``LoadData``) and what they return (decisions with reason codes).

``LoadData`` holds Pulsar's JSON as it is: broker id → ``LocalBrokerData``, bundle → ``BundleData`` (the
leader's in-memory short/long-term averages), and the recently unloaded bundles. Pulsar iterates Java hash maps;
we iterate in insertion order (callers insert sorted), which only matters for exact ties.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import Weights, max_resource_usage_with_weight

MIB = 1024 * 1024
DEFAULT_RATE, DEFAULT_THROUGHPUT = 50.0, 50000.0
_HEARTBEAT = (re.compile(r"^pulsar/[^/]+/[^/]+:\d+$"), re.compile(r"^pulsar/[^/]+:\d+$"),
              re.compile(r"^sla-monitor/[^/]+/[^/]+:\d+$"))


def is_system_namespace(namespace: str) -> bool:
    """``pulsar/system``, heartbeat namespaces (v1 and v2) and the SLA-monitor namespace are never shed."""
    return namespace == "pulsar/system" or any(p.match(namespace) for p in _HEARTBEAT)


def namespace_of(bundle: str) -> str:
    return bundle.rsplit("/", 1)[0]


@dataclass
class LoadData:
    brokers: dict[str, dict]
    bundle_data: dict[str, dict] = field(default_factory=dict)
    recently_unloaded: dict[str, int] = field(default_factory=dict)  # bundle → epoch ms of the unload

    def local(self, broker: str) -> dict:
        return self.brokers[broker]

    def bundles_of(self, broker: str) -> list[str]:
        return list(self.brokers[broker].get("bundles") or [])

    def rate(self, broker: str) -> float:
        b = self.brokers[broker]
        return float(b.get("msgRateIn", 0.0)) + float(b.get("msgRateOut", 0.0))

    def throughput(self, broker: str) -> float:
        b = self.brokers[broker]
        return float(b.get("msgThroughputIn", 0.0)) + float(b.get("msgThroughputOut", 0.0))

    def bundle_data_for_shedding(self) -> dict[str, dict]:
        return {b: d for b, d in self.bundle_data.items() if not is_system_namespace(namespace_of(b))}

    @staticmethod
    def short_term(data: Mapping) -> tuple[float, float]:
        """(msg rate in+out, throughput in+out) of a ``BundleData``'s short-term average."""
        st = data.get("shortTermData") or {}
        return (float(st.get("msgRateIn", DEFAULT_RATE)) + float(st.get("msgRateOut", DEFAULT_RATE)),
                float(st.get("msgThroughputIn", DEFAULT_THROUGHPUT)) + float(st.get("msgThroughputOut", DEFAULT_THROUGHPUT)))

    @classmethod
    def from_reports(cls, reports: Mapping[str, dict], stored_bundle_data: Mapping[str, dict] | None = None,
                     recently_unloaded: Mapping[str, int] | None = None) -> tuple["LoadData", list[str]]:
        """Build the leader's view from one snapshot: stored ``BundleData`` where the metadata store had it,
        else the bundle's current ``lastStats`` as a one-sample average (the leader's first sample replaces the
        default seed exactly). Returns the notes on what was approximated."""
        bundle_data, approximated = {}, 0
        stored = stored_bundle_data or {}
        for report in reports.values():
            for bundle, s in (report.get("lastStats") or {}).items():
                if bundle in stored:
                    bundle_data[bundle] = stored[bundle]
                    continue
                approximated += 1
                sample = {k: float(s.get(k, 0.0)) for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")}
                bundle_data[bundle] = {"shortTermData": {"maxSamples": 10, "numSamples": 1, **sample},
                                       "longTermData": {"maxSamples": 1000, "numSamples": 1, **sample},
                                       "topics": int(s.get("topics", 0))}
        notes = [f"{approximated} bundle(s) had no stored BundleData; their current stats stand in for the "
                 "leader's averages"] if approximated else []
        return cls(dict(reports), bundle_data, dict(recently_unloaded or {})), notes


@dataclass(frozen=True)
class Unload:
    """One bundle a strategy selected: strategy, source broker, bundle, reason code and the numbers behind it."""

    strategy: str
    broker: str
    bundle: str
    reason: str  # e.g. Overloaded, AboveAverage, LowerBoundary, MsgRateDifference, ThroughputRatio, ScoreGap
    metric: str  # what triggered: weightedMaxUsage, msgRate, throughput, score, load std …
    value: float  # the metric's value for the source broker (or pair gap)
    threshold: float  # the configured threshold it crossed
    amount: float  # how much the strategy set out to shed (bytes/s or msg/s)
    amount_unit: str  # "bytes/s" or "msg/s"
    bundle_load: float = 0.0  # the bundle's share of that amount (its short-term value)
    destination: str | None = None  # pre-assigned by AvgShedder plans / TransferShedder


@dataclass(frozen=True)
class Skip:
    broker: str
    bundle: str | None
    reason: str


@dataclass
class SheddingResult:
    unloads: list[Unload] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def weights_of(config: PulsarConfig) -> Weights:
    return Weights.from_config(config)


def weighted_max(load: LoadData, broker: str, weights: Weights) -> float:
    return max_resource_usage_with_weight(load.local(broker), weights)


def largest_first(load: LoadData, broker: str, need: float) -> list[tuple[str, float]]:
    """The shared OverloadShedder/ThresholdShedder selection: the broker's not-recently-unloaded bundles by
    short-term throughput, largest first, until the cumulative throughput reaches ``need`` (at least one)."""
    local = set(load.bundles_of(broker))
    items = [(name, LoadData.short_term(bd)[1]) for name, bd in load.bundle_data_for_shedding().items()
             if name in local and name not in load.recently_unloaded]
    items.sort(key=lambda x: -x[1])  # stable: ties keep map order
    chosen, marked = [], 0.0
    for name, v in items:
        if marked < need or not chosen:
            chosen.append((name, v))
            marked += v
    return chosen
