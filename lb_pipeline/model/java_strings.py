"""Two Java string tests Pulsar's anti-affinity code runs on raw group names, as Python.

* ``StringUtils.isNotBlank`` (commons-lang3): a namespace has a group when its name holds a character that is not
  ``Character.isWhitespace``, which counts ASCII whitespace, the file, group, record and unit separators and the
  Unicode space, line and paragraph separators, but not the no-break spaces (U+00A0, U+2007, U+202F). Python's
  ``str.strip`` and ``str.isspace`` differ on both sides of that line.
* ``String.equalsIgnoreCase``: two names of the same length whose characters are equal, or equal after
  ``Character.toUpperCase``, or after ``toLowerCase`` of that. The mapping is one character to one; Python's
  ``str.upper`` maps ``ß`` to ``SS``, so a mapping to several characters keeps the character, as Java's does.
  ``ignore_case_key`` is that comparison as a key: two names are ``equalsIgnoreCase`` exactly when their keys are
  equal. The group names are compared raw, never trimmed.

Checked against Java 17 for every character of the Basic Multilingual Plane: the same whitespace and the same keys,
but for five characters Unicode added after Java 17's tables (U+2C2F, U+A7C0, U+A7D0, U+A7D6, U+A7D8), which Java 17
leaves as they are.
"""

from __future__ import annotations

import unicodedata

_JAVA_SPACE_CONTROLS = frozenset("\t\n\u000b\f\r\u001c\u001d\u001e\u001f")
_NO_BREAK = frozenset("\u00a0\u2007\u202f")


def java_is_whitespace(c: str) -> bool:
    if c in _JAVA_SPACE_CONTROLS:
        return True
    return c not in _NO_BREAK and unicodedata.category(c) in ("Zs", "Zl", "Zp")


def is_blank(text: str | None) -> bool:
    return text is None or all(java_is_whitespace(c) for c in text)


def _one(mapped: str, c: str) -> str:
    return mapped if len(mapped) == 1 else c


def _key(c: str) -> str:
    upper = _one(c.upper(), c)
    return "i" if upper == "\u0130" else _one(upper.lower(), upper)  # İ: Java's simple lowercase, not Python's full


def ignore_case_key(text: str) -> str:
    return "".join(map(_key, text))
