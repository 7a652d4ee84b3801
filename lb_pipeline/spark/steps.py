"""A night resumed where it stopped: a step whose tables a run committed, from inputs that have not changed since,
is not computed again.

Each step of a night is watched while it runs (``spark.watch``): every table it read or looked for, at its newest
commit as the step first saw it, and every table it wrote, at the commit its writes left. Once the step has ended
those go, with what else decides its result (the code, the settings, the step's run config, the landing folder's
files for ingest, the suites' files for a layer's checks), into a record in ``<lake>/.steps/<day>/<step>.json``. A later run of the day (the re-run after a
``kill -9``, a crash or a scheduled re-run) takes the step as done when the record's inputs are still what every
table is now, its outputs are still the tables' newest commits and the rest is unchanged; anything else, a missing
or unreadable record included, computes the step again, which writes the same rows (the writes are idempotent).
A table's commit is the whole table's, so a write of another day since makes the step run again: cautious, never
stale.

The report always runs (and names the steps it found done, and the runs that did them); a run tagged
``lb_pipeline/recompute=true`` (``python -m assets.run --recompute``) computes every step.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse

from lb_pipeline.spark.lake import Lake, _Log
from lb_pipeline.spark.watch import unwatch, watch

RECORDS = ".steps"
RECOMPUTE_TAG = "lb_pipeline/recompute"
# Settings that say where and how Spark runs, or where things are kept, not what a step computes: a night killed
# on local[2] and finished on a standalone cluster is resumed (the recovery test holds both to the same tables).
PLACE_ONLY = ("LB_SPARK_", "LB_DELTA_JARS_DIR", "LB_IVY_", "LB_LAKE_ROOT", "LB_LANDING", "LB_REPORTS_DIR",
              "LB_PULSAR_TOKEN")
PACKAGES = ("pyspark", "delta-spark", "pandas", "numpy", "pyarrow", "great-expectations")
_CODE: list[str] = []


def code_version() -> str:
    """A digest of the library's and the code location's source and of the packages that compute with it: a
    changed line of either makes every step run again."""
    if not _CODE:
        digest = hashlib.sha256()
        top = Path(__file__).resolve().parents[2]
        for folder in ("lb_pipeline", "assets"):
            for path in sorted((top / folder).rglob("*.py")):
                digest.update(str(path.relative_to(top)).encode() + b"\0" + path.read_bytes() + b"\0")
        for name in PACKAGES:
            try:
                digest.update(f"{name}={metadata.version(name)}\0".encode())
            except metadata.PackageNotFoundError:
                digest.update(f"{name}=none\0".encode())
        _CODE.append(digest.hexdigest())
    return _CODE[0]


def settings() -> dict[str, str]:
    """The ``LB_*`` environment that can change what a step computes (``PLACE_ONLY`` left out)."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("LB_") and not k.startswith(PLACE_ONLY)}


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Record:
    step: str
    day: str
    run_id: str
    given: str  # digest of the code, settings, run config and extra inputs
    inputs: dict[str, list | None]  # layer/table → [version, commit time in ms] as read, None: no table there
    outputs: dict[str, list | None]  # layer/table → as the step's writes left it (paths inside the lake: a lake
    # copied or moved elsewhere keeps its records)
    results: list  # what the step reported: per asset materialized or check run, its key, metadata and outcome


class Steps:
    """The records of one day's steps under one lake."""

    def __init__(self, spark, lake: Lake, day: str):
        self.spark, self.lake, self.day = spark, lake, day
        self.folder = f"{lake.root.rstrip('/')}/{RECORDS}/{day}"

    def given(self, step: str, config=None, extra=None) -> str:
        return _digest({"step": step, "day": self.day, "code": code_version(), "settings": settings(),
                        "config": config, "extra": extra})

    def unchanged(self, step: str, given: str, shared: tuple[str, ...] = ()) -> Record | None:
        """The record of ``step`` when what it says the step read, wrote and was given still holds; else None.
        A ``shared`` output (layer/table) is a table other steps write slices of after this one (the checks'
        results): its newest commit is not this step's, so the step's own commit only has to be still in its log
        (the table not deleted and written anew)."""
        record = self._load(step)
        if record is None or record.given != given or not record.outputs:
            return None
        root = self.lake.root.rstrip("/")
        try:
            for table, state in {**record.inputs, **record.outputs}.items():
                log = _Log(self.spark, f"{root}/{table}")
                now = log.at(int(state[0])) if table in shared and state is not None else log.newest()
                if (None if now is None else list(now)) != state:
                    return None
        except (TypeError, ValueError, IndexError, AttributeError):  # a record this code did not write
            return None
        return record

    @contextmanager
    def watching(self):
        """What a step reads and writes under the lake while inside (``watch.Watch``)."""
        seen = watch(self.lake.root)
        try:
            yield seen
        finally:
            unwatch(seen)

    def save(self, step: str, given: str, run_id: str, seen, results: list) -> Record:
        """The record of a step that ended; its own writes are outputs, not inputs, even where it read them."""
        inside = lambda path: path[len(seen.root):]  # noqa: E731 - the watch sees only paths under the lake
        outputs = {inside(p): None if s is None else list(s) for p, s in seen.wrote.items()}
        inputs = {inside(p): None if s is None else list(s) for p, s in seen.read.items() if inside(p) not in outputs}
        record = Record(step, self.day, run_id, given, inputs, outputs, results)
        self._store(step, json.dumps(record.__dict__, sort_keys=True, indent=1))
        return record

    def computed_by(self) -> dict[str, str]:
        """Step → the run that last computed it, for the day's steps that have a record."""
        local = self._local(self.folder)
        try:
            if local is not None:
                names = os.listdir(local) if os.path.isdir(local) else []
            else:
                jvm = self.spark.sparkContext._jvm
                folder = jvm.org.apache.hadoop.fs.Path(self.folder)
                fs = folder.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
                names = [st.getPath().getName() for st in fs.listStatus(folder)] if fs.exists(folder) else []
        except Exception:  # noqa: BLE001 - no records to list: none to name
            return {}
        steps = sorted(name[: -len(".json")] for name in names if name.endswith(".json"))
        return {step: record.run_id for step in steps if (record := self._load(step)) is not None}

    # a record is a small JSON file beside the tables: written whole (a temporary file renamed), read as a whole

    def _path(self, step: str) -> str:
        return f"{self.folder}/{step}.json"

    def _local(self, path: str) -> str | None:
        url = urlparse(path)
        return (url.path if url.scheme else path) if url.scheme in ("", "file") else None

    def _load(self, step: str) -> Record | None:
        path = self._path(step)
        try:
            local = self._local(path)
            if local is not None:
                text = Path(local).read_text()
            else:
                jvm = self.spark.sparkContext._jvm
                hpath = jvm.org.apache.hadoop.fs.Path(path)
                fs = hpath.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
                if not fs.exists(hpath):
                    return None
                stream = fs.open(hpath)
                try:
                    text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
                finally:
                    stream.close()
            return Record(**json.loads(text))
        except Exception:  # noqa: BLE001 - none, one this code did not write, or the object store's error (through
            return None    # the JVM): the step runs

    def _store(self, step: str, text: str) -> None:
        path = self._path(step)
        local = self._local(path)
        if local is not None:
            os.makedirs(os.path.dirname(local), exist_ok=True)
            temporary = f"{local}.{uuid.uuid4().hex}.tmp"
            with open(temporary, "w") as f:
                f.write(text)
            os.replace(temporary, local)
            return
        jvm = self.spark.sparkContext._jvm
        hpath = jvm.org.apache.hadoop.fs.Path(path)
        fs = hpath.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
        stream = fs.create(hpath, True)  # an object store's put is whole or nothing
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()
