"""What ``collect`` reads besides the admin API: what the leader decides from (the metadata store's copies), what it
did (its brokers' log lines), and when it decides next (``--before-cycle``, ``leader_cycle``). ``snap`` is the
snapshot being written (its ``writer``, and ``fail`` for a part that could not be read)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lb_pipeline.snapshots import layout, leader_cycle
from lb_pipeline.snapshots.admin_client import AdminClient, RequestFailed

REPORTS_LEAD_MS = 250  # --before-cycle: the brokers' load reports are read this long before the predicted cycle


def wait_for_cycle(client: AdminClient, cluster_dir: Path, leader_id: str | None, logs: dict[str, str],
                   lead_s: float, say: Callable[[str], None]) -> dict | None:
    """``leader_cycle.wait_for_cycle`` with the leader's interval from its runtime config; None (and no wait) when
    the leader or its log is unknown, or the log shows no cycle yet."""
    if not leader_id or leader_id not in logs:
        say(f"--before-cycle: no log given for the leader ({leader_id or 'unknown'}): not timed")
        return None
    anchor = leader_cycle.last_anchor(logs[leader_id], leader_id)
    if anchor is None:
        say(f"--before-cycle: {logs[leader_id]} shows no shedding cycle or election: not timed")
        return None
    try:
        runtime = client.get("/admin/v2/brokers/configuration/runtime", client.broker_url(leader_id))
    except RequestFailed:
        runtime = None
    interval, interval_from = leader_cycle.interval_ms(runtime)
    cycle = leader_cycle.wait_for_cycle(logs[leader_id], leader_id, anchor, interval, int(lead_s * 1000),
                                        cluster_dir, say)
    return {**cycle, "intervalFrom": interval_from}


def leader_inputs(store, snap, brokers: list[str], leader_id, say: Callable[[str], None],
                  cycle: dict | None = None) -> tuple[str | None, dict]:
    """The metadata store's copies replace the REST load reports: they are what the leader acts on (written when
    usage moved past ``loadBalancerReportUpdateThresholdPercentage``, so their ``lastStats`` may be of an earlier
    stats cycle than ``topics/``: ``sources["lb/brokers"] = "metadata-store"`` tells the checks)."""
    from lb_pipeline.snapshots.metadata_store import read_leader_inputs

    def before_reports():  # timed: the load reports as close to the cycle as can be, written before it
        leader_cycle.sleep_until(cycle["expectedMs"] - REPORTS_LEAD_MS)
        cycle["reportsReadMs"] = leader_cycle.now_ms()

    got = read_leader_inputs(store, brokers, before_reports if cycle is not None else None)
    for rel, doc in got.files.items():
        snap.write(rel, doc)
    for rel, why in got.problems.items():
        snap.fail(rel, f"metadata store {store.url.hosts}{store.url.chroot}: {why}")
    leader_copies = sorted(b for b in brokers if layout.local_broker_data(b) in got.files)
    quotas = sum(r.startswith("lb/resource-quota/") for r in got.files)
    say(f"metadata store: {len(leader_copies)} leader's broker reports, "
        f"{sum(r.startswith('lb/bundle-data/') for r in got.files)} BundleData"
        + (f", {quotas} bundle resource quotas" if quotas else ""))
    sources = {"lb/brokers": "metadata-store", "lb/bundle-data": "metadata-store",
               "lb/broker-time-average": "metadata-store", "lb/resource-quota": "metadata-store",
               "metadataStore": f"{store.url.hosts}{store.url.chroot}"}
    rest_kept = [b for b in brokers if b not in leader_copies]
    if rest_kept:  # not written yet (a broker just started), or registered by the extensible load manager
        sources["restLoadReports"] = rest_kept
    if got.lookup_only:
        sources["extensibleLookupData"] = got.lookup_only
    if got.left_out:
        sources["bundleDataLeftOut"] = sorted(set(got.left_out))
    if got.bundle_data_written_ms is not None:
        sources["bundleDataWrittenMs"] = got.bundle_data_written_ms
    return leader_id or got.leader, sources


def broker_logs(snap, logs: dict[str, str], ts: int, say: Callable[[str], None]) -> dict[str, int]:
    """Each broker's load-balancer log lines since the cluster's previous snapshot, into ``logs/``."""
    from lb_pipeline.snapshots.broker_logs import copy_events

    previous = snap.writer.previous_snapshot_ms()
    counts = {}
    for broker, path in logs.items():
        rel = layout.broker_log(broker)
        try:
            counts[broker] = copy_events(path, snap.writer.path(rel), previous, ts)
        except OSError as exc:
            snap.fail(rel, f"broker log {path}: {exc.strerror or exc}")
    say(f"broker logs: {sum(counts.values())} load-balancer lines")
    return counts


def report_writes(snap, watcher, say: Callable[[str], None]) -> dict:
    """The brokers' report writes the watcher kept since the snapshot before, into ``lb/report-writes.jsonl``; a
    gap (writes dropped for memory, store errors) is a missing part with its reason."""
    from lb_pipeline.snapshots.report_watch import lines

    writes, dropped, errors = watcher.take()
    snap.writer.path(layout.REPORT_WRITES).write_text(lines(writes), encoding="utf-8")
    gaps = ([f"{dropped} earlier report writes dropped (more than the watcher keeps)"] if dropped else []) + [
        f"the metadata store failed while watching: {e}" for e in errors[:1]]
    if gaps:
        snap.fail(layout.REPORT_WRITES, "; ".join(gaps))
    say(f"report writes: {len(writes)} since the snapshot before")
    return {"writes": len(writes), "since": writes[0]["mtime"] if writes else None, "dropped": dropped}
