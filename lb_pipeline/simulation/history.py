"""A cluster's recorded history as arrays: what the simulation replays (who was up, what each bundle carried).

Built from the bronze ``broker_reports`` and ``bundle_reports`` rows of one cluster. Snapshot ``i`` holds from its
time until the next one; between two snapshots a bundle's traffic is interpolated linearly (the simulation runs a
cycle per ``loadBalancerSheddingIntervalMinutes``, the snapshots come far less often — outputs say so). A bundle
seen in one snapshot and not in the next (split or deleted in the recorded history) keeps its last traffic until
the next snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lb_pipeline.formats.brokers import SERVES
from lb_pipeline.model.bundles import parse_range
from lb_pipeline.simulation.load_model import RESOURCES

TRAFFIC = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
CLIENTS = ("producer_count", "consumer_count")
MAX_GAP_FACTOR = 3  # an interval longer than this many typical intervals is a gap in the history
# a snapshot without any broker load report has no row here: the history goes on without it, and says so
NO_LOAD_REPORT = "{}: no broker load report; the history goes from the snapshot before to the one after"


@dataclass
class History:
    cluster: str
    times: np.ndarray  # (S,) epoch ms, ascending
    brokers: list[str]  # every broker seen, sorted
    live: np.ndarray  # (S, B) bool: the broker reported in that snapshot
    limits: np.ndarray  # (S, B, 5) resource limits (RESOURCES order), last known carried forward
    usage: np.ndarray  # (S, B, 5) resource usage as reported (NaN when not reporting)
    start: np.ndarray  # (S, B) startTimestamp (ms), -1 when not reporting
    meta: dict[str, dict]  # broker → brokerVersionString / loadManagerClassName / which topics it serves
    bundles: list[str]  # every bundle seen, sorted
    present: np.ndarray  # (S, N) bool
    traffic: np.ndarray  # (S, N, 4) TRAFFIC
    clients: np.ndarray  # (S, N, 2) producers, consumers
    topics: np.ndarray  # (S, N) topic count
    owner: np.ndarray  # (S, N) recorded owner (broker index), -1 when absent
    notes: list[str] = field(default_factory=list)
    # snapshot → (bundle index, broker index) of moves the history imposes at that snapshot, as it imposes brokers
    # joining and leaving: those the load manager did not make (by hand, say), where the leader's log tells them apart
    imposed: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def snapshot_at(self, t_ms: int) -> int:
        return int(np.searchsorted(self.times, t_ms, side="right") - 1)

    def snapshots_at(self, times_ms) -> frozenset[int]:
        """The indices of the snapshots taken at ``times_ms`` (a time no snapshot has is left out)."""
        wanted = {int(t) for t in times_ms}
        return frozenset(i for i, t in enumerate(self.times.tolist()) if t in wanted)

    def traffic_at(self, t_ms: int) -> np.ndarray:
        """(N, 4) bundle traffic at ``t_ms``: linear between the snapshots around it where the bundle is in both."""
        i = self.snapshot_at(t_ms)
        now = self.traffic[i]
        if i + 1 >= len(self.times) or t_ms == self.times[i]:
            return now.copy()
        frac = (t_ms - self.times[i]) / (self.times[i + 1] - self.times[i])
        both = self.present[i] & self.present[i + 1]
        return np.where(both[:, None], now + (self.traffic[i + 1] - now) * frac, now)

    def cycle_times(self, interval_minutes: int) -> np.ndarray:
        if interval_minutes <= 0:
            raise ValueError(f"loadBalancerSheddingIntervalMinutes must be positive, got {interval_minutes}")
        step = min(interval_minutes * 60_000, int(self.times[-1] - self.times[0]) + 1)  # past the day: one cycle
        return np.arange(self.times[0], self.times[-1] + 1, step, dtype=np.int64)

    def recorded_splits(self) -> int:
        """Bundles the history shows split: present at a snapshot and gone at the next, while a bundle of the same
        namespace inside its hash range appears (a deleted namespace's bundles are no split)."""
        spans = [(b.rsplit("/", 1)[0], *parse_range(b.rsplit("/", 1)[1])) for b in self.bundles]
        count = 0
        for i in range(len(self.times) - 1):
            gone = np.flatnonzero(self.present[i] & ~self.present[i + 1]).tolist()
            new = [spans[n] for n in np.flatnonzero(~self.present[i] & self.present[i + 1]).tolist()]
            count += sum(1 for n in gone if any(ns == spans[n][0] and spans[n][1] <= lo and up <= spans[n][2]
                                                for ns, lo, up in new))
        return count

    def events(self) -> list[dict]:
        """Recorded events: brokers added, removed and restarted (from startTimestamp), and traffic spikes (the
        cluster's message rate up by half or more from one snapshot to the next)."""
        out = []
        for i in range(1, len(self.times)):
            t = int(self.times[i])
            for b, name in enumerate(self.brokers):
                was, now = self.live[i - 1, b], self.live[i, b]
                if now and not was:
                    out.append({"ts": t, "type": "broker-added", "broker": name})
                elif was and not now:
                    out.append({"ts": t, "type": "broker-removed", "broker": name})
                elif was and now and self.start[i, b] != self.start[i - 1, b]:
                    out.append({"ts": t, "type": "broker-restarted", "broker": name})
            before = float(self.traffic[i - 1][:, :2].sum())
            after = float(self.traffic[i][:, :2].sum())
            if before > 0 and after >= 1.5 * before:
                out.append({"ts": t, "type": "traffic-spike", "broker": None})
        return out


def _one_report_per_bundle(bundles: pd.DataFrame, brokers: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One report per bundle and snapshot, and a note on those left out. A broker rewrites its load report in the
    metadata store only when its load moved by ``loadBalancerReportUpdateThresholdPercentage`` or every
    ``loadBalancerReportUpdateMaxIntervalMinutes`` (``ModularLoadManagerImpl.needBrokerDataUpdate``; one bundle less
    of twenty is a 5 % move), so after a bundle moves, the old owner's report can still list it beside the new
    owner's. Pulsar's leader then counts it on both (``updateBundleData`` reads every broker's ``lastStats``); the
    history has one owner per bundle: the broker whose report is newest (``lastUpdate``; equal, the first by name)."""
    if bundles.empty or not bundles.duplicated(["t_ms", "bundle"]).any():
        return bundles, []
    column = brokers["last_update_ms"] if "last_update_ms" in brokers else pd.Series(0, index=brokers.index)
    updated = column.fillna(0).groupby([brokers["t_ms"], brokers["broker"]]).max()
    keys = pd.MultiIndex.from_arrays([bundles["t_ms"], bundles["broker"]])
    ranked = bundles.assign(_updated=updated.reindex(keys).fillna(0).to_numpy()).sort_values(
        ["t_ms", "bundle", "_updated", "broker"], ascending=[True, True, False, True])
    kept = ranked.drop_duplicates(["t_ms", "bundle"]).drop(columns="_updated")
    shared = ranked[ranked.duplicated(["t_ms", "bundle"], keep=False)]
    first = shared[(shared["t_ms"] == shared["t_ms"].iloc[0]) & (shared["bundle"] == shared["bundle"].iloc[0])]
    when = pd.Timestamp(int(first["t_ms"].iloc[0]), unit="ms", tz="UTC").strftime("%H:%M")
    return kept, [f"{len(bundles) - len(kept)} bundle report(s) left out: a newer load report of another broker holds "
                  f"the bundle too, a move the older report had not caught up with (e.g. {first['bundle'].iloc[0]} at "
                  f"{when}: {first['broker'].iloc[0]}'s report kept, {', '.join(first['broker'].iloc[1:])}'s left out)"]


def _long(value) -> int:
    """A Java long the rows carry as a float (a column with a null in it): Long.MAX_VALUE comes back as 2^63, one past
    what the array holds, so it is held to the array's range (a start time only tells restarts apart); null is 0."""
    if pd.isna(value):
        return 0
    return int(min(max(value, -(2**63)), 2**63 - 1))


def build_history(cluster: str, brokers: pd.DataFrame, bundles: pd.DataFrame, gaps: str = "raise") -> History:
    """``brokers``/``bundles``: bronze ``broker_reports``/``bundle_reports`` rows of ``cluster`` (any order).
    ``gaps="longest"``: a history with gaps keeps its longest stretch without one (the nightly job must not stop on
    a missing hour), and the history's notes say which; ``"raise"``: a gap is an error naming where it is."""
    if brokers.empty:
        raise ValueError(f"cluster {cluster!r}: no broker reports in the history")
    ts = lambda s: (pd.to_datetime(s, utc=True).astype("int64") // 1_000_000).to_numpy(np.int64)  # noqa: E731
    brokers = brokers.assign(t_ms=ts(brokers["snapshot_ts"]))
    bundles = bundles.assign(t_ms=ts(bundles["snapshot_ts"])) if not bundles.empty else bundles.assign(t_ms=[])
    times = np.unique(brokers["t_ms"].to_numpy())
    gap_notes = []
    if gaps == "longest":
        times, gap_notes = _longest_stretch(cluster, times)
        brokers = brokers[brokers["t_ms"].isin(times)]
        bundles = bundles[bundles["t_ms"].isin(times)] if not bundles.empty else bundles
    _check_gaps(cluster, times)
    names = sorted(brokers["broker"].unique())
    bix = {b: i for i, b in enumerate(names)}
    s_of = {int(t): i for i, t in enumerate(times)}
    S, B = len(times), len(names)
    live = np.zeros((S, B), bool)
    limits = np.full((S, B, len(RESOURCES)), np.nan)
    usage = np.full((S, B, len(RESOURCES)), np.nan)
    start = np.full((S, B), -1, np.int64)
    meta: dict[str, dict] = {}
    for r in brokers.sort_values("t_ms").itertuples(index=False):
        s, b = s_of[int(r.t_ms)], bix[r.broker]
        live[s, b] = True
        limits[s, b] = [getattr(r, f"{res}_limit") for res in RESOURCES]
        usage[s, b] = [getattr(r, f"{res}_usage") for res in RESOURCES]
        start[s, b] = _long(r.start_timestamp_ms)
        meta[r.broker] = {k: v for k, v in (("brokerVersionString", r.broker_version),
                                            ("loadManagerClassName", r.load_manager)) if isinstance(v, str) and v}
        for column, key in SERVES.items():  # which topics it serves, where the report said (placement reads them)
            value = getattr(r, column, None)
            if isinstance(value, (bool, np.bool_)):
                meta[r.broker][key] = bool(value)
    limits = pd.DataFrame(limits.reshape(S, -1)).ffill().bfill().to_numpy().reshape(S, B, len(RESOURCES))
    bnames = sorted(bundles["bundle"].unique()) if not bundles.empty else []
    nix = {b: i for i, b in enumerate(bnames)}
    N = len(bnames)
    present = np.zeros((S, N), bool)
    traffic = np.zeros((S, N, len(TRAFFIC)))
    clients = np.zeros((S, N, len(CLIENTS)))
    topics = np.zeros((S, N), np.int64)
    owner = np.full((S, N), -1, np.int64)
    notes = list(gap_notes)
    unknown = bundles[~bundles["broker"].isin(bix)] if not bundles.empty else bundles
    if len(unknown):
        notes.append(f"{len(unknown)} bundle row(s) from brokers without a load report were left out")
    known, stale = _one_report_per_bundle(bundles[bundles["broker"].isin(bix)] if N else bundles, brokers)
    notes += stale
    for r in known.itertuples(index=False) if N else ():
        s, n = s_of.get(int(r.t_ms)), nix[r.bundle]
        if s is None:
            continue  # a bundle row of a snapshot without broker reports
        present[s, n] = True
        traffic[s, n] = [float(getattr(r, c) or 0.0) for c in TRAFFIC]
        clients[s, n] = [int(getattr(r, c) or 0) for c in CLIENTS]
        topics[s, n] = int(r.topics or 0)
        owner[s, n] = bix[r.broker]
    return History(cluster, times, names, live, limits, usage, start, meta, bnames, present, traffic, clients, topics,
                   owner, notes)


def _longest_stretch(cluster: str, times: np.ndarray) -> tuple[np.ndarray, list[str]]:
    if len(times) < 3:
        return times, []
    steps = np.diff(times)
    cuts = np.flatnonzero(steps > MAX_GAP_FACTOR * float(np.median(steps))) + 1
    if not len(cuts):
        return times, []
    parts = np.split(times, cuts)
    best = max(parts, key=len)
    iso = lambda t: pd.to_datetime(int(t), unit="ms", utc=True).isoformat()  # noqa: E731
    return best, [f"cluster {cluster!r}: the history has {len(cuts)} gap(s); simulated its longest stretch without one, "
                  f"{iso(best[0])} to {iso(best[-1])} ({len(best)} of {len(times)} snapshots)"]


def _check_gaps(cluster: str, times: np.ndarray) -> None:
    if len(times) < 2:
        raise ValueError(f"cluster {cluster!r}: the history needs two snapshots or more, it has {len(times)}")
    steps = np.diff(times)
    typical = float(np.median(steps))
    gaps = np.flatnonzero(steps > MAX_GAP_FACTOR * typical)
    if len(gaps):
        at = pd.to_datetime(int(times[gaps[0]]), unit="ms", utc=True).isoformat()
        raise ValueError(f"cluster {cluster!r}: the history has a gap of {steps[gaps[0]] / 60_000:.0f} minutes after "
                         f"{at} (typical interval {typical / 60_000:.0f} minutes); simulate the days on either side "
                         "separately")
