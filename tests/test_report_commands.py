"""Every command the report prints runs as printed: it stands apart from the prose (``<pre>`` or ``<code>``) and
parses with ``pulsar-admin``'s grammar (``tests/pulsar_admin.py``): required options present, no placeholder."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import DEMO_DAY
from tests.pulsar_admin import parse


class _Commands(HTMLParser):
    """The text of every <pre> and <code> element, and the prose outside them."""

    def __init__(self):
        super().__init__()
        self.depth, self.code, self.prose, self._buf = 0, [], [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("pre", "code"):
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in ("pre", "code") and self.depth:
            self.depth -= 1
            if not self.depth:
                self.code.append("".join(self._buf))
                self._buf = []

    def handle_data(self, data):
        (self._buf if self.depth else self.prose).append(data)


def commands_of(html: str) -> tuple[list[str], str]:
    found = _Commands()
    found.feed(html)
    lines = [line.strip() for block in found.code for line in block.splitlines()]
    return [line for line in lines if line.startswith("pulsar-admin")], "".join(found.prose)


def test_the_grammar_refuses_what_the_report_once_printed():
    for bad in ("pulsar-admin namespaces split-bundle initech/payments",  # no --bundle
                "pulsar-admin namespaces split-bundle --bundle 0x00000000_0xffffffff",  # no namespace
                "pulsar-admin namespaces unload t/ns --bundle N",
                "pulsar-admin brokers update-dynamic-config --config loadManagerClassName",
                "pulsar-admin clusters update-failure-domain c --domain-name d --broker-list …"):
        with pytest.raises(ValueError):
            parse(bad)
    ok = parse("pulsar-admin namespaces split-bundle --bundle 0x00000000_0x40000000 --unload 't/it'\"'\"'s'")
    assert ok["args"] == ["t/it's"] and ok["options"]["--unload"] is True


def test_every_command_in_the_demo_report_parses_and_none_hides_in_the_prose(pipeline_run):
    _, _, reports_root = pipeline_run
    (report,) = sorted(Path(reports_root).glob(f"*/{DEMO_DAY}.html"))
    commands, prose = commands_of(report.read_text())
    assert commands, "the demo report prints no command"
    for command in commands:
        parse(command)
    assert "pulsar-admin" not in prose


def test_every_command_of_a_report_with_every_kind_of_action_parses():
    """The hand-made report with a split, a move, a decision to change and a finding's command."""
    from lb_pipeline.report.render import render_nightly
    from tests.test_report import _context
    from tests.test_report_decision import _decision_sim

    few = {"severity": "info", "detector": "fewer bundles than brokers", "items": [
        {"severity": "info", "detector": "fewer bundles than brokers", "subject": "t/small", "summary": "2 bundles",
         "snapshots": 1, "evidence": "[]", "action": "Split its widest bundle, `pulsar-admin namespaces split-bundle "
         "--bundle 0x40000000_0xffffffff --unload t/small`, until it has a bundle per broker"}]}
    sim = _decision_sim(commands=["pulsar-admin brokers update-dynamic-config --config "
                                  "loadBalancerLoadSheddingStrategy --value "
                                  "org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder"])
    html = render_nightly(_context(
        simulation=sim, findings=[few], split_trigger="modular",
        actions={"splits": [{"bundle": "t/ns/0x00000000_0x40000000", "why": "w", "command":
                             "pulsar-admin namespaces split-bundle --bundle 0x00000000_0x40000000 "
                             "--split-algorithm-name range_equally_divide --unload t/ns"}],
                 "unloads": [{"bundle": "t/ns/0x40000000_0x80000000", "source": "b1", "destination": "b2", "why": "w",
                              "command": "pulsar-admin namespaces unload t/ns --bundle 0x40000000_0x80000000"}]}))
    commands, prose = commands_of(html)
    assert len(set(commands)) == 4  # the finding's twice: in the table and in its details
    for command in commands:
        parse(command)
    assert "pulsar-admin" not in prose
