"""The modular leader's per-bundle averages where a history starts, and how often the leader samples them.

The leader updates every bundle's ``BundleData`` (``TimeAverageMessageData``: a running mean of 10 samples short
term, 1000 long term) each time any broker rewrites its load report (``handleDataNotification`` → ``updateAll``), not
once a minute: the recorded real runs grew ``numSamples`` by 5-12 a minute. And the averages have a past: when a
history starts the leader already holds them, built from the traffic before it. A simulation that starts every
bundle afresh at the first snapshot, one sample a minute, splits a bundle whose traffic has just risen (its
long-term mean is the new rate at once) and keeps a ten-minute short-term window where the leader's spans one or two.

Both come from the ``BundleData`` the leader stores in the metadata store (``lb/bundle-data``, ``collect
--metadata-store``; ``bronze/bundle_data``):

* ``stored``/``samples``/``values``: the stored averages and sample counts at each snapshot that holds them, brought
  from when the leader wrote them to the snapshot (``written``);
* where the collector kept every report write (``collect --every … --metadata-store``), the averages replayed from
  them (``simulation.written_replay``: the leader's own, as they stood after the snapshot's last write) in place of
  its stored copies brought forward (rows with ``replayed`` true: ``with_replayed``);
* ``per_minute``: how fast ``numSamples`` grew between snapshots (per pair of snapshots the median over the bundles
  stored at both, whose long window is not full yet; summed over the pairs, divided by their minutes), else the
  brokers' logged report writes a minute (every broker's ``Writing local data`` line) and one sample per
  ``loadBalancerResourceQuotaUpdateIntervalMinutes`` (the leader's own, before it stores its averages), else one a
  minute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from lb_pipeline.algorithms.time_average import LONG_SAMPLES, SHORT_SAMPLES, update_many

FIELDS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")  # History.TRAFFIC order
WINDOWS = {"short": SHORT_SAMPLES, "long": LONG_SAMPLES}
COLUMNS = ("bundle", "snapshot_ts", *(f"{w}_{c}" for w in WINDOWS for c in ("num_samples", *FIELDS)))
DEFAULT_PER_MINUTE = 1.0


@dataclass(frozen=True)
class LeaderAverages:
    stored: np.ndarray  # (S, N) bool: the snapshots' BundleData per bundle (History.bundles order)
    samples: dict[int, np.ndarray]  # window (10, 1000) → (S, N) numSamples at each snapshot's time
    values: dict[int, np.ndarray]  # window → (S, N, 4) averages at each snapshot's time, FIELDS order
    per_minute: float  # the leader's samples of every bundle a minute
    source: str  # where ``per_minute`` comes from, for the notes
    # (N, 4) the ResourceQuota an admin set per bundle, FIELDS order (NaN: none): what the leader starts a bundle's
    # averages from where it has no stored BundleData (getBundleDataOrDefault); None: none was collected
    quota: np.ndarray | None = None
    replayed: int = 0  # snapshots whose averages were replayed from every report write

    def note(self) -> str:
        held = int(self.stored.any(0).sum())
        start = (f"each snapshot's stored BundleData ({held} bundle(s)) sets the leader's averages of the bundles the "
                 "simulation has where Pulsar had them" if held else "no snapshot holds the leader's BundleData "
                 "(collect --metadata-store): every bundle's averages start from Pulsar's default")
        if self.replayed:
            start += (f", at {self.replayed} snapshot(s) the leader's own, replayed from every load report the brokers "
                      "wrote")
        return f"{start}; the leader samples every bundle {self.per_minute:.1f} times a minute ({self.source})"


def with_replayed(rows: pd.DataFrame, replayed: pd.DataFrame | None) -> pd.DataFrame:
    """The leader's stored ``BundleData`` rows (``COLUMNS``) with, at each snapshot where the averages were
    replayed from every report write (``replayed``: rows of ``COLUMNS``, ``silver/bundle_time_averages`` with
    ``seeded_from`` = ``report-writes`` or ``written_replay.replay``), those in their place (``replayed`` true)."""
    if replayed is None or replayed.empty:
        return rows
    at = set(epoch_ms(replayed["snapshot_ts"]).tolist())
    kept = rows[~epoch_ms(rows["snapshot_ts"]).isin(at)] if not rows.empty else rows
    return pd.concat([kept.assign(replayed=False), replayed[list(COLUMNS)].assign(replayed=True)], ignore_index=True)


def epoch_ms(times: pd.Series) -> pd.Series:
    """Epoch milliseconds of timestamps (naive ones are UTC, as Spark's session time zone gives them)."""
    return (pd.to_datetime(times, utc=True) - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(milliseconds=1)


def written_at(shots: pd.DataFrame) -> dict[int, int]:
    """Snapshot time → when the leader wrote the ``BundleData`` it holds (both epoch ms), from rows with
    ``snapshot_ts`` and ``bundle_data_written_ms`` (``bronze/snapshots``); snapshots without it left out."""
    shots = shots.dropna(subset=["bundle_data_written_ms"])
    return dict(zip(epoch_ms(shots["snapshot_ts"]).tolist(), shots["bundle_data_written_ms"].astype("int64").tolist()))


def report_writes_per_minute(events: list[dict], start: int, end: int) -> float | None:
    """Every broker's logged report writes (``bronze/lb_events`` rows of kind ``report-written``) a minute over
    ``start``..``end`` (epoch ms); None without any (no log, or a log without them)."""
    ms = (int(pd.Timestamp(r["event_ts"]).timestamp() * 1000) for r in events if r["kind"] == "report-written")
    writes = sum(1 for t in ms if start <= t <= end)
    return writes / ((end - start) / 60_000) if writes and end > start else None


def samples_per_minute(rows: pd.DataFrame) -> float | None:
    """How fast the stored long-term ``numSamples`` grew (module docstring); None when no pair of snapshots shows it."""
    if rows.empty:
        return None
    n = rows.pivot_table(index="snapshot_ts", columns="bundle", values="long_num_samples", aggfunc="max").sort_index()
    if len(n) < 2:
        return None
    grown, minutes = 0.0, 0.0
    times = n.index.to_list()
    for k in range(1, len(times)):
        before, now = n.iloc[k - 1], n.iloc[k]
        ok = before.notna() & now.notna() & (now >= before) & (now < LONG_SAMPLES)
        if not ok.any():
            continue
        grown += float(np.median((now[ok] - before[ok]).to_numpy()))
        minutes += (pd.Timestamp(times[k]) - pd.Timestamp(times[k - 1])).total_seconds() / 60.0
    return grown / minutes if minutes > 0 and grown > 0 else None


def stored_every(config) -> float:
    """``loadBalancerResourceQuotaUpdateIntervalMinutes``: how often the leader stores its averages, sampling every
    bundle once more just before."""
    return config.get_float("loadBalancerResourceQuotaUpdateIntervalMinutes")


def own_samples_per_minute(every: float | None) -> float:
    """The leader's own samples a minute, one before each time it stores its averages (none when it never does)."""
    return 1.0 / every if every and every > 0 else 0.0


def leader_averages(history, rows: pd.DataFrame | None, events: list[dict] | None = None,
                    written: dict[int, int] | None = None, stored_every: float | None = None,
                    quotas: pd.DataFrame | None = None) -> LeaderAverages:
    """``rows``: ``bronze/bundle_data`` rows (``COLUMNS``) of the history's snapshots, None or empty where none were
    collected; ``events``: the brokers' logged events (``bronze/lb_events`` rows), if collected;
    ``written``: snapshot time → when the leader wrote the ``BundleData`` it holds (epoch ms): the samples it took
    between then and the snapshot are taken again, of the snapshot's traffic, as ``transforms.time_averages`` does;
    ``stored_every``: ``loadBalancerResourceQuotaUpdateIntervalMinutes``, the leader sampling once more before each
    time it stores its averages (with the logged report writes, every sample of the probe record:
    ``leader_samples``); ``quotas``: ``bronze/resource_quotas`` rows (the newest per bundle counts)."""
    S, N = len(history.times), len(history.bundles)
    stored = np.zeros((S, N), bool)
    samples = {w: np.zeros((S, N), np.int64) for w in WINDOWS.values()}
    values = {w: np.zeros((S, N, len(FIELDS))) for w in WINDOWS.values()}
    rows = pd.DataFrame(columns=list(COLUMNS)) if rows is None else rows
    rate = samples_per_minute(rows)
    source = "the growth of its stored numSamples"
    logged_per_minute = report_writes_per_minute(events or [], int(history.times[0]), int(history.times[-1]))
    if rate is None and logged_per_minute:
        rate = logged_per_minute + own_samples_per_minute(stored_every)
        source = "the brokers' logged report writes and the leader's own sample before each stored write"
    elif rate is None:
        rate, source = DEFAULT_PER_MINUTE, "one a minute: neither stored BundleData nor broker logs show it"
    if not rows.empty:
        times = {int(t): s for s, t in enumerate(history.times.tolist())}
        index = {b: k for k, b in enumerate(history.bundles)}
        ms = epoch_ms(rows["snapshot_ts"]).map(times)
        k = rows["bundle"].map(index)
        keep = (ms.notna() & k.notna()).to_numpy()
        s_at, k_at = ms[keep].astype(int).to_numpy(), k[keep].astype(int).to_numpy()
        keep_present = history.present[s_at, k_at]
        s_at, k_at = s_at[keep_present], k_at[keep_present]
        picked = rows[keep][keep_present]
        stored[s_at, k_at] = True
        for name, w in WINDOWS.items():
            samples[w][s_at, k_at] = picked[f"{name}_num_samples"].astype("int64").to_numpy()
            values[w][s_at, k_at] = picked[[f"{name}_{f}" for f in FIELDS]].astype(float).to_numpy()
        # replayed averages are the leader's as of the snapshot's last report write: nothing to bring forward
        replayed = set(s_at[picked["replayed"].fillna(False).astype(bool).to_numpy()].tolist()) \
            if "replayed" in picked.columns else set()
        for s, t in enumerate(history.times.tolist()):
            at = (written or {}).get(int(t))
            if at is None or not stored[s].any() or s in replayed:
                continue
            stale = np.where(stored[s], max(0, round((int(t) - at) / 60_000 * rate)), 0)[:, None]
            for w in WINDOWS.values():
                n, values[w][s] = update_many(samples[w][s][:, None], values[w][s], history.traffic[s], stale, w)
                samples[w][s] = n[:, 0]
    else:
        replayed = set()
    return LeaderAverages(stored, samples, values, float(rate), source, quota_values(history.bundles, quotas),
                          len(replayed))


QUOTA_COLUMNS = ("msg_rate_in", "msg_rate_out", "bandwidth_in", "bandwidth_out")  # → FIELDS, as Pulsar copies them


def quota_values(bundles: list[str], quotas: pd.DataFrame | None) -> np.ndarray | None:
    """(N, 4) each bundle's newest ``ResourceQuota`` as the averages ``getBundleDataOrDefault`` starts from (rates,
    bandwidths as throughputs), NaN where it has none; None without any."""
    if quotas is None or quotas.empty:
        return None
    index = {b: k for k, b in enumerate(bundles)}
    newest = quotas.sort_values("snapshot_ts", kind="stable").drop_duplicates("bundle", keep="last")
    newest = newest[newest["bundle"].isin(index)]
    if newest.empty:
        return None
    out = np.full((len(bundles), len(FIELDS)), np.nan)
    out[newest["bundle"].map(index).to_numpy()] = newest[list(QUOTA_COLUMNS)].astype(float).to_numpy()
    return out
