"""The landing folder as a boundary, for the paths that read it without Spark (the what-ifs, ``validate-simulation``):
no links out of it, no devices, nothing larger than ``LB_MAX_FILE_BYTES``; a file refused or not parsed is named in
the notes, as ingest quarantines it."""

from __future__ import annotations

from pathlib import Path

from lb_pipeline.formats.values import FileProblem, load_json, max_file_bytes


def refused(path: Path, root: Path) -> str | None:
    """The landing folder is a boundary: no links out of it, no devices, nothing larger than LB_MAX_FILE_BYTES."""
    if path.is_symlink() or not path.resolve().is_relative_to(root):
        return "a link (only regular files inside the landing folder are read)"
    if not path.is_file():
        return "not a regular file"
    if path.stat().st_size > max_file_bytes():
        return f"larger than {max_file_bytes():,} bytes (LB_MAX_FILE_BYTES)"
    return None


def read_doc(path: Path, root: Path, notes: list[str]):
    """The JSON document at ``path``, or None: missing, refused or not parsed (named in ``notes``)."""
    if not path.exists():
        return None
    why = refused(path, root)
    try:
        if why:
            raise FileProblem("(file)", why)
        return load_json(path.read_bytes())
    except FileProblem as exc:
        notes.append(f"{path}: {exc}; left out")
        return None
