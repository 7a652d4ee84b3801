"""The landing folder is a boundary: which files of one day ingest may read, and which it refuses by name.

A local landing folder is walked in Python without following links (``lstat``): only regular files inside it are
ever opened. Refused, by name only (nothing read): symbolic links (dangling or not), devices, FIFOs and
sockets; the snapshots of a cluster folder Pulsar could not have named (its ``NamedEntity`` rule); directory
names that are not a snapshot time; file names the snapshot format never writes (only ASCII letters, digits and
``. _ - =``: a ``:`` or ``%`` would also confuse Hadoop paths); files larger than ``max_bytes``
(``LB_MAX_FILE_BYTES``). A name that is not even UTF-8 is stored with those bytes escaped (``\xff``). Empty
files and empty snapshot directories are listed too, because Spark's scans skip them silently. Ingest then reads
exactly the listed files (``read_files``), and the workers open them without following links either
(``reading.read_listed``): a file that became a link, a FIFO, too large or another file (its device and inode
are not those listed: a folder or the file renamed in its place) since the listing is quarantined, not read.

A landing folder on another file system (``s3a://…``) has no links: it is listed through Hadoop's FileSystem
(metadata only), with the same size, name and emptiness rules.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass, field

from lb_pipeline.formats.values import hard_links_read, max_file_bytes
from lb_pipeline.model.names import entity_problem, one_line
from lb_pipeline.snapshots.layout import TS_FORMAT, snapshot_day

_SAFE_NAME = re.compile(r"[A-Za-z0-9._=-]+")
# parts of the snapshot format no bronze table reads (kept in the landing folder, not quarantined)
NOT_INGESTED = ("brokers.json", "lb/broker-time-average/*.json", "lb/broker-load-data/*.json", "lb/top-bundles/*.json")


@dataclass
class DayListing:
    files: dict[str, list[str]] = field(default_factory=dict)  # bronze table → file URIs to read
    refused: list[tuple[str, str, str]] = field(default_factory=list)  # (path, field, reason): not read
    empty_dirs: list[str] = field(default_factory=list)
    empty_files: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # file URI → its bytes when listed (tasks are packed by it)
    ids: dict[str, str] = field(default_factory=dict)  # local file URI → "device:inode" when listed (what is read)
    unread: set[str] = field(default_factory=set)  # the refused URIs as they are (``refused`` holds them shown)
    # the landing folder as the URIs above start with it: a file's cluster and snapshot are the two folders after it
    # (a landing folder inside a folder named like a snapshot time is not taken for one)
    root: str | None = None

    def refuse(self, uri: str, where: str, reason: str) -> None:
        """Quarantined by name, never read."""
        self.refused.append((shown(uri), where, reason))
        self.unread.add(uri)


def tables_of(relative: str, globs: dict[str, tuple[str, ...]]) -> list[str]:
    """Every bronze table that reads this file (``lb/brokers/*.json`` feeds two)."""
    return [t for t, gs in globs.items() if any(fnmatch.fnmatchcase(relative, g) for g in gs)]


def local_path(landing: str) -> str | None:
    """The local folder behind ``/x``, ``file:/x`` or ``file:///x``; None for other schemes (``s3a://…``)."""
    if landing.startswith("file:"):
        return re.sub(r"^file:(//)?", "", landing)
    return None if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", landing) else landing


def list_day(spark, landing: str, day: str, globs: dict[str, tuple[str, ...]], hadoop: bool | None = None,
             limit: int | None = None) -> DayListing:
    """The files of ``day``'s snapshot directories, by bronze table, and everything refused, as ``file:`` URIs
    (local) or the file system's own URIs."""
    limit = max_file_bytes() if limit is None else limit
    local = local_path(landing)
    if local is not None and not hadoop:
        return _list_local(os.path.abspath(local), day, globs, limit)
    return _list_hadoop(spark, landing, day, globs, limit)


def shown(path: str) -> str:
    """A path as text a table can store and a line can show: bytes of a name that are not UTF-8 (which Python
    carries as lone surrogates, and Spark cannot take) written as ``\xff``, line breaks and invisible characters
    escaped (:func:`one_line`)."""
    return one_line(os.fsencode(path).decode("utf-8", "backslashreplace"))


def _cluster_problem(name: str) -> str | None:
    problem = entity_problem(shown(name), "cluster")
    return problem and f"expected a cluster folder named as Pulsar names clusters ({problem}): nothing of it read"


def _classify(out: DayListing, uri: str, relative: str, size: int, globs, limit: int) -> None:
    parts = relative.split("/")
    if not all(_SAFE_NAME.fullmatch(p) for p in parts):
        out.refuse(uri, "(path)", "expected a file name of the snapshot format (letters, digits and . _ -"
                                  f" = only), got '{shown(relative)}'")
    elif size == 0:
        out.empty_files.append(uri)
    elif size > limit:
        out.refuse(uri, "(file)", f"expected at most {limit} bytes (LB_MAX_FILE_BYTES), got {size}: not read")
    else:
        tables = tables_of(relative, globs)
        if tables:
            out.sizes[uri] = size
        for table in tables:
            out.files.setdefault(table, []).append(uri)
        if not tables and not any(fnmatch.fnmatchcase(relative, g) for g in NOT_INGESTED):
            out.refuse(uri, "(path)", "expected a file of the snapshot format (docs/snapshot-format.md), "
                                      f"got {relative!r}: not read")


def _list_local(root: str, day: str, globs, limit: int) -> DayListing:
    out = DayListing(root=f"file:{root}")
    if not os.path.isdir(root):
        return out
    for cluster in _entries(out, root):
        if not cluster.is_dir(follow_symlinks=False):
            if cluster.is_symlink():
                out.refuse(f"file:{cluster.path}", "(path)", "refused: a symbolic link (never followed)")
            continue
        for snap in _entries(out, cluster.path):
            if snap.name.startswith(".") or not snap.name.startswith(f"{day}T"):
                continue
            uri = f"file:{snap.path}"
            if snap.is_symlink() or not snap.is_dir(follow_symlinks=False):
                why = "a symbolic link (never followed)" if snap.is_symlink() else "not a directory"
                out.refuse(uri, "(path)", f"refused: {why}")
            elif snapshot_day(snap.name) != day:
                out.refuse(uri, "(directory)", f"expected a snapshot time {TS_FORMAT}, got '{shown(snap.name)}'")
            else:
                list_snapshot(out, snap.path, globs, limit)
    return out


def _entries(out: DayListing, folder: str) -> list[os.DirEntry]:
    """A landing or cluster folder's entries by name; one that cannot be listed (permissions, vanished) is refused
    by name and holds none, and the other clusters are listed all the same."""
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError as exc:
        out.refuse(f"file:{folder}", "(directory)", f"refused: a folder that cannot be listed "
                                                    f"({exc.strerror or exc}): nothing in it read")
        return []


def list_snapshot(out: DayListing, directory: str, globs, limit: int) -> DayListing:
    """Adds one local snapshot directory's files (by the same rules) to ``out``."""
    if out.root is None:
        out.root = f"file:{os.path.dirname(os.path.dirname(directory))}"
    if problem := _cluster_problem(os.path.basename(os.path.dirname(directory))):
        out.refuse(f"file:{directory}", "(directory)", problem)
    elif not _walk(out, directory, directory, globs, limit, _deepest(globs), hard_links_read()):
        out.empty_dirs.append(f"file:{directory}")
    return out


def _deepest(globs) -> int:
    """How many directories deep the snapshot format nests a file (``lb/bundle-data/<tenant>/<namespace>/``: 4)."""
    return max(g.count("/") for g in (*NOT_INGESTED, *(g for gs in globs.values() for g in gs)))


def _walk(out: DayListing, top: str, folder: str, globs, limit: int, levels: int, hard_links: bool) -> bool:
    """Lists ``folder`` (inside snapshot ``top``) without following links, at most ``levels`` directories further
    down; whether it held any file. A deeper directory, or one that cannot be listed, is refused by name: thousands
    of nested folders had overflowed the recursion (and paths past PATH_MAX cannot even be opened). A file with
    more than one name is refused unless ``hard_links`` (another name may be outside the landing folder)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        out.refuse(f"file:{folder}", "(path)", f"refused: a directory that cannot be listed "
                                               f"({exc.strerror or exc}): nothing in it read")
        return True
    seen = False
    for entry in entries:
        uri, relative = f"file:{entry.path}", os.path.relpath(entry.path, top)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as exc:  # vanished since the folder was listed
            out.refuse(uri, "(path)", f"refused: gone while it was listed ({exc.strerror or exc}): not read")
            seen = True
            continue
        if stat.S_ISLNK(info.st_mode):
            out.refuse(uri, "(path)", "refused: a symbolic link (never followed, not read)")
            seen = True
        elif stat.S_ISDIR(info.st_mode) and levels == 0:
            out.refuse(uri, "(path)", "refused: a directory deeper than the snapshot format nests "
                                      "(docs/snapshot-format.md): nothing in it read")
            seen = True
        elif stat.S_ISDIR(info.st_mode):
            seen = _walk(out, top, entry.path, globs, limit, levels - 1, hard_links) or seen
        elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and not hard_links:
            out.refuse(uri, "(path)", HARD_LINK.format(info.st_nlink))
            seen = True
        elif stat.S_ISREG(info.st_mode):
            _classify(out, uri, relative, info.st_size, globs, limit)
            if uri in out.sizes:
                out.ids[uri] = identity(info)
            seen = True
        else:
            out.refuse(uri, "(path)", "refused: not a regular file (device, FIFO or socket; not read)")
            seen = True
    return seen


def _list_hadoop(spark, landing: str, day: str, globs, limit: int) -> DayListing:
    out = DayListing()
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    pattern = jvm.org.apache.hadoop.fs.Path(f"{landing.rstrip('/')}/*/{day}T*")
    fs = pattern.getFileSystem(conf)
    for st in fs.globStatus(pattern) or []:
        uri = st.getPath().toString()
        out.root = out.root or st.getPath().getParent().getParent().toString()  # as the file system writes it
        name = uri.rstrip("/").rsplit("/", 1)[-1]
        if not st.isDirectory():
            continue
        if problem := _cluster_problem(st.getPath().getParent().getName()):
            out.refuse(uri, "(directory)", problem)
            continue
        if snapshot_day(name) != day:
            out.refuse(uri, "(directory)", f"expected a snapshot time {TS_FORMAT}, got {name!r}")
            continue
        files = fs.listFiles(st.getPath(), True)
        seen = False
        while files.hasNext():
            f = files.next()
            seen = True
            path = f.getPath().toString()
            _classify(out, path, path[len(uri.rstrip("/")) + 1:], f.getLen(), globs, limit)
        if not seen:
            out.empty_dirs.append(uri)
    return out


def identity(info: os.stat_result) -> str:
    """A file as the listing saw it (device and inode): the worker reads the file only if it opens this one."""
    return f"{info.st_dev}:{info.st_ino}"


HARD_LINK = ("refused: a hard link ({} names of one file, and another may be outside the landing folder; "
             "LB_READ_HARD_LINKS=1 reads them): not read")
