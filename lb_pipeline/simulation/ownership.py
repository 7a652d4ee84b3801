"""Simulated ownership across a bundle split: children start where their parent lived.

When the recorded history splits a bundle, Pulsar's ``splitAndOwnBundle`` leaves both halves on the broker that
owned the parent. In the simulation the parent may live elsewhere than it did in reality (or the simulation may have
split it its own way), so a bundle that appears between two snapshots takes the simulated owner of the vanished
bundle of its namespace whose range contains its lower bound; with no such parent (a new namespace, a bundle of
a namespace re-created) it starts on its recorded owner.
"""

from __future__ import annotations

import numpy as np

from lb_pipeline.simulation.bundle_set import bundle_range


def inherit_owners(names: list[str], before: np.ndarray, now: np.ndarray, owner: np.ndarray,
                   recorded_owner: np.ndarray) -> None:
    """Update ``owner`` (bundle index → broker index, -1 for none) in place from the bundles present ``before``
    to those present ``now``; ``recorded_owner``: where each bundle lives in the recording now."""
    vanished = np.flatnonzero(before & ~now)
    appeared = np.flatnonzero(now & ~before)
    parents: dict[str, list[tuple[int, int, int]]] = {}
    for n in vanished.tolist():
        ns, lo, hi = bundle_range(names[n])
        parents.setdefault(ns, []).append((lo, hi, int(owner[n])))
    for n in appeared.tolist():
        ns, lo, hi = bundle_range(names[n])
        parent = next((o for plo, phi, o in parents.get(ns, ()) if plo <= lo < phi and o >= 0), None)
        owner[n] = parent if parent is not None else recorded_owner[n]
    owner[~now] = -1
