"""The configuration a cluster's leader runs, which is not always the one its snapshot records.

``ModularLoadManagerImpl.initialize`` creates the shedding strategy and the placement strategy once, from
``loadBalancerLoadSheddingStrategy`` and ``loadBalancerLoadPlacementStrategy`` as they are then (4.0.8: its fields
``loadSheddingStrategy`` and ``placementStrategy``; ``ServiceConfiguration`` documents the first as dynamic, but "it
requires broker restart if value is changed using dynamic config"). A load manager is created when its broker
starts, and again on every broker when ``loadManagerClassName`` changes (``BrokerService`` registers a listener that
creates a new one and starts it). Its ``start`` creates the ``LocalBrokerData`` the broker reports, whose
``startTimestamp`` is therefore the load manager's creation. The thresholds, by contrast, are read on every cycle.

So an operator who sets another strategy with ``pulsar-admin brokers update-dynamic-config`` sees it in the
snapshots' configuration at once, while the leader goes on running the one it started with, until it restarts or
another broker, started after the change, becomes the leader. ``as_run`` says, per snapshot, what the leader runs:
the recorded configuration with those two keys as they were when its load manager was created, which is taken to be
the configuration of the first snapshot at or after that moment (an operator who changes a strategy and then
restarts brokers between two snapshots gets the new one). A load manager created before the night's first snapshot
gets that snapshot's: what changed before the night is not in its snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from lb_pipeline.model.cluster_configs import Change, changed
from lb_pipeline.model.config import PulsarConfig

AT_START_KEYS = ("loadBalancerLoadSheddingStrategy", "loadBalancerLoadPlacementStrategy")
CLOCK_SLACK_MS = 60_000  # a start reported later than this after its own snapshot is no start time


@dataclass(frozen=True)
class Shot:
    """One snapshot of a cluster: its time, its leader, the leader's ``startTimestamp`` (None if it did not report)
    and the configuration it records."""
    ms: int
    leader: str | None
    leader_start_ms: int | None
    config: PulsarConfig


def as_run(shots: Sequence[Shot]) -> tuple[list[PulsarConfig], list[str]]:
    """(per snapshot, in time order: the configuration the leader runs; a note for each recorded value of an
    ``AT_START_KEYS`` key that the leader does not run yet). A snapshot whose leader's start is unknown (and that
    carries none from the same leader before) keeps its recorded configuration."""
    out, notes, noted = [], [], set()
    manager_changed = start = leader = None
    for i, shot in enumerate(shots):
        if i and shot.config.get("loadManagerClassName") != shots[i - 1].config.get("loadManagerClassName"):
            manager_changed = shot.ms  # every broker created a new load manager since the snapshot before
        if _start(shot) is not None or shot.leader != leader:
            start = _start(shot)  # carried while the same leader goes unreported
        leader = shot.leader
        created = max((t for t in (start, manager_changed) if t is not None), default=None)
        source = next((s.config for s in shots[: i + 1] if s.ms >= created), shot.config) if created is not None \
            else shot.config
        differ = {k: source[k] for k in AT_START_KEYS if source.get(k) != shot.config.get(k)}
        out.append(shot.config.overridden(**differ) if differ else shot.config)
        for key, running in differ.items():
            if (key, shot.config[key], running) in noted:
                continue
            noted.add((key, shot.config[key], running))
            when = f"at {_hhmm(created)}" if created >= shots[0].ms else "before the night's first snapshot"
            notes.append(f"From {_hhmm(shot.ms)} the configuration sets {key} to {_short(shot.config[key])}, but the "
                         f"leader{f' ({leader})' if leader else ''} created its load manager before that ({when}), and "
                         f"Pulsar reads the key only then (ModularLoadManagerImpl.initialize; a dynamic change takes "
                         f"effect when a broker restarts): it runs {_short(running)}, the strategy taken as the cluster's.")
    return out, notes


def leader_history(shots: Sequence[Shot]) -> tuple[list[Change], list[str], list[int]]:
    """(``as_run`` as a history of changes: each configuration from the snapshot where it differs from the one before
    (``cluster_configs.changed``); the notes; the times of the snapshots whose leader runs a new load manager since
    the snapshot before: another broker leads, or the leader restarted. Its strategies start afresh there: their
    state (``ThresholdShedder``'s averages, ``AvgShedder``'s hit counts, the bundles unloaded within the grace
    period) lives in the leader's load manager, not in the metadata store.)"""
    run, notes = as_run(shots)
    changes: list[Change] = []
    for shot, config in zip(shots, run):
        if not changes or changed(changes[-1][1], config):
            changes.append((shot.ms, config))
    restarts, leader, start = [], None, None  # the last known leader, and its last known start
    for shot in shots:
        if shot.leader is None:  # not known who led: nothing to compare
            continue
        now = _start(shot)
        if leader is not None and (shot.leader != leader or None not in (now, start) and now != start):
            restarts.append(shot.ms)
        start = now if now is not None or shot.leader != leader else start
        leader = shot.leader
    return changes, notes, restarts


def _start(shot: Shot) -> int | None:
    """The leader's start, unless it is unknown or later than the snapshot that reports it (a clock, or a value, to
    distrust: a broker cannot report before it started)."""
    start = shot.leader_start_ms
    return None if start is None or start > shot.ms + CLOCK_SLACK_MS else start


def _short(class_name: str) -> str:
    return class_name.rsplit(".", 1)[-1]


def _hhmm(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%H:%M UTC")
