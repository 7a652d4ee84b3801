"""Per broker and cycle, what the simulation's leader sees of each broker beyond its current load: which brokers a
one-topic bundle pins, and the load report each broker last wrote (the modular leader reads nothing newer)."""

from __future__ import annotations

import numpy as np

from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_reporter import percent_change

PINNED_SHARE = 0.5


def pinned_by_one_topic(owner: np.ndarray, present: np.ndarray, traffic: np.ndarray, one_topic: np.ndarray,
                        live_idx: np.ndarray, n_brokers: int, share: float = PINNED_SHARE) -> np.ndarray:
    """Per live broker: a bundle one topic carries serves at least ``share`` of its message rate."""
    mine = present & (owner >= 0)
    rate = traffic[:, 0] + traffic[:, 1]
    total = np.bincount(owner[mine], weights=rate[mine], minlength=n_brokers)
    single = mine & one_topic[:len(mine)]
    top = np.zeros(n_brokers)
    np.maximum.at(top, owner[single], rate[single])
    return ((total > 0) & (top >= share * total))[live_idx]


def reported_brokers(written: dict, usage: np.ndarray, bt: np.ndarray, owned: np.ndarray, live_idx: np.ndarray,
                     wmax: np.ndarray, now_ms: int, config: PulsarConfig) -> tuple[np.ndarray, np.ndarray]:
    """(usage, traffic) per broker as the modular leader reads them: each live broker's ``LocalBrokerData`` as last
    written. A broker writes when it has written nothing yet, when more than
    ``loadBalancerReportUpdateMaxIntervalMinutes`` passed, or when the largest change since its last write (message
    rate, throughput, bundle count in percent; weighted max usage in points) is above
    ``loadBalancerReportUpdateThresholdPercentage`` (``needBrokerDataUpdate``). Its reporter runs every few seconds;
    here it is asked once a cycle. ``written`` is updated in place."""
    usage, bt = usage.copy(), bt.copy()
    threshold = config.get_int("loadBalancerReportUpdateThresholdPercentage")
    max_ms = config.get_int("loadBalancerReportUpdateMaxIntervalMinutes") * 60_000
    for b in live_idx.tolist():
        last = written.get(b)
        if last is not None:
            u, x, n, w, at = last
            change = max(percent_change(x[0] + x[1], bt[b, 0] + bt[b, 1]),
                         percent_change(x[2] + x[3], bt[b, 2] + bt[b, 3]),
                         percent_change(float(n), float(owned[b])), 100.0 * abs(w - wmax[b]))
            if now_ms - at <= max_ms and not change > threshold:
                usage[b], bt[b] = u, x
                continue
        written[b] = (usage[b].copy(), bt[b].copy(), int(owned[b]), float(wmax[b]), now_ms)
    return usage, bt
