"""What the command line prints is read in a terminal, and names come from the snapshots: a topic's local name may
hold any character Pulsar accepts. Everything printed goes through :func:`lb_pipeline.model.names.visible`."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from lb_pipeline.model.names import visible


class _Escaping:
    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(visible(text))

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
