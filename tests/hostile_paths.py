"""The hostile corpus's kinds on paths: names, links, devices and folders ingest must never read, each quarantined
by name (``(path)``, ``(directory)``, ``manifest.json``)."""

import os
import shutil
from pathlib import Path

from tests.conftest import DEMO_DAY
from tests.hostile_corpus import Corpus


def path_kinds(c: Corpus, landing: Path, s: list[Path], s3: Path, outside: Path, b0: list[Path], t0: list[Path],
               bd3: list[Path]) -> None:
    """``s``: the day's snapshot folders; ``b0``, ``t0``: broker reports and topic files of the first, ``bd3`` the
    stored BundleData of ``s3``, copied under names and places the format does not allow."""
    (s3 / "lb/brokers/broker-9.pulsar.svc:8080.json").write_text(b0[4].read_text())
    c.kind("':' in a file name", s3 / "lb/brokers/broker-9.pulsar.svc:8080.json", "(path)")
    (s3 / "notes.txt").write_text("hello"); c.kind("a file the format does not know", s3 / "notes.txt", "(path)")
    os.symlink(outside, s3 / "lb/brokers/evil.json"); c.kind("link to a file outside", s3 / "lb/brokers/evil.json", "(path)")
    os.symlink(s3 / "missing.json", s3 / "topics/dangling.json"); c.kind("dangling link", s3 / "topics/dangling.json", "(path)")
    os.symlink(outside.parent, s3 / "namespaces/linked"); c.kind("link to a directory outside", s3 / "namespaces/linked", "(path)")
    os.link(outside, s3 / "topics/hardlinked.json"); c.kind("hard link to a file outside", s3 / "topics/hardlinked.json", "(path)")
    os.mkfifo(s3 / "config/runtime/fifo.json"); c.kind("FIFO", s3 / "config/runtime/fifo.json", "(path)")
    deeper = bd3[0].parent / "deeper"  # a folder below the format's deepest (lb/bundle-data/<tenant>/<namespace>/)
    (deeper / "still").mkdir(parents=True); shutil.copy(bd3[0], deeper / "still" / bd3[0].name)
    c.kind("folder nested deeper than the format", deeper, "(path)")
    cluster = s[0].parent
    (cluster / f"{DEMO_DAY}T09-30-00Z").mkdir(); c.kind("empty snapshot directory", cluster / f"{DEMO_DAY}T09-30-00Z", "(directory)")
    half = cluster / f"{DEMO_DAY}T09-45-00Z"
    (half / "lb/brokers").mkdir(parents=True); shutil.copy(b0[4], half / "lb/brokers" / b0[4].name)
    c.kind("snapshot without manifest", half / "lb/brokers" / b0[4].name, "manifest.json")
    shutil.copytree(s[1] / "cluster", cluster / f"{DEMO_DAY}T25-61-00Z/cluster")
    c.kind("no such time", cluster / f"{DEMO_DAY}T25-61-00Z", "(directory)")
    shutil.copytree(s[1] / "cluster", cluster / f"{s[3].name}-copy/cluster")
    c.kind("duplicated snapshot directory", cluster / f"{s[3].name}-copy", "(directory)")
    (cluster / "yesterday").mkdir(); (cluster / "2099-01-01T00-00-00Z").mkdir()  # other days: the run skips them
    # names that are not UTF-8 (Python carries the bytes as lone surrogates, which Spark and a strict terminal refuse),
    # and a cluster folder Pulsar could not have named: refused by name, stored with the bytes escaped, nothing read
    for name, folder in (("cluster folder not UTF-8", landing / os.fsdecode(b"bad\xffcluster")),
                         ("cluster folder Pulsar cannot name", landing / "acme cluster")):
        shutil.copytree(s[1], folder / s[1].name); c.kind(name, folder / s[1].name, "(directory)")
    odd = cluster / os.fsdecode(f"{DEMO_DAY}T".encode() + b"\xff")
    (odd / "lb/brokers").mkdir(parents=True); shutil.copy(b0[4], odd / "lb/brokers" / b0[4].name)
    c.kind("snapshot folder not UTF-8", odd, "(directory)")
    unnamed = s3 / "topics" / os.fsdecode(b"\xfe\xff.json")
    shutil.copy(t0[3], unnamed); c.kind("file name not UTF-8", unnamed, "(path)")
