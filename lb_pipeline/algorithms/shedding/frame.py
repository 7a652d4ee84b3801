"""``LoadData`` as arrays, in the orders Pulsar iterates it: what the modular shedders read, built once per cycle.

Pulsar builds its ``LoadData`` objects (``ConcurrentHashMap``s of ``BrokerData`` and ``BundleData``) before the
leader runs a shedding strategy; this frame is the same preparation for lb_pipeline, and, like Pulsar's objects,
it is outside the timed region of ``benchmarks/bench_shedding.py``. The strategies then work on numpy arrays:

* brokers in ``LoadData.brokerData`` (``ConcurrentHashMap``) iteration order;
* bundles in ``getBundleDataForLoadShedding()`` order: the bundle map copied into a ``HashMap`` by
  ``Collectors.toMap``, minus SLA-monitor and heartbeat namespaces (and ``pulsar/system`` in newer master);
* per broker, the positions of the bundles its ``LocalBrokerData.bundles`` set names.

Stable sorts over positions then break ties exactly as Pulsar's stable sorts over those maps do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from lb_pipeline.model.javahash import JavaHashMap, concurrent_hash_map_order
from lb_pipeline.model.names import SYSTEM_NAMESPACE, is_sla_or_heartbeat, is_system_namespace  # noqa: F401 - re-exported
from lb_pipeline.model.usage import RESOURCES, Weights, percent_usage_array

DEFAULT_RATE, DEFAULT_THROUGHPUT = 50.0, 50000.0  # the leader's default stats for a bundle it has no data of


def namespace_of(bundle: str) -> str:
    return bundle.rsplit("/", 1)[0]


def short_term(data: dict | None) -> tuple[float, float]:
    """(msg rate in+out, throughput in+out) of a ``BundleData``'s short-term average. A missing average is the
    leader's default seed (50 msg/s and 50000 B/s each way); a missing field of a present average is 0."""
    st = (data or {}).get("shortTermData")
    if st is None:
        return DEFAULT_RATE * 2, DEFAULT_THROUGHPUT * 2
    return (float(st.get("msgRateIn", 0.0)) + float(st.get("msgRateOut", 0.0)),
            float(st.get("msgThroughputIn", 0.0)) + float(st.get("msgThroughputOut", 0.0)))


@dataclass
class LoadFrame:
    brokers: list[str]
    percents: np.ndarray  # (brokers, 5): float32 percents of RESOURCES, widened to double
    rate_in: np.ndarray
    rate_out: np.ndarray
    tput_in: np.ndarray
    tput_out: np.ndarray
    bundle_count: np.ndarray  # size of each broker's bundles set
    bundles: list[str]  # getBundleDataForLoadShedding() order
    short_rate: np.ndarray
    short_tput: np.ndarray
    owned: list[np.ndarray]  # per broker: positions in ``bundles`` of its bundles, ascending
    position: dict[str, int]
    exact_order: bool  # False when a HashMap bucket held a tree bin (order approximated, see javahash)
    cache: dict = field(default_factory=dict)  # per-frame values placement strategies derive (scores)

    @property
    def index(self) -> dict[str, int]:
        if "index" not in self.cache:
            self.cache["index"] = {b: i for i, b in enumerate(self.brokers)}
        return self.cache["index"]

    @property
    def rate(self) -> np.ndarray:
        return self.rate_in + self.rate_out

    @property
    def throughput(self) -> np.ndarray:
        return self.tput_in + self.tput_out

    def weighted_max(self, w: Weights) -> np.ndarray:
        """``LocalBrokerData.getMaxResourceUsageWithWeight`` per broker (a fraction; heap memory not counted)."""
        p = self.percents
        with np.errstate(over="ignore", invalid="ignore"):  # a weight of 1e308 overflows to inf, as in Java
            cols = (p[:, 0] * w.cpu, p[:, 2] * w.direct_memory, p[:, 3] * w.bandwidth_in, p[:, 4] * w.bandwidth_out)
        best = np.full(len(self.brokers), -np.inf)
        for c in cols:  # Java: ``if (d > max) max = d`` from -inf, so NaN never wins
            best = np.where(c > best, c, best)
        return best / 100.0

    def candidates(self, broker: int, recently: set[str]) -> np.ndarray:
        """Positions of the broker's bundles that were not recently unloaded, in map order."""
        pos = self.owned[broker]
        if recently and len(pos):
            keep = [p for p in pos.tolist() if self.bundles[p] not in recently]
            return np.asarray(keep, dtype=np.int64)
        return pos


def build_frame(brokers: dict[str, dict], bundle_data: dict[str, dict], skip_system_namespace: bool) -> LoadFrame:
    """The frame of one cycle's ``LoadData`` (dicts in the order the leader inserted them)."""
    order = concurrent_hash_map_order(brokers)
    reports = [brokers[b] for b in order]
    percents = np.stack([_percents(reports, r) for r in RESOURCES], axis=1) if reports else np.zeros((0, 5))

    def col(key: str) -> np.ndarray:
        return np.array([float(r.get(key, 0.0) or 0.0) for r in reports], dtype=np.float64)

    names, position, exact = _bundle_layout(tuple(bundle_data), skip_system_namespace)
    rates, tputs = _short_terms(bundle_data, names)
    owned, counts = [], []
    for r in reports:
        held = set(r.get("bundles") or ())
        counts.append(len(held))
        owned.append(np.asarray(sorted(position[b] for b in held if b in position), dtype=np.int64))
    return LoadFrame(order, percents, col("msgRateIn"), col("msgRateOut"), col("msgThroughputIn"),
                     col("msgThroughputOut"), np.array(counts, dtype=np.int64), names, rates, tputs, owned, position,
                     exact)


@lru_cache(maxsize=64)  # a replay's snapshots hold the same bundles cycle after cycle: their orders once
def _bundle_layout(keys: tuple[str, ...], skip_system_namespace: bool) -> tuple[list[str], dict[str, int], bool]:
    """(``getBundleDataForLoadShedding()`` order, bundle → position, whether the order is exact) of a ``BundleData``
    map whose keys were inserted in this order. Read only: the frames of one key set share them."""
    excluded = is_system_namespace if skip_system_namespace else is_sla_or_heartbeat
    kept = [b for b in concurrent_hash_map_order(keys) if not excluded(namespace_of(b))]
    copy = JavaHashMap()  # Collectors.toMap
    names = copy.order(kept)
    return names, {b: i for i, b in enumerate(names)}, copy.exact


def _short_terms(bundle_data: dict[str, dict], names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(msg rate, throughput) in+out of each bundle's short-term average, in ``names`` order (``short_term``)."""
    rates, tputs = [], []
    add_rate, add_tput = rates.append, tputs.append
    for b in names:
        data = bundle_data[b]
        try:  # the common shape: every field present, as floats
            st = data["shortTermData"]
            rate, tput = st["msgRateIn"] + st["msgRateOut"], st["msgThroughputIn"] + st["msgThroughputOut"]
            if type(rate) is float and type(tput) is float:
                add_rate(rate)
                add_tput(tput)
                continue
        except (KeyError, TypeError):
            pass
        rate, tput = short_term(data)  # defaults for what is missing, conversions for what is not a float
        add_rate(rate)
        add_tput(tput)
    return np.array(rates, dtype=np.float64), np.array(tputs, dtype=np.float64)


def _percents(reports: list[dict], resource: str) -> np.ndarray:
    usage = [float((r.get(resource) or {}).get("usage", 0.0)) for r in reports]
    limit = [float((r.get(resource) or {}).get("limit", 0.0)) for r in reports]
    return percent_usage_array(usage, limit)
