"""What the modular shedders read (``LoadData``) and what they return (decisions with reason codes).

``LoadData`` holds Pulsar's JSON as it is: broker id → ``LocalBrokerData``, bundle → ``BundleData`` (the
leader's in-memory short/long-term averages), and the recently unloaded bundles. Dict order stands for the order
the leader inserted keys into its maps; strategies read the :class:`~.frame.LoadFrame` built from it, which
iterates in Pulsar's hash-map orders. Treat a ``LoadData`` as immutable once a strategy has read it (the frame is
cached on it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from lb_pipeline.algorithms.shedding.frame import LoadFrame, build_frame, namespace_of, short_term
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import Weights

MIB = 1024 * 1024
__all__ = ["MIB", "LoadData", "Unload", "Skip", "SheddingResult", "largest_first", "namespace_of", "weights_of"]


@dataclass
class LoadData:
    brokers: dict[str, dict]
    bundle_data: dict[str, dict] = field(default_factory=dict)
    recently_unloaded: dict[str, int] = field(default_factory=dict)  # bundle → epoch ms of the unload
    frames: dict = field(default_factory=dict, repr=False, compare=False)  # shared by dataclasses.replace copies
    # a caller holding the data as arrays (the simulation) builds the frame itself: skip_system → LoadFrame
    frame_builder: Callable[[bool], LoadFrame] | None = field(default=None, repr=False, compare=False)

    def frame(self, config: PulsarConfig) -> LoadFrame:
        skip_system = config.release.shed_skips_system_namespace
        if skip_system not in self.frames:
            build = self.frame_builder or (lambda skip: build_frame(self.brokers, self.bundle_data, skip))
            self.frames[skip_system] = build(skip_system)
        return self.frames[skip_system]

    def bundles_of(self, broker: str) -> list[str]:
        return list(self.brokers[broker].get("bundles") or [])

    def rate(self, broker: str) -> float:
        b = self.brokers[broker]
        return float(b.get("msgRateIn", 0.0)) + float(b.get("msgRateOut", 0.0))

    def throughput(self, broker: str) -> float:
        b = self.brokers[broker]
        return float(b.get("msgThroughputIn", 0.0)) + float(b.get("msgThroughputOut", 0.0))

    @staticmethod
    def short_term(data: Mapping) -> tuple[float, float]:
        return short_term(data)

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


@dataclass(slots=True)  # not frozen: a frozen dataclass costs 3 µs per record, and a cycle can make hundreds
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
    swap: bool = False  # TransferShedder's minToMaxUnloads: sent back in exchange, not held back by the grace period


@dataclass(slots=True)
class Skip:
    broker: str
    bundle: str | None
    reason: str


@dataclass
class SheddingResult:
    unloads: list[Unload] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    load_stats: object | None = None  # TransferShedder's LoadStats of the cycle


def weights_of(config: PulsarConfig) -> Weights:
    if isinstance(config, PulsarConfig):
        return config.derived("weights", Weights.from_config)
    return Weights.from_config(config)


def ranked(values: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pulsar's ``sorted((e1, e2) -> Double.compare(e2, e1))`` over map entries: descending by value, ties in
    map order (``Double.compare`` puts NaN above +inf and -0.0 below 0.0)."""
    v = values[positions]
    key = np.where(np.isnan(v), -np.inf, -v)  # NaN first; -0.0 vs 0.0 differ only in sign, kept by lexsort below
    order = np.lexsort((positions, np.signbit(v) & (v == 0), key))
    if np.isnan(v).any():
        nan = np.isnan(v[order])
        order = np.concatenate([order[nan], order[~nan]])
    return positions[order], v[order]


def largest_first(frame: LoadFrame, broker: int, need: float, recently: set[str]) -> list[tuple[str, float]]:
    """The OverloadShedder/ThresholdShedder selection: the broker's bundles not recently unloaded, by short-term
    throughput, largest first, while the throughput marked so far is below ``need``, and at least one."""
    pos, v = ranked(frame.short_tput, frame.candidates(broker, recently))
    if not len(pos):
        return []
    marked = np.concatenate(([0.0], np.cumsum(v)[:-1]))  # sequential sums, as Java adds them
    stop = np.flatnonzero(~(marked[1:] < need))
    k = 1 + (int(stop[0]) if len(stop) else len(pos) - 1)
    return [(frame.bundles[p], float(x)) for p, x in zip(pos[:k].tolist(), v[:k].tolist())]
