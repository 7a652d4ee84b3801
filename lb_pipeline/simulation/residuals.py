"""What the load model misses: each broker's reported usage minus the model's on the traffic it served. The
closed loop adds it back to the model's figure on the simulated traffic (``Simulation.residuals``), so a broker's
own noise stays with it."""

from __future__ import annotations

import numpy as np

from lb_pipeline.simulation.history import History
from lb_pipeline.simulation.load_model import SATURATED, LoadModel


def recorded_prediction(h: History, model: LoadModel, i: int) -> np.ndarray:
    """(brokers, resources): the load model's usage at snapshot ``i`` on the traffic each broker served then (the
    recorded ownership)."""
    owner, mask = h.owner[i], h.owner[i] >= 0
    bt = np.stack([np.bincount(owner[mask], weights=h.traffic[i][mask, f], minlength=len(h.brokers))
                   for f in range(4)], axis=1)
    return model.predict(np.stack([bt[:, 0] + bt[:, 1], bt[:, 2], bt[:, 3]], axis=1), h.limits[i])


def recorded_residuals(h: History, model: LoadModel) -> np.ndarray:
    """(snapshots, brokers, resources): each live broker's reported usage minus the load model's on the traffic it
    served at that snapshot (the recorded ownership); 0 where it was down or reported nothing, and where the report
    was saturated (at ``SATURATED`` of its limit: demand past the limit is the model's to say, not noise)."""
    out = np.zeros_like(h.usage)
    for i in range(len(h.times)):
        got = np.nan_to_num(h.usage[i])
        residual = got - recorded_prediction(h, model, i)
        saturated = (h.limits[i] > 0) & (got >= SATURATED * h.limits[i])
        out[i] = np.where(h.live[i][:, None] & np.isfinite(h.usage[i]) & ~saturated, residual, 0.0)
    return out
