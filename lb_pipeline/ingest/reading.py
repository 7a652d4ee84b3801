"""Reading what the listing listed (``landing.list_day``): the Spark frame of a day's files, and each local file
opened by the worker that parses it, from the landing folder down without following a link at any folder
(``openat``), only if it is still a regular file of one name within the size limit. Anything that changed since
the listing is refused with the quarantine's reason, never read.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager

from lb_pipeline.formats.values import hard_links_read
from lb_pipeline.ingest.landing import HARD_LINK, identity, local_path, shown


@contextmanager
def spark_conf(spark, settings: dict[str, str]):
    """Runtime SQL settings for the Spark jobs started inside the block (restored after, unset where they were)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)


FILES = "path string, content binary, listed string"
OPEN_COST, TASKS, MAX_SPLIT = 64 * 1024, 16, 128 * 1024 * 1024  # Spark's file planning, as ``small_files`` sets it
# A task holds at least this much (file bytes + ``OPEN_COST`` each): a sixteenth of a small day was a task per file
# (the demo's 4 snapshots, 5.8 MB, made 13-17 tasks for every bronze table, each a round trip to a Python worker:
# bronze took 18.7 s warm, 14.1 s with 8 MB tasks, the Spark jobs' own time 11.0 → 6.3 s).
MIN_SPLIT = 8 * 1024 * 1024


def small_files(spark):
    """Spark plans 64 kB per opened file, and as if for 16 cores, while landing files are read. A snapshot is
    ~1,000 files of a few kB: at Spark's default 4 MB a day of a 100-broker cluster became thousands of one-file
    tasks (bronze/bundle_data 22 s, 5.6 s at 64 kB). The core count is fixed so that files pack into the same
    tasks on a cluster of any size, and the bronze tables come out the same: silver's sums of doubles then add up
    in the same order (a re-run on a cluster equals a local run bit for bit). The lake's own tables keep Spark's
    defaults (one file per task)."""
    return spark_conf(spark, {
        "spark.sql.files.openCostInBytes": str(OPEN_COST), "spark.sql.files.minPartitionNum": str(TASKS),
        # ingest caches each table after its row rules' shuffle: let AQE still coalesce the shuffle's output (left
        # as it is, a day of the demo cluster wrote 8 files per bronze table, a broker's bundles spread over them,
        # and silver's per-broker sums of doubles then added up in whichever order they arrived)
        "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"})


def read_files(spark, paths: list[str], sizes: dict[str, int] | None = None, ids: dict[str, str] | None = None):
    """Whole files (``path``, ``content``, ``listed``) of exactly these paths (listed by ``landing.list_day``).

    Local files come with ``content`` null and ``listed`` their identity when listed (``ids``): the Python worker
    that parses them reads them (``read_listed``), in tasks packed as Spark packs files (``packed``). Spark's ``binaryFile`` scan first listed every path on the
    driver again (6 s for a day of M's 24,000 bundle-data files), then spent 10 s of JVM time handing M's topic
    files (2.3 GB) to the Python workers: M's bronze went from 140 s to 120 s. Other file systems (``s3a://…``)
    are read by ``binaryFile``."""
    if not paths:
        return spark.createDataFrame([], FILES)
    if sizes is not None and all(path.startswith("file:") for path in paths):
        ids = ids or {}
        groups = [[(p, ids.get(p)) for p in group] for group in packed(paths, sizes)]
        tasks = spark.sparkContext.parallelize(groups, len(groups)).flatMap(
            lambda group: [(p, None, listed) for p, listed in group])
        return spark.createDataFrame(tasks, FILES)
    # Above 32 paths Spark lists them in a distributed job of one task per path (2,400 tasks for a day of a
    # 100-broker cluster, about 15 s per table); a local file's status costs microseconds on the driver.
    with spark_conf(spark, {"spark.sql.sources.parallelPartitionDiscovery.threshold": str(len(paths) + 1)}):
        from pyspark.sql import functions as F

        return spark.read.format("binaryFile").load(paths).select(  # lists now, eagerly
            "path", "content", F.lit(None).cast("string").alias("listed"))


def packed(paths: list[str], sizes: dict[str, int]) -> list[list[str]]:
    """The paths in groups, one per task, as Spark's file scans group files with ``small_files``' settings
    (``FilePartition.getFilePartitions``): largest first, a task closed before it would pass a sixteenth of the
    bytes (each file counted ``OPEN_COST`` more) or ``MIN_SPLIT``, whichever is more. The groups depend on the files
    only, never on the cluster, so the bronze tables come out the same on any cluster."""
    total = sum(sizes[p] + OPEN_COST for p in paths)
    split = min(MAX_SPLIT, max(MIN_SPLIT, total // TASKS))
    groups, current, used = [], [], 0
    for path in sorted(paths, key=lambda p: (-sizes[p], p)):
        if current and used + sizes[path] > split:
            groups.append(current)
            current, used = [], 0
        current.append(path)
        used += sizes[path] + OPEN_COST
    return groups + [current] if current else groups


def task_count(paths, sizes: dict[str, int]) -> int:
    """How many tasks ``packed`` reads these files in (at least one; a file of unknown size counted empty)."""
    unique = sorted(set(paths))
    return max(1, len(packed(unique, {p: sizes.get(p, 0) for p in unique})))


REPLACED = ("refused: not the file listed (another file, or a folder on its path, was put in its place since the "
            "listing; not read)")
LINKED_FOLDER = ("refused: a folder on its path was replaced by a link since it was listed (never followed, "
                 "not read)")
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FOLDER = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC


def _open_below(root: str, path: str) -> int:
    """``path`` opened from the landing folder ``root`` down, one component at a time (``openat``), none followed
    if it is a link: a folder swapped for a link between the listing and the read cannot lead outside ``root``."""
    rel = os.path.relpath(path, root)
    if rel == "." or rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise ValueError(f"expected a file inside the landing folder {shown(root)}: not read")
    *folders, name = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the landing folder itself, as configured
    try:
        for folder in folders:
            try:
                below = os.open(folder, _FOLDER, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise ValueError(LINKED_FOLDER) from None
                raise
            os.close(fd)
            fd = below
        return os.open(name, _FILE, dir_fd=fd)
    finally:
        os.close(fd)


def read_listed(uri: str, limit: int, hard_links: bool | None = None, root: str | None = None,
                listed: str | None = None) -> bytes:
    """A listed local file's bytes, as the worker reads them: never through a link (``O_NOFOLLOW``; at every
    folder below ``root``, the landing folder, when given), only a regular file (a FIFO or device put in its place
    since the listing is refused, not waited on), the very file listed when ``listed`` gives its identity
    (``landing.identity``: a file or folder renamed in its place is refused), with one name unless ``hard_links``
    (None: ``LB_READ_HARD_LINKS``), at most ``limit`` bytes. Raises ``ValueError`` with the quarantine's reason
    when it cannot."""
    hard_links = hard_links_read() if hard_links is None else hard_links
    try:
        fd = (os.open(local_path(uri), _FILE) if root is None or local_path(root) is None
              else _open_below(local_path(root), local_path(uri)))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError("refused: a symbolic link put in its place since it was listed (never followed, not read)") from None
        raise ValueError(f"expected the file listed to be readable, got {exc.strerror or exc}: not read") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("refused: not a regular file since it was listed (device, FIFO or socket; not read)")
        if listed is not None and identity(info) != listed:
            raise ValueError(REPLACED)
        if info.st_nlink > 1 and not hard_links:
            raise ValueError(HARD_LINK.format(info.st_nlink).replace("refused: a hard link",
                                                                     "refused: a hard link since it was listed"))
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 24, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ValueError(f"expected at most {limit} bytes (LB_MAX_FILE_BYTES), got more since it was listed: not read")
        return b"".join(chunks)
    except OSError as exc:
        raise ValueError(f"expected the file listed to be readable, got {exc.strerror or exc}: not read") from None
    finally:
        os.close(fd)
