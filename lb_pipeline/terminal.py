"""What the command line prints is read in a terminal, and names come from the snapshots: a topic's local name may
hold any character Pulsar accepts. Control and format characters are printed escaped (``\\u202e``), so a
right-to-left override or a zero-width space cannot make one name look like another (CVE-2021-42574, "Trojan
Source"), and an escape sequence cannot rewrite the operator's screen. Line breaks, tabs and the carriage return
of the progress bar pass."""

from __future__ import annotations

import re
import sys
import unicodedata
from contextlib import contextmanager

_SUSPECT = re.compile(r"[^\x20-\x7e\n\t\r]")  # printable ASCII is never looked at twice
_HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # controls, format (bidi, zero-width), lone surrogates, line separators


def _escape(match: re.Match) -> str:
    c = match.group()
    if unicodedata.category(c) not in _HIDDEN:
        return c
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"


def escaped(text: str) -> str:
    return _SUSPECT.sub(_escape, text)


class _Escaping:
    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(escaped(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def escaping_output():
    """``sys.stdout`` and ``sys.stderr`` escape what they print while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaping(sys.stdout), _Escaping(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
