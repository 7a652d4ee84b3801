"""The generated brokers' capacity model: what a topic's traffic costs a broker (CPU points, NIC bits), and the cap
that keeps every topic within what the weakest broker serves (``servable``). Pure NumPy."""

from __future__ import annotations

import numpy as np


def cpu_points(msgs: np.ndarray | float, bytes_: np.ndarray | float, speed: np.ndarray | float):
    """CPU points (100 a core) that ``msgs`` msg/s and ``bytes_`` bytes/s, in and out, cost a broker of ``speed``:
    the generator's capacity model (``generate._local_broker_data`` adds 4 % of the limit at rest)."""
    return msgs / 120.0 / speed + bytes_ / 2.0e6


def nic_out_bits(bytes_in: np.ndarray | float, bytes_out: np.ndarray | float):
    """Bits/s a broker sends: its consumers' bytes plus two bookie replicas of every write (5 % framing)."""
    return (bytes_out + 2 * bytes_in) * 8 * 1.05


def servable(rate: np.ndarray, fanout: np.ndarray, msg_size: np.ndarray, cores: np.ndarray, speed: np.ndarray,
             nic_gbps: np.ndarray, growth: np.ndarray | float = 1.0, share: float = 0.5,
             peak: float = 1.45) -> np.ndarray:
    """Topic rates (msg/s in) capped so that none needs more than ``share`` of the weakest broker's CPU or of the
    smallest NIC at the daily peak (``peak``; times ``growth`` where a namespace grows during the day); what the cap
    takes off is spread over the other topics in proportion to their rates, so the cluster's total stays. Pulsar
    balances by moving bundles: a topic too large for a broker is a named scenario, not the shape of every history."""
    weak = int(np.argmin(cores * speed))
    cpu = share * cores[weak] * 100.0 / cpu_points(1.0 + fanout, msg_size * (1.0 + fanout), speed[weak])
    nic = share * float(nic_gbps.min()) * 1e9 / nic_out_bits(msg_size, msg_size * fanout)
    limit = np.minimum(cpu, nic) / (peak * growth)
    out, total = rate.astype(float), float(rate.sum())
    for _ in range(50):
        over = out > limit
        if not over.any():
            break
        out[over] = limit[over]
        free = (out > 0) & (out < limit)
        if not free.any():
            break
        out[free] *= (total - out[~free].sum()) / out[free].sum()
    return np.minimum(out, limit)
