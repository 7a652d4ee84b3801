"""``lb-pipeline collect``: its options, the admin client and metadata store they make, and a SIGTERM that
unwinds (the snapshot itself: ``snapshots.collect``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from lb_pipeline.cli_types import broker_log, count, lead, positive, size


def add_command(sub) -> None:
    c = sub.add_parser("collect", help="take one snapshot of a live cluster through the admin REST API")
    c.add_argument("--admin-url", required=True, help="e.g. http://pulsar-broker:8080 or https://…:8443")
    c.add_argument("--out", default="landing", help="landing folder (default ./landing)")
    c.add_argument("--cluster", help="cluster name (default: the first the admin API lists)")
    c.add_argument("--token", help="auth token (prefer $LB_PULSAR_TOKEN or --token-file; never printed)")
    c.add_argument("--token-file")
    c.add_argument("--ca-file", help="CA bundle for TLS")
    c.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    c.add_argument("--broker-url-template", help="how to reach a broker, e.g. 'https://{host}:8443' (default: admin scheme + broker id)")
    c.add_argument("--timeout", type=positive, default=10.0, help="seconds per request (default 10)")
    c.add_argument("--retries", type=count, default=2, help="retries per request (default 2)")
    c.add_argument("--max-response-bytes", type=size, default=512 * 1024 * 1024,
                   help="largest response accepted, bytes (default 512 MiB); larger marks the part missing")
    c.add_argument("--metadata-store", help="also read what the leader decides from (its copies of the load reports, "
                   "BundleData, broker time averages, its identity) from the metadata store, read only: "
                   "zk:host:port[,host:port...][/chroot], as the brokers' metadataStoreUrl")
    c.add_argument("--metadata-store-auth", help="ZooKeeper auth as scheme:credential, e.g. digest:user:password")
    c.add_argument("--metadata-store-tls", action="store_true", help="connect to ZooKeeper over TLS (with --ca-file, "
                   "--metadata-store-cert and --metadata-store-key as needed)")
    c.add_argument("--metadata-store-cert", help="client certificate for ZooKeeper TLS")
    c.add_argument("--metadata-store-key", help="client key for ZooKeeper TLS")
    c.add_argument("--broker-log", action="append", type=broker_log, metavar="BROKER=PATH",
                   help="a broker's log file (host:port=path), repeatable: its load-balancer lines since the previous "
                   "snapshot are kept in logs/ (unloads, splits and shedding cycles the leader logged)")
    c.add_argument("--before-cycle", type=lead, metavar="SECONDS",
                   help="time the snapshot so that the metadata store is read this many seconds before the leader's "
                   "next shedding cycle, predicted from the leader's log (needs --metadata-store and the leader's "
                   "--broker-log; waits up to one loadBalancerSheddingIntervalMinutes): the replay then sees what "
                   "the leader decided from")
    c.add_argument("--every", type=positive, metavar="SECONDS",
                   help="keep collecting: a snapshot every SECONDS until stopped (or --count); with --metadata-store, "
                   "every write of the brokers' load reports in between is kept too (lb/report-writes.jsonl), from "
                   "which the leader's bundle averages are replayed exactly instead of estimated")
    c.add_argument("--count", type=count, metavar="N", help="with --every: stop after N snapshots")
    c.add_argument("--parallel", type=count, default=8, help="brokers asked at once (default 8)")
    c.add_argument("--snapshot-deadline", type=positive, metavar="SECONDS", help="brokers not reached this long "
                   "after the start are left missing, with the reason (default: none)")
    c.add_argument("--quiet", action="store_true", help="no progress lines (by default one per broker on a "
                   "terminal, one every 30 s otherwise)")
    c.set_defaults(func=_collect)


def _collect(args) -> int:
    import time

    from lb_pipeline.errors import LbError
    from lb_pipeline.snapshots.collect import collect
    from lb_pipeline.snapshots.report_watch import ReportWatcher

    store = store_from_args(args)
    stop_on_sigterm()  # a SIGTERM unwinds: the unfinished snapshot's temporary folder is removed
    watcher = ReportWatcher(store).start() if store is not None and args.every else None
    code, taken = 0, 0
    try:
        while True:
            started = time.monotonic()
            try:
                path = collect(client_from_args(args), args.out, args.cluster,
                               progress=None if not args.quiet else False, store=store,
                               broker_logs=dict(args.broker_log or []), before_cycle_s=args.before_cycle,
                               parallel=args.parallel, deadline_s=args.snapshot_deadline, watcher=watcher)
            except LbError as exc:
                if not args.every:
                    raise
                print(f"no snapshot this time: {exc}", file=sys.stderr, flush=True)  # the next one may get through
                code, taken = 3, taken + 1
                if args.count and taken >= args.count:
                    return code
                time.sleep(max(0.0, args.every - (time.monotonic() - started)))
                continue
            manifest = json.loads((path / "manifest.json").read_text())
            state = "complete" if manifest["complete"] else f"INCOMPLETE, missing {', '.join(manifest['missingParts'])}"
            print(f"snapshot written to {path} ({state})", flush=True)
            code = max(code, 0 if manifest["complete"] else 3)
            taken += 1
            if not args.every or (args.count and taken >= args.count):
                return code
            time.sleep(max(0.0, args.every - (time.monotonic() - started)))
    finally:
        if watcher is not None:
            watcher.stop()
        if store is not None:
            store.close()


def stop_on_sigterm() -> None:
    """SIGTERM (a service manager stopping ``collect``, a cron timeout) unwinds like Ctrl-C: the unfinished
    snapshot's temporary folder is removed on the way out (``SnapshotWriter.abort``). Python's default ended the
    process where it stood and left the folder behind."""
    import signal

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def client_from_args(args):
    from lb_pipeline.snapshots.admin_client import AdminClient

    token = args.token or os.environ.get("LB_PULSAR_TOKEN")
    if args.token_file:
        token = Path(args.token_file).read_text().strip()
    return AdminClient(args.admin_url, token=token, timeout=args.timeout, retries=args.retries, ca_file=args.ca_file,
                       insecure=args.insecure, broker_url_template=args.broker_url_template,
                       max_bytes=args.max_response_bytes)


def store_from_args(args):
    """The metadata store ``--metadata-store`` names, connected (read only), or None."""
    if not getattr(args, "metadata_store", None):
        return None
    from lb_pipeline.snapshots.metadata_store import StoreUrl, ZooKeeperStore

    return ZooKeeperStore(StoreUrl.parse(args.metadata_store), timeout=args.timeout, auth=args.metadata_store_auth,
                          use_ssl=args.metadata_store_tls, ca_file=args.ca_file, cert_file=args.metadata_store_cert,
                          key_file=args.metadata_store_key)
