"""JSON values of a snapshot file, read defensively: the shared base of every parser in ``formats``.

Pure Python, no Spark. ``load_json`` turns any content into a document or a :class:`FileProblem`; the value
readers (``num``, ``integer``, ``boolean``, ``text``) raise :class:`RowProblem` naming the field and what was
expected. A problem with ``whole_file=True`` means nothing of the file could be used.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import jiter

from lb_pipeline.model import names
from lb_pipeline.model.bundles import printed_range_problem

Row = dict


@dataclass(frozen=True)
class Problem:
    field: str
    reason: str
    whole_file: bool = False


class FileProblem(Exception):
    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.problem = Problem(field, reason, whole_file=True)


class RowProblem(Exception):
    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.problem = Problem(field, reason)


DEFAULT_MAX_DEPTH = 64  # Pulsar's documents nest about 10 deep
DEFAULT_MAX_FILE_BYTES = 512 * 1024 * 1024  # the largest topics file of preset L is about 60 MB
_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
# What a file's first bytes say it is when it is no JSON text, in the quarantine's words. Byte order marks: UTF-32's
# first (FF FE 00 00 begins as UTF-16 LE's; a JSON text never starts with NUL, so no UTF-16 text is mistaken).
# Compressed or archived data under a .json name (a collector's output gzipped, a download left zipped): "invalid
# byte at offset 1" (gzip) or "offset 14" (zip, whose first bytes are ASCII) had said nothing useful.
_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32 BE"), (b"\xff\xfe\x00\x00", "UTF-32 LE"), (b"\xef\xbb\xbf", "UTF-8"),
         (b"\xfe\xff", "UTF-16 BE"), (b"\xff\xfe", "UTF-16 LE"))
_PACKED = ((b"\x1f\x8b", "gzip-compressed data", "gunzip"), (b"PK\x03\x04", "a zip archive", "unzip"),
           (b"\x28\xb5\x2f\xfd", "zstd-compressed data", "unzstd"), (b"BZh", "bzip2-compressed data", "bunzip2"),
           (b"\xfd7zXZ\x00", "xz-compressed data", "unxz"))
_LEADING = ([(magic, f"expected UTF-8 text without a byte order mark, got a {name} byte order mark (Pulsar and the "
                     "collector write none; a Windows tool may have: save it as UTF-8)") for magic, name in _BOMS]
            + [(magic, f"expected JSON text, got {name} (Pulsar and the collector write plain JSON: put the file back "
                       f"uncompressed, with {tool} say)") for magic, name, tool in _PACKED])
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # \ud800-\udfff: JSON may escape half a UTF-16 pair


def load_json(content: bytes, max_depth: int | None = None) -> object:
    """One JSON document, or a :class:`FileProblem` naming why not; no content can make it raise anything else
    (invalid UTF-8, deep nesting, duplicate keys, non-finite numbers, numbers out of range, memory)."""
    max_depth = max_json_depth() if max_depth is None else max_depth
    if leading := next((reason for magic, reason in _LEADING if content.startswith(magic)), None):
        raise FileProblem("(file)", leading)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("(file)", f"expected UTF-8 text, got invalid byte at offset {exc.start}") from None
    if not text.strip():
        raise FileProblem("(file)", "expected a JSON document, got an empty file")
    depth = nesting_depth(content, max_depth)
    if depth > max_depth:
        raise FileProblem("(file)", f"expected JSON nested at most {max_depth} levels deep (LB_MAX_JSON_DEPTH), "
                                    f"got {depth}")
    try:  # jiter refuses all that json below refuses, and reads all else to the same values, in half the time
        return jiter.from_json(content, allow_inf_nan=False, catch_duplicate_keys=True, cache_mode="keys")
    except (ValueError, RecursionError, MemoryError):
        pass  # json says why in the quarantine's words (or reads a lone surrogate, which encodable_rows refuses)
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise FileProblem("(file)", f"expected valid JSON, got {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except FileProblem:
        raise
    except RecursionError:
        raise FileProblem("(file)", "expected JSON the parser can nest, got deeper nesting") from None
    except (MemoryError, ValueError, OverflowError) as exc:  # e.g. an integer literal of 5000 digits
        raise FileProblem("(file)", f"expected parseable JSON, got {type(exc).__name__}: {str(exc)[:120]}") from None


def parsed_whole(parse, doc, *args):
    """``parse(doc, *args)`` (a parser of this package), where a row problem at the top of the document (no row to
    blame: an array where Pulsar writes an object, say) is a :class:`FileProblem`, as every reader treats it."""
    try:
        return parse(doc, *args)
    except RowProblem as exc:
        raise FileProblem(exc.problem.field, exc.problem.reason) from None


def may_hold_lone_surrogates(content: bytes) -> bool:
    """Whether a document's strings may hold half a UTF-16 surrogate pair (``"\\ud800"`` alone: valid JSON,
    which Python reads into a string that UTF-8, and so the lake, cannot hold). Cheap; rarely true."""
    return _SURROGATE_ESCAPE.search(content) is not None


def encodable_rows(rows: list[Row], problems: list[Problem]) -> tuple[list[Row], list[Problem]]:
    """The rows whose text UTF-8 can hold; each other row becomes a problem naming its column (one lone surrogate
    would otherwise fail the conversion of a whole batch of rows, and with it the night)."""
    kept, refused = [], []
    for row in rows:
        bad = _unencodable(row)
        if bad is None:
            kept.append(row)
        else:
            refused.append(Problem(bad[0], "expected text UTF-8 can hold, got half a UTF-16 surrogate pair in "
                                           f"{printable(bad[1])[:200]!r}"))
    return kept, problems + refused


def _unencodable(row: Row) -> tuple[str, str] | None:
    for column, value in row.items():
        for text in (value if isinstance(value, list) else [value]):
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    return column, text
    return None


def printable(text: str) -> str:
    """Text safe to store: a lone surrogate becomes its escape (``\\ud800``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def max_file_bytes() -> int:
    """Files larger than this are refused by name, never read (``LB_MAX_FILE_BYTES``)."""
    return int(os.environ.get("LB_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES))


def hard_links_read() -> bool:
    """Whether a landing file with more than one name (a hard link, whose other name may be outside the landing
    folder) is read (``LB_READ_HARD_LINKS=1``: a collector that hard-links unchanged files, as ``rsync
    --link-dest`` does); by default it is refused by name, never read."""
    return os.environ.get("LB_READ_HARD_LINKS", "0").strip() == "1"


def max_json_depth() -> int:
    return int(os.environ.get("LB_MAX_JSON_DEPTH", DEFAULT_MAX_DEPTH))


def nesting_depth(content: bytes, limit: int) -> int:
    """Deepest ``[``/``{`` nesting, exact whenever it matters: a count at most ``limit`` may include brackets
    inside strings (an upper bound); above it, strings are stripped and the depth measured exactly."""
    brackets = content.translate(None, _BRACKETS)
    if len(brackets) <= limit:
        return len(brackets)
    depth = _max_running(brackets)
    if depth > limit:  # rare: measure exactly, without the brackets that strings hold
        depth = _max_running(_STRINGS.sub(b'""', content).translate(None, _BRACKETS))
    return depth


def _max_running(brackets: bytes) -> int:
    import numpy as np

    if not brackets:
        return 0
    step = np.zeros(256, dtype=np.int32)
    step[ord("[")] = step[ord("{")] = 1
    step[ord("]")] = step[ord("}")] = -1
    return int(np.cumsum(step[np.frombuffer(brackets, dtype=np.uint8)]).max())


def _unique_keys(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise FileProblem(str(dup), "expected each key once in an object, got it twice (ambiguous: Pulsar never writes that)")
    return d


def _reject_constant(name: str):
    raise FileProblem("(file)", f"expected finite numbers, got the non-JSON literal {name}")


def _obj(value, field: str, row_level: bool = False) -> dict:
    if not isinstance(value, dict):
        exc = RowProblem if row_level else FileProblem
        raise exc(field, f"expected a JSON object, got {_kind(value)}")
    return value


def _kind(value) -> str:
    """What a JSON value is, in JSON's words (a Python ``int`` or ``float`` is a number)."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return kinds.get(type(value), type(value).__name__) if value is not None else "null"


def num(obj: dict, key: str, field: str, *, required: bool = True, nonneg: bool = True, default=None) -> float | None:
    """A finite number (Jackson writes doubles ≥ 1e7 as ``1.0E7``; json reads them as floats)."""
    if key not in obj or obj[key] is None:
        if required:
            raise RowProblem(field, "expected a number, but the field is missing")
        return default
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RowProblem(field, f"expected a number, got {_kind(v)} {str(v)[:40]!r}")
    try:
        v = float(v)
    except OverflowError:  # an integer literal of hundreds of digits
        raise RowProblem(field, f"expected a finite number, got an integer of {len(str(abs(v)))} digits") from None
    if not math.isfinite(v):
        raise RowProblem(field, f"expected a finite number, got {v}")
    if nonneg and v < 0:
        raise RowProblem(field, f"expected a number >= 0, got {v}")
    return v


def integer(obj: dict, key: str, field: str, *, required: bool = True, nonneg: bool = True, bits: int = 64) -> int | None:
    """An integer that fits Java's ``long`` (the lake's 64-bit columns), or its ``int`` with ``bits=32`` (the
    fields Pulsar declares ``int``: Jackson refuses larger values, and an ``int`` column cannot hold them)."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1)
    raw = obj.get(key)
    if isinstance(raw, int) and not isinstance(raw, bool):  # exact: a float cannot hold Long.MAX_VALUE
        if not low <= raw < high:
            raise RowProblem(field, f"expected an integer within {bits} bits, got {str(raw)[:30]}{'…' * (len(str(raw)) > 30)}")
        if nonneg and raw < 0:
            raise RowProblem(field, f"expected a number >= 0, got {raw}")
        return raw
    v = num(obj, key, field, required=required, nonneg=nonneg)  # 1.0E7 (Jackson) reads as a float
    if v is None:
        return None
    if v != int(v) or not low <= v < high:
        raise RowProblem(field, f"expected an integer within {bits} bits, got {v}")
    return int(v)


def boolean(obj: dict, key: str, field: str, default: bool) -> bool:
    """A JSON boolean; "true"/"false" strings read as Jackson coerces them; anything else is a problem."""
    v = obj.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise RowProblem(field, f"expected true or false, got {_kind(v)} {str(v)[:20]!r}")


def text(obj: dict, key: str, field: str, *, required: bool = True) -> str | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise RowProblem(field, "expected a string, but the field is missing")
        return None
    if not isinstance(v, str):
        raise RowProblem(field, f"expected a string, got {_kind(v)}")
    return v


def _bundle_full_name(name: str, field: str) -> tuple[str, str]:
    namespace, _, rng = name.rpartition("/")
    if not namespace or namespace.count("/") < 1:
        raise RowProblem(field, f"expected a bundle name tenant/namespace/0x…_0x…, got {name!r}")
    if problem := names.namespace_problem(namespace):
        raise RowProblem(field, problem)
    if problem := printed_range_problem(rng):
        raise RowProblem(field, problem)
    return namespace, rng


def _rows(items, make: Callable[[str, object], Row]) -> tuple[list[Row], list[Problem]]:
    rows, problems = [], []
    for key, value in items:
        try:
            rows.append(make(key, value))
        except RowProblem as exc:
            problems.append(exc.problem)
    return rows, problems


def _snake(name: str) -> str:
    out = []
    for ch in name:
        if ch.isupper():
            out.append("_" + ch.lower())
        else:
            out.append(ch)
    return "".join(out)
