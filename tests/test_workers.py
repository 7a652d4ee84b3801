"""The Python-worker helpers: the cycle collector paused for allocation-heavy work, and put back as it was."""

import gc
import json

import pytest

from lb_pipeline.workers import collector_paused


@pytest.fixture
def collector_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_paused_inside_and_running_again_after(collector_enabled):
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_as_a_decorator_it_pauses_every_call_and_returns_the_result(collector_enabled):
    @collector_paused()
    def replay(n):
        return [gc.isenabled() for _ in range(n)]

    assert replay(2) == [False, False] and gc.isenabled()
    assert replay(1) == [False] and gc.isenabled()


def test_the_collector_runs_again_when_the_work_raises(collector_enabled):
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("a parser bug")
    assert gc.isenabled()


def test_a_collector_paused_by_the_caller_stays_paused(collector_enabled):
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


_PARSE_AND_COUNT_CYCLES = """
import gc, json
from lb_pipeline.formats import values as p
from lb_pipeline.formats.topics import parse_topic_stats
from lb_pipeline.workers import collector_paused

doc = {"t/ns": {"0x00000000_0xffffffff": {"persistent": {
    f"persistent://t/ns/x{i}": {"msgRateIn": 1.5, "msgRateOut": 2.0, "msgThroughputIn": 3.0,
                                 "msgThroughputOut": 4.0, "producerCount": 1,
                                 "subscriptions": {"s": {"consumers": [{"a": 1}]}}} for i in range(50)}}}}
raw = json.dumps(doc).encode()
parse_topic_stats(p.load_json(raw), "b")  # a first parse: what it imports on first use is not the parse's garbage
gc.enable()
gc.collect()
gc.set_debug(gc.DEBUG_SAVEALL)  # whatever any collection finds from here on stays in gc.garbage, counted below
with collector_paused():
    rows, problems = parse_topic_stats(p.load_json(raw), "b")
    assert len(rows) == 50 and not problems, (len(rows), problems)
    del rows, problems
gc.collect()
print(len(gc.garbage))
"""


def test_a_parsed_topic_file_leaves_no_cycles_for_the_collector():
    # why pausing is safe for the bronze parse: what it allocates, reference counting frees.
    # Counted in a fresh interpreter: in the suite's, other threads (a background night's Spark
    # callbacks) make their own garbage while the collector is paused, which says nothing of the parse.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PARSE_AND_COUNT_CYCLES], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["0"], out.stdout + out.stderr
