"""The Spark JVM's start-up noise, held back unless the start fails.

Every start resolves Delta's coordinates with Ivy, which prints its whole resolution report (about 80 lines: the
settings, every module "found … in central", the artifacts table) to the JVM's console, along with the JVM's and
Spark's start-up banners. :func:`quiet_start` runs the start with the process's stdout and stderr going through a
pipe: the lines written while the JVM starts are held, printed in full if the start fails (they say why) and
otherwise printed without the start-up noise (``NOISE``); everything the JVM writes later is forwarded as it comes.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from contextlib import contextmanager

NOISE = re.compile(
    r"^(?::: |\s|$)|^Ivy Default Cache set to|^The jars for the packages stored in|^\S+#\S+ added as a dependency"
    r"|^WARNING: Using incubator modules|^Using Spark's default log4j profile|^Setting default log level to"
    r"|^To adjust logging level use|^\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN (?:Utils|NativeCodeLoader|SparkContext):")


class _Forwarder(threading.Thread):
    """Reads the pipe; holds lines while ``holding``, else writes them to ``out`` (the original stderr)."""

    def __init__(self, read_fd: int, out_fd: int):
        super().__init__(name="spark-console", daemon=True)
        self.read_fd, self.out_fd = read_fd, out_fd
        self.held: list[bytes] = []
        self.holding = True
        self.filter_until = 0.0  # start-up lines still in the pipe when the start returned are noise too
        self.lock = threading.Lock()

    def run(self) -> None:
        with os.fdopen(self.read_fd, "rb", buffering=0) as pipe:
            pending = b""
            while chunk := pipe.read(65536):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                with self.lock:
                    for line in lines:
                        self._emit(line + b"\n")
            if pending:
                with self.lock:
                    self._emit(pending)

    def _emit(self, line: bytes) -> None:
        if self.holding:
            self.held.append(line)
        elif time.monotonic() >= self.filter_until or not NOISE.search(line.decode("utf-8", "replace")):
            os.write(self.out_fd, line)

    def release(self, failed: bool) -> None:
        """Stops holding: prints every held line if the start failed, else those that are no start-up noise."""
        with self.lock:
            self.holding = False
            self.filter_until = 0.0 if failed else time.monotonic() + 2.0
            for line in self.held:
                if failed or not NOISE.search(line.decode("utf-8", "replace")):
                    os.write(self.out_fd, line)
            self.held.clear()


@contextmanager
def quiet_start():
    """Around the JVM's start (``getOrCreate``): the child inherits the pipe as its stdout and stderr; the parent's
    own descriptors are restored when the block ends. Set ``LB_SPARK_START_VERBOSE=1`` to see everything."""
    if os.environ.get("LB_SPARK_START_VERBOSE") == "1":
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    saved_out, saved_err = os.dup(1), os.dup(2)
    forwarder = _Forwarder(read_fd, os.dup(saved_err))
    forwarder.start()
    failed = True
    try:
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        yield
        failed = False
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        for fd in (saved_out, saved_err, write_fd):
            os.close(fd)  # the JVM keeps its own copy of the pipe's end: lines it writes later are forwarded
        if failed:
            forwarder.join(timeout=2.0)  # an exited JVM closed its end: every line it wrote has been read
        forwarder.release(failed)
