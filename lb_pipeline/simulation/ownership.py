"""Simulated ownership across a recorded bundle split: children start where their parent lived.

When the recorded history splits a bundle, Pulsar's ``splitAndOwnBundle`` leaves both halves on the broker that
owned the parent. In the simulation the parent may live elsewhere than it did in reality, so a bundle that appears
between two snapshots takes the simulated owner of the vanished bundle of its namespace whose range contains it;
with no such parent (a new namespace, a recorded merge) it starts on its recorded owner.
"""

from __future__ import annotations

import numpy as np

from lb_pipeline.model.bundles import parse_range


def _split(bundle: str) -> tuple[str, int, int]:
    ns, rng = bundle.rsplit("/", 1)
    lo, hi = parse_range(rng)
    return ns, lo, hi


def inherit_owners(history, prev: int, i: int, owner: np.ndarray) -> None:
    """Update ``owner`` (bundle index → broker index, -1 for none) in place from snapshot ``prev`` to ``i``."""
    present, before = history.present[i], history.present[prev]
    vanished = np.flatnonzero(before & ~present)
    appeared = np.flatnonzero(present & ~before)
    parents: dict[str, list[tuple[int, int, int]]] = {}
    for n in vanished.tolist():
        ns, lo, hi = _split(history.bundles[n])
        parents.setdefault(ns, []).append((lo, hi, int(owner[n])))
    for n in appeared.tolist():
        ns, lo, hi = _split(history.bundles[n])
        parent = next((o for plo, phi, o in parents.get(ns, ()) if plo <= lo and hi <= phi and o >= 0), None)
        owner[n] = parent if parent is not None else history.owner[i, n]
    owner[~present] = -1
