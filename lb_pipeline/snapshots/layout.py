"""Where each part of a snapshot lives, relative to the snapshot directory (docs/snapshot-format.md).

A landing folder holds ``<cluster>/<YYYY-MM-DDTHH-MM-SSZ>/`` snapshot directories. A directory is complete
once ``manifest.json`` exists: writers create the directory under a temporary name and rename it at the end.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from lb_pipeline.errors import LbError
from lb_pipeline.model.names import entity_problem
from lb_pipeline.processes import alive
from lb_pipeline.snapshots import javajson

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
BROKERS = "brokers.json"
DYNAMIC_CONFIG = "config/dynamic.json"
FAILURE_DOMAINS = "cluster/failure-domains.json"
ISOLATION_POLICIES = "cluster/isolation-policies.json"  # optional: namespace isolation policies (name → policy)
LOGS = "logs"  # optional: the brokers' load-balancer log lines (collect --broker-log)
# optional: every write of the brokers' load reports since the snapshot before (collect --every with --metadata-store)
REPORT_WRITES = "lb/report-writes.jsonl"
TS_FORMAT = "%Y-%m-%dT%H-%M-%SZ"
# A snapshot directory's name in ASCII digits only: strptime also reads other scripts' digits, so "…T0١-00-00Z"
# (an Arabic-Indic one) had named the same instant as "…T01-00-00Z" and broken both snapshots.
TS_NAME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}Z")


def broker_file_stem(broker: str) -> str:
    """Broker ids are ``host:port``; Hadoop paths cannot hold ``:``, so files are named ``host_port``."""
    host, sep, port = broker.rpartition(":")
    return f"{host}_{port}" if sep and port.isdigit() else broker


def broker_from_file_stem(stem: str) -> str:
    host, sep, port = stem.rpartition("_")
    return f"{host}:{port}" if sep and port.isdigit() else stem


def runtime_config(broker: str) -> str:
    return f"config/runtime/{broker_file_stem(broker)}.json"


def local_broker_data(broker: str) -> str:
    return f"lb/brokers/{broker_file_stem(broker)}.json"


def file_name(name: str) -> str:
    """A Pulsar name (``NamedEntity``: letters, digits, ``_ - = : .``) as a file or folder name of the format,
    reversibly (``name_of``): ``:`` (which Hadoop paths cannot hold, and the landing's file-name rule refuses)
    becomes ``=3A`` and ``=`` itself ``=3D``; the other characters are the name's own."""
    return name.replace("=", "=3D").replace(":", "=3A")


def name_of(file_name: str) -> str:
    """The name ``file_name`` encodes (a name written before the encoding, without ``=3A``/``=3D``, is itself)."""
    return re.sub(r"=(3A|3D)", lambda m: {"3A": ":", "3D": "="}[m.group(1)], file_name)


def bundle_data(bundle_full_name: str) -> str:
    """``lb/bundle-data/<tenant>/<namespace>/<range>.json``, each part through ``file_name`` (a namespace
    ``clicks:v2`` is ``clicks=3Av2``): the path is the only place the bundle's name is kept."""
    return "lb/bundle-data/" + "/".join(file_name(p) for p in bundle_full_name.split("/")) + ".json"


def resource_quota(bundle_full_name: str) -> str:
    """``lb/resource-quota/<tenant>/<namespace>/<range>.json``: a bundle's ``ResourceQuota`` an admin set (named as
    ``bundle_data``)."""
    return "lb/resource-quota/" + "/".join(file_name(p) for p in bundle_full_name.split("/")) + ".json"


def broker_time_average(broker: str) -> str:
    return f"lb/broker-time-average/{broker_file_stem(broker)}.json"


def broker_load_data(broker: str) -> str:  # optional, extensible load manager
    return f"lb/broker-load-data/{broker_file_stem(broker)}.json"


def top_bundles(broker: str) -> str:  # optional, extensible load manager
    return f"lb/top-bundles/{broker_file_stem(broker)}.json"


def broker_log(broker: str) -> str:  # optional: the broker's load-balancer log lines since the previous snapshot
    return f"{LOGS}/{broker_file_stem(broker)}.log"


def topic_stats(broker: str) -> str:
    return f"topics/{broker_file_stem(broker)}.json"


def ownership(broker: str) -> str:
    return f"ownership/{broker_file_stem(broker)}.json"


def namespace_file(namespace: str) -> str:
    """``namespaces/<tenant>/<ns>.json`` (v1: ``namespaces/<tenant>/<cluster>/<ns>.json``); a ``:`` (heartbeat
    namespaces end with ``host:port``) becomes ``_`` as in broker file names, and the JSON names the namespace.
    A part too long for a file name (Pulsar sets no length) is cut, with a digest of the whole name keeping it
    apart from any other."""
    return "namespaces/" + "/".join(_fits(p.replace(":", "_"), ".json" if i == namespace.count("/") else "")
                                    for i, p in enumerate(namespace.split("/"))) + ".json"


_MOST_BYTES = 200  # of a file name the format writes (file systems allow 255; Hadoop and a suffix need some)


def _fits(part: str, suffix: str = "") -> str:
    if len(part.encode()) + len(suffix) <= _MOST_BYTES:
        return part
    import hashlib

    return f"{part[:_MOST_BYTES - 40]}=h{hashlib.sha256(part.encode()).hexdigest()[:24]}"


NAMESPACE_GLOBS = ("namespaces/*/*.json", "namespaces/*/*/*.json")


def namespace_files(snapshot: Path) -> list[Path]:
    """The snapshot's namespace files where ``NAMESPACE_GLOBS`` puts them, found without following a link to a folder
    and without looking deeper: ``rglob`` overflowed Python's recursion on a folder thousands of levels deep."""
    top, found = Path(snapshot) / "namespaces", []
    for folder, dirs, files in os.walk(top):  # os.walk never follows a link to a folder
        depth = len(Path(folder).relative_to(top).parts)
        if depth >= 2:
            dirs.clear()
        found += [Path(folder, f) for f in files if depth and f.endswith(".json")]
    return sorted(found)


def find_snapshots(root: Path) -> list[Path]:
    """Every directory at or under ``root`` holding a manifest (not looking inside one), searched with a stack,
    not recursion, and never through a link; folders that cannot be listed are passed over."""
    found, stack = [], [Path(root)]
    while stack:
        folder = stack.pop()
        if (folder / MANIFEST).is_file():
            found.append(folder)
            continue
        try:
            stack += [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
    return sorted(found)


def snapshot_dir_name(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).strftime(TS_FORMAT)


def snapshot_day(dir_name: str) -> str | None:
    """The UTC day of a snapshot directory name, or None if the name is not a valid snapshot time."""
    if not TS_NAME.fullmatch(dir_name):
        return None
    try:
        return datetime.strptime(dir_name, TS_FORMAT).strftime("%Y-%m-%d")
    except ValueError:
        return None


def day_problem(day: str) -> str | None:
    """Why ``day`` is not a UTC day as the pipeline names them (YYYY-MM-DD, a real date), or None."""
    try:
        if datetime.strptime(day, "%Y-%m-%d").strftime("%Y-%m-%d") == day:  # strptime alone takes 2026-1-5
            return None
    except (TypeError, ValueError):
        pass
    return f"{day!r} is not a day (YYYY-MM-DD)"


def snapshot_date(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


def folders_in(folder: str | Path, problems: list[tuple[Path, str]] | None = None) -> list[Path]:
    """The folders directly in ``folder``, by name, none through a link. A folder that cannot be listed (its
    permissions, vanished meanwhile, not a folder) holds none, and ``problems`` gets it with why: one unreadable
    cluster folder must not stop the others."""
    try:
        with os.scandir(folder) as entries:
            return sorted(Path(e.path) for e in entries if _is_folder(e))
    except OSError as exc:
        if problems is not None:
            problems.append((Path(folder), f"cannot be listed ({exc.strerror or exc}): nothing in it read"))
        return []


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:  # vanished since the folder was listed
        return False


def iter_snapshot_dirs(landing: str | Path, day: str | None = None, problems: list[tuple[Path, str]] | None = None):
    """Snapshot directories under ``landing`` (``<cluster>/<ts>/``), oldest first, none through a link; ``day``
    (YYYY-MM-DD) keeps those whose directory name starts with that day. A cluster folder may start with a dot
    (Pulsar allows ``.prod``; ``collect`` writes it); a snapshot's may not (the collector's unfinished ones). Folders
    that cannot be listed go to ``problems``, and the others are still listed."""
    if not Path(landing).is_dir():
        return
    for cluster in folders_in(landing, problems):
        for snap in folders_in(cluster, problems):
            if not snap.name.startswith(".") and (day is None or snap.name.startswith(day)):
                yield snap


def cluster_folder(landing: str | Path, cluster: str) -> Path:
    """``landing/<cluster>`` for a name Pulsar accepts (``NamedEntity``): ingest reads no other, and no such name
    leaves the landing folder (``..``, ``a/b``, an empty name)."""
    if problem := entity_problem(cluster, "cluster name"):
        raise LbError(f"cluster name {cluster!r} refused: {problem}")
    return Path(landing) / cluster


_TEMPORARY = re.compile(r"\.([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}Z)\.(?:([0-9]+)\.)?[^/]+")
STALE_SECONDS = 24 * 3600


def remove_stale_temporaries(cluster_dir: Path, now: float | None = None) -> list[str]:
    """Removes the hidden temporary folders of writers that died before they committed (``kill -9``, a crash, a
    reboot): those whose process (named in the folder) no longer runs, and any older than a day. Returns their
    names. A writer running now keeps its own."""
    import shutil

    now = time.time() if now is None else now
    removed = []
    for folder in folders_in(cluster_dir):
        m = _TEMPORARY.fullmatch(folder.name)
        if not m:
            continue
        try:
            old = now - folder.lstat().st_mtime > STALE_SECONDS
        except OSError:
            continue
        if old or (m.group(2) is not None and not alive(int(m.group(2)))):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


class SnapshotWriter:
    """Writes one snapshot directory atomically: files go to a hidden temporary directory that is renamed into
    place when :meth:`commit` runs, so a half-written snapshot never looks complete."""

    def __init__(self, landing: str | Path, cluster: str, ts_ms: int):
        self.final = cluster_folder(landing, cluster) / snapshot_dir_name(ts_ms)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.removed = remove_stale_temporaries(self.final.parent)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.final.name}.{os.getpid()}.", dir=self.final.parent))

    def path(self, relative: str) -> Path:
        """Where ``relative`` is written (its folder created); never outside the snapshot directory."""
        path = (self.tmp / relative).resolve()
        if not path.is_relative_to(self.tmp.resolve()):  # names come from the cluster: never write outside
            raise ValueError(f"refusing to write {relative!r} outside the snapshot directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write_json(self, relative: str, value) -> None:
        self.path(relative).write_text(javajson.dumps(value), encoding="utf-8")

    def previous_snapshot_ms(self) -> int | None:
        """The time of the newest committed snapshot of this cluster before this one, or None."""
        earlier = [n for n in (e.name for e in os.scandir(self.final.parent) if e.is_dir(follow_symlinks=False))
                   if snapshot_day(n) and n < self.final.name]
        if not earlier:
            return None
        try:  # the manifest's time is to the millisecond, the folder's name to the second
            ts = json.loads((self.final.parent / max(earlier) / MANIFEST).read_text())["snapshotTimestampMs"]
            if isinstance(ts, int):
                return ts
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return int(datetime.strptime(max(earlier), TS_FORMAT).replace(tzinfo=timezone.utc).timestamp() * 1000)

    def commit(self, manifest: dict) -> Path:
        self.write_json(MANIFEST, manifest)
        if self.final.exists():
            import shutil

            shutil.rmtree(self.final)
        os.rename(self.tmp, self.final)
        return self.final

    def abort(self) -> None:
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)
