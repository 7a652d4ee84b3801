"""When the modular leader sheds next, read from its log (``collect --before-cycle``).

The leader decides from its copies of the brokers' load reports and its ``BundleData`` as they stand when its
shedding cycle runs; a snapshot taken some seconds earlier misses what changed in between (a report rewritten, a
bundle just moved onto a broker). ``collect --before-cycle SECONDS`` therefore times the snapshot so that the
metadata store, read last, is read that many seconds before the leader's next cycle.

Pulsar runs the cycle on the leader only, as a task that reschedules itself ``loadBalancerSheddingIntervalMinutes``
after each run ends (``LoadSheddingTask``: a fixed delay, started when the broker is elected leader,
``PulsarService.startLoadBalancerTasks``). So the next cycle is predicted from the leader's log: the end of the last
cycle that logged something (an unload, "no broker available", "same as the current owner", "Attempting to shed
load", "Sole namespace bundle"), else the election, plus whole intervals. A cycle that logs nothing lasts
milliseconds, so the prediction drifts little between logged cycles; what it was is kept in the manifest
(``collector.sources.leaderCycle``: the predicted cycle, the read, what the prediction rests on).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lb_pipeline.formats.events import parse_lb_events
from lb_pipeline.snapshots.layout import MANIFEST, snapshot_day

CYCLE_KINDS = ("unload", "unload-no-broker", "unload-same-owner", "shed-attempt", "shed-sole-bundle")
TAIL_BYTES = 8 * 1024 * 1024  # the end of the log is enough: the last cycle is at most an interval old
DEFAULT_BUDGET_MS = 15_000  # what the REST part of a snapshot may take when no earlier one measured it


@dataclass(frozen=True)
class Anchor:
    ms: int  # when the leader's next cycle was scheduled from (a cycle's last line, or the election)
    what: str  # the log line's kind and time, for the manifest


def last_anchor(log: str | Path, leader: str) -> Anchor | None:
    """The latest point the leader's next cycles are scheduled from, read from the end of its log: the last line of
    the last cycle that logged (a cycle's lines are seconds apart, cycles an interval), or its election if later."""
    try:
        with open(log, "rb") as src:
            size = src.seek(0, os.SEEK_END)
            src.seek(max(0, size - TAIL_BYTES))
            text = src.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    rows, _ = parse_lb_events(text.splitlines(), leader)
    marks = sorted((int(r["event_ts"].timestamp() * 1000), r["kind"]) for r in rows
                   if r["kind"] in CYCLE_KINDS or (r["kind"] == "leader" and r["to_broker"] == leader))
    if not marks:
        return None
    # The cycle ends when its last unload call returns, a little after the line: the prediction errs early by that
    # much, never late. (Adding a typical unload's time, from the gaps between a cycle's unload lines, was tried on
    # a real cluster: one unload took 2.3 s, the next 1.0 s, and the snapshot was read a second after the cycle.)
    ms, kind = marks[-1]
    return Anchor(ms, f"{kind} at {ms}")


def next_cycle_ms(anchor_ms: int, interval_ms: int, not_before_ms: int) -> int:
    """The first predicted cycle at or after ``not_before_ms``: the anchor plus whole intervals."""
    if interval_ms <= 0:
        raise ValueError(f"shedding interval {interval_ms} ms")
    k = max(1, -(-(not_before_ms - anchor_ms) // interval_ms))
    return anchor_ms + k * interval_ms


def logged_cycles(marks: list[tuple[int, str]], interval_ms: int, start_ms: int, end_ms: int) -> list[int] | None:
    """When the leader ran its shedding cycles between ``start_ms`` and ``end_ms``, from its log's events as
    (epoch ms, ``bronze/lb_events`` kind): each cycle that logged something at its first line, and between them the cycles that
    logged nothing, predicted as here (the end of the last logged cycle or the election, plus whole intervals; before
    the first of those, whole intervals back from it). None when the log holds neither a cycle nor an election.

    The closed-loop simulation runs its cycles at these times, so that a change the snapshots record (a bundle moved
    by hand, a report rewritten) comes before or after a cycle as it did for the leader: on a grid started at the
    first snapshot, a move made between the grid's cycle and the leader's is seen a cycle late."""
    if interval_ms <= 0:
        raise ValueError(f"shedding interval {interval_ms} ms")
    marks = sorted({(ms, kind) for ms, kind in marks if kind in CYCLE_KINDS or kind == "leader"})
    if not marks:
        return None
    items: list[list] = []  # [first line, last line, a cycle (not an election)]
    for ms, kind in marks:
        cycle = kind != "leader"
        if cycle and items and items[-1][2] and ms - items[-1][1] < interval_ms // 2:
            items[-1][1] = ms  # a line of the same cycle (its lines are seconds apart, cycles an interval)
        else:
            items.append([ms, ms, cycle])
    times = []
    t = items[0][0] - interval_ms
    while t >= start_ms:
        times.append(t)
        t -= interval_ms
    times.reverse()
    for k, (first, last, cycle) in enumerate(items):
        if cycle:
            times.append(first)
        following = items[k + 1][0] if k + 1 < len(items) else None
        t = last + interval_ms
        while (following is None or t < following - interval_ms // 2) and t <= end_ms:
            times.append(t)
            t += interval_ms
    return [t for t in times if start_ms <= t <= end_ms]


def plan(anchor_ms: int, interval_ms: int, now_ms: int, lead_ms: int, budget_ms: int,
         taken_ms: int | None = None) -> tuple[int, int]:
    """(when to start the snapshot, the cycle it is timed for): the first cycle that leaves ``budget_ms`` for the
    REST part and ``lead_ms`` before the cycle for the metadata store read, and is not the cycle ``taken_ms`` (the
    one the cluster's previous snapshot was timed for) again."""
    not_before = now_ms + budget_ms + lead_ms
    if taken_ms is not None:
        not_before = max(not_before, taken_ms + interval_ms // 2)
    cycle = next_cycle_ms(anchor_ms, interval_ms, not_before)
    return cycle - lead_ms - budget_ms, cycle


def measured_budget(cluster_dir: Path) -> int:
    """Time for the REST part: half as much again as the newest timed snapshot of the cluster took, else the
    default. Only committed snapshot folders are looked at, their manifests read as untrusted."""
    took = _previous(cluster_dir, "restMs")
    return DEFAULT_BUDGET_MS if took is None else took * 3 // 2 + 1000


def previous_cycle(cluster_dir: Path) -> int | None:
    """The cycle the cluster's newest timed snapshot was timed for (``expectedMs``), or None."""
    return _previous(cluster_dir, "expectedMs", 10**15)


def _previous(cluster_dir: Path, key: str, most: int = 600_000) -> int | None:
    try:
        names = sorted((e.name for e in os.scandir(cluster_dir) if e.is_dir(follow_symlinks=False)
                        and snapshot_day(e.name)), reverse=True)
    except OSError:
        return None
    for name in names[:5]:
        try:
            value = json.loads((cluster_dir / name / MANIFEST).read_text())["collector"]["sources"]["leaderCycle"][key]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= most:
            return value
    return None


def interval_ms(runtime_config) -> tuple[int, str]:
    """``loadBalancerSheddingIntervalMinutes`` from the leader's runtime config (strings, as Pulsar answers), in
    ms, and where it came from; Pulsar's default (1) where the answer lacks or garbles it."""
    raw = runtime_config.get("loadBalancerSheddingIntervalMinutes") if isinstance(runtime_config, dict) else None
    try:
        minutes = int(str(raw).strip())
    except ValueError:
        return 60_000, "default (1 minute)"
    if not 1 <= minutes <= 24 * 60:
        return 60_000, f"default (1 minute; the leader said {str(raw)[:40]!r})"
    return minutes * 60_000, "the leader's runtime config"


def now_ms() -> int:
    return int(time.time() * 1000)


def sleep_until(ms: int) -> None:
    if (wait := ms - now_ms()) > 0:
        time.sleep(wait / 1000)


def wait_for_cycle(log: str, leader: str, anchor: Anchor, interval: int, lead_ms: int, cluster_dir: Path,
                   say: Callable[[str], None]) -> dict:
    """Sleeps until the snapshot should start for its metadata-store read to come ``lead_ms`` before the leader's
    next cycle, reading the log again while it waits (a cycle logged meanwhile moves the schedule); returns the plan
    for the manifest."""
    budget, taken = measured_budget(cluster_dir), previous_cycle(cluster_dir)
    said, planned = None, None
    while True:
        anchor = last_anchor(log, leader) or anchor
        if planned != anchor.ms:  # (re-planned from the same anchor at the start time, it would skip a cycle)
            start, expected = plan(anchor.ms, interval, now_ms(), lead_ms, budget, taken)
            planned = anchor.ms
        if said != expected:
            say(f"waiting {max(0, start - now_ms()) / 1000:.0f} s: the leader's next cycle is due at "
                f"{time.strftime('%H:%M:%S', time.gmtime(expected / 1000))} UTC")
            said = expected
        if (wait := start - now_ms()) <= 0:
            break
        time.sleep(min(wait, 5000) / 1000)
    return {"leader": leader, "expectedMs": expected, "readAtMs": expected - lead_ms, "anchor": anchor.what,
            "intervalMs": interval, "budgetMs": budget}
