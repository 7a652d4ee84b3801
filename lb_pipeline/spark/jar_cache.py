"""The Ivy cache Spark resolves Delta's jars into (``LB_IVY_DIR``), checked and repaired by ``lb-pipeline doctor``.

A download cut short (a lost connection, a killed first start) leaves a truncated jar or Ivy descriptor in the
cache. Ivy then takes the module as resolved and never fetches it again, so every later start fails, its cause
buried in a long JVM trace. A jar must be a readable zip archive and a descriptor well-formed XML; the module of
anything damaged is removed (its cache folder and its copy in ``jars/``), and the next start downloads it again.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from xml.etree import ElementTree


def damaged(ivy_dir: str | Path) -> list[tuple[Path, str]]:
    """(file, why) for every cached jar that is no intact zip and every descriptor that is no XML."""
    root = Path(ivy_dir)
    found = []
    for jar in sorted([*root.glob("jars/*.jar"), *root.glob("cache/*/*/jars/*.jar"), *root.glob("cache/*/*/bundles/*.jar")]):
        try:  # a cut-short download has no central directory at its end (reading it all would cost seconds)
            with zipfile.ZipFile(jar) as archive:
                if not archive.namelist():
                    found.append((jar, "an empty archive"))
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            found.append((jar, f"not a readable jar ({exc})"))
    for descriptor in sorted(root.glob("cache/*/*/ivy-*.xml")):
        try:
            ElementTree.parse(descriptor)
        except (ElementTree.ParseError, OSError) as exc:
            found.append((descriptor, f"not well-formed XML ({exc})"))
    return found


def repair(ivy_dir: str | Path) -> list[tuple[Path, str]]:
    """Removes the modules of damaged files; returns what was damaged."""
    root = Path(ivy_dir)
    broken = damaged(root)
    for path, _ in broken:
        relative = path.relative_to(root).parts
        if relative[0] == "cache":  # cache/<org>/<module>/…: the whole module, so Ivy resolves it afresh
            shutil.rmtree(root.joinpath(*relative[:3]), ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if relative[0] == "cache":  # and its copy in jars/ (named <org>_<module>-<version>.jar)
            for copy in root.glob(f"jars/{relative[1]}_{relative[2]}-*.jar"):
                copy.unlink(missing_ok=True)
    return broken


def delta_jars_missing(folder: str | Path) -> list[str]:
    """The Delta jars of the installed ``delta-spark`` that ``folder`` (the Ivy cache, whose resolved jars sit in
    ``jars/``, or ``LB_DELTA_JARS_DIR``) does not hold: what the first Spark start would have to download."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("delta-spark")
    except PackageNotFoundError:
        release = "*"
    root = Path(folder)
    jars = [p.name for p in (*root.glob("*.jar"), *root.glob("jars/*.jar"))]
    wanted = {"delta-spark": f"delta-spark_*-{release}.jar", "delta-storage": f"delta-storage-{release}.jar"}
    from fnmatch import fnmatch

    return [name for name, pattern in wanted.items() if not any(fnmatch(j, f"*{pattern}") for j in jars)]
