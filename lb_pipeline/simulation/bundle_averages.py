"""The simulated leader's ``BundleData`` of every bundle: its short- and long-term ``TimeAverageMessageData`` as
arrays (``numSamples`` and the four rates), one row per bundle of the simulation's bundle set.

Pulsar's rules, as the simulation applies them:

* the leader samples every bundle it has a report for each time any broker rewrites its load report
  (``updateAll``; twice when a broker's report appears or goes: ``Created``/``Deleted`` and the parent's
  ``ChildrenChanged``, not modelled here): ``per_minute`` times a minute, from the record (``leader_averages``), else
  once;
* a moved bundle's averages start again from its next sample (``forget``): when the old owner's report without it
  is written before the new owner's with it, no broker lists it, and the leader drops its ``BundleData`` and deletes
  the stored copy (``ModularLoadManagerImpl.updateBundleData``). Measured every write (``leader_samples``, the probe
  record): so 7 of 16 moves; in the other 9 the averages went on. And the new owner's first report carried 1.05 to
  2.55 times the bundle's rate (median 1.39; up to 6.3 on the second probe record, where that report got 3 of 17
  moved hot bundles split), its next the rate again: for a move the history imposes, where the report writes were
  kept, the loop takes that report as the leader's sample (``arrivals``); for its own moves neither is modelled;
* a split's children and a bundle that appears start from Pulsar's default seed (``start_afresh``), the first sample
  replacing it; a bundle with a ``ResourceQuota`` an admin set starts (there and after a move) from the quota with a
  full window instead (``getBundleDataOrDefault``: it weighs 9/10 and 999/1000 after the first sample);
* where a snapshot holds the leader's stored ``BundleData`` (``anchor``), the bundles the simulation has where Pulsar
  had them take the leader's averages.
"""

from __future__ import annotations

import numpy as np

from lb_pipeline.algorithms import time_average as ta
from lb_pipeline.simulation.leader_averages import LeaderAverages

SEED = np.array([ta.DEFAULT_SEED[f] for f in ta.FIELDS])
WINDOWS = (ta.SHORT_SAMPLES, ta.LONG_SAMPLES)


class BundleAverages:
    def __init__(self, size: int, leader: LeaderAverages | None = None):
        self.leader = leader
        self.quota = leader.quota if leader is not None else None  # (N, 4), NaN where a bundle has none
        self.per_minute = leader.per_minute if leader is not None else 1.0
        self.n = {w: np.zeros(size, np.int64) for w in WINDOWS}
        self.avg = {w: np.tile(SEED, (size, 1)) for w in WINDOWS}

    def samples(self, minutes: float, at_least: int = 1) -> int:
        """The leader's samples of every bundle in ``minutes``."""
        return max(at_least, round(minutes * self.per_minute))

    def sample(self, present: np.ndarray, traffic: np.ndarray, samples: int | np.ndarray) -> None:
        """``samples`` (per bundle, or one count for all) of ``traffic`` for the ``present`` bundles."""
        k = present.astype(np.int64) * samples
        for w in WINDOWS:  # the four fields at once: the same arithmetic per element as one field at a time
            n, self.avg[w] = ta.update_many(self.n[w][:, None], self.avg[w], traffic, k[:, None], w)
            self.n[w] = n[:, 0]

    def forget(self, bundles) -> None:
        for w in WINDOWS:
            self.n[w][bundles] = 0
        self._from_quota(bundles)

    def start_afresh(self, bundles) -> None:
        for w in WINDOWS:
            self.n[w][bundles], self.avg[w][bundles] = 0, SEED
        self._from_quota(bundles)

    def _from_quota(self, bundles) -> None:
        """Of ``bundles`` (indices or a mask), those with a quota start from it, their windows full."""
        if self.quota is None:
            return
        mask = np.zeros(len(self.n[ta.LONG_SAMPLES]), bool)
        mask[bundles] = True
        N = len(self.quota)
        mask[N:] = False
        mask[:N] &= ~np.isnan(self.quota[:, 0])
        for w in WINDOWS:
            self.n[w][mask], self.avg[w][mask] = w, self.quota[mask[:N]]

    def grow(self, size: int) -> None:
        extra = size - len(self.n[ta.LONG_SAMPLES])
        if extra > 0:
            for w in WINDOWS:
                self.n[w] = np.append(self.n[w], np.zeros(extra, np.int64))
                self.avg[w] = np.vstack([self.avg[w], np.tile(SEED, (extra, 1))])

    def anchor(self, i: int, owner: np.ndarray, recorded_owner: np.ndarray) -> np.ndarray:
        """The bundles whose averages are set to the leader's at snapshot ``i`` (``leader_averages``): those it holds
        the ``BundleData`` of, where the simulation has them on the broker the snapshot shows (``owner``: the
        simulation's, ``recorded_owner``: the snapshot's, of the recorded bundles). A bundle the simulation placed
        elsewhere keeps averages of its own (its leader dropped and restarted them at its own moves); one it moved
        where Pulsar did takes Pulsar's, whose first samples after the move carry what the simulation cannot see
        (the burst the new owner reports right after a move: ``docs/validation.md``)."""
        N = len(recorded_owner)
        mask = np.zeros(len(owner), bool)
        if self.leader is None:
            return mask
        mask[:N] = self.leader.stored[i] & (owner[:N] == recorded_owner)
        for w in WINDOWS:
            self.n[w][mask] = self.leader.samples[w][i][mask[:N]]
            self.avg[w][mask] = self.leader.values[w][i][mask[:N]]
        return mask
