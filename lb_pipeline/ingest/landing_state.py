"""A day's landing files as facts, never opened: what decides whether ingest of that day must run again
(``spark.steps``)."""

from __future__ import annotations

import os

from lb_pipeline.ingest.landing import _deepest, local_path


def day_state(landing: str, day: str, globs: dict[str, tuple[str, ...]], spark=None,
              hadoop: bool | None = None) -> list | None:
    """What ingest of ``day`` would find in the landing folder, as names and file facts: two equal states mean
    ingest reads the same bytes (``spark.steps`` resumes a night on it). Nothing is opened or followed.

    A local folder: ``lstat`` facts (kind, size, inode, modification and change times) of every entry of the
    folder and of its cluster folders, and of everything inside the day's snapshot directories (to the format's
    depth, then the deeper directory itself). Elsewhere (``s3a://…``, through Hadoop's FileSystem and ``spark``):
    each of the day's snapshot directories and every file in it, with length, modification time and, where the
    store gives one, its ETag (S3's modification time has whole seconds); None without ``spark``."""
    local = local_path(landing)
    if local is None or hadoop:
        return None if spark is None else _hadoop_state(spark, landing, day)
    root, state = os.path.abspath(local), []

    def facts(path: str, relative: str) -> list:
        try:
            st = os.lstat(path)
            return [relative, st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        except OSError as exc:
            return [relative, f"{type(exc).__name__}: {exc.strerror}"]

    def names(folder: str) -> list[str]:
        try:
            return sorted(os.listdir(folder))
        except OSError as exc:
            state.append([os.path.relpath(folder, root), f"unlisted: {exc.strerror}"])
            return []

    deepest = _deepest(globs) + 1
    state.append(facts(root, "."))
    for cluster in names(root) if os.path.isdir(root) else []:
        path = os.path.join(root, cluster)
        state.append(facts(path, cluster))
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        for snap in names(path):
            state.append(facts(os.path.join(path, snap), f"{cluster}/{snap}"))
            folders = [(os.path.join(path, snap), 0)] if snap.startswith(f"{day}T") else []
            while folders:  # without recursion: a hostile landing nests thousands of folders
                folder, depth = folders.pop()
                if os.path.islink(folder) or not os.path.isdir(folder) or depth > deepest:
                    continue
                for name in names(folder):
                    inner = os.path.join(folder, name)
                    state.append(facts(inner, os.path.relpath(inner, root)))
                    folders.append((inner, depth + 1))
    return state


def _hadoop_state(spark, landing: str, day: str) -> list:
    jvm = spark.sparkContext._jvm
    pattern = jvm.org.apache.hadoop.fs.Path(f"{landing.rstrip('/')}/*/{day}T*")
    fs = pattern.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def facts(st) -> list:
        try:
            etag = st.getEtag()  # S3A's status has one (Hadoop's EtagSource); a local or HDFS status does not
        except Exception:  # noqa: BLE001 - no such method on this file system's status
            etag = None
        return [st.getPath().toString(), bool(st.isDirectory()), int(st.getLen()), int(st.getModificationTime()), etag]

    state = []
    for st in fs.globStatus(pattern) or []:
        state.append(facts(st))
        if st.isDirectory():
            files = fs.listFiles(st.getPath(), True)
            while files.hasNext():
                state.append(facts(files.next()))
    return state
