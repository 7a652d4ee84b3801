"""Names from the snapshots are shown escaped where a terminal or a browser would hide or obey them
(``model.names.visible``): a topic named with a right-to-left override read as another name on the command line,
and an anti-affinity group so named would in the report."""

from __future__ import annotations

import json

from lb_pipeline.cli import main
from lb_pipeline.model.names import visible
from tests.conftest import DEMO_DAY

DISGUISED = "orders-1\u202egnp.exe\u200b\x1b[2J"


def test_controls_and_invisible_format_characters_are_escaped_and_the_rest_passes():
    assert visible("a\u202eb\u200bc\x1b[2J\u2028d\udcffe") == "a\\u202eb\\u200bc\\x1b[2J\\u2028d\\udcffe"
    assert visible("ünïcode 名前 🙂\n\ttab\r") == "ünïcode 名前 🙂\n\ttab\r"
    assert visible("\U000e0041") == "\\U000e0041"  # a tag character: invisible


def test_validate_snapshot_prints_a_disguised_topic_name_escaped(tmp_path, capsys):
    from lb_pipeline.snapshots.generate import generate

    generate(tmp_path, "demo", seed=11, start=f"{DEMO_DAY}T08:00:00Z", snapshots=1)
    stats = sorted(tmp_path.glob("*/*/topics/*.json"))[0]
    doc = json.loads(stats.read_text())
    topics = next(iter(next(iter(doc.values())).values()))["persistent"]
    name = next(iter(topics))
    topics[name + DISGUISED] = topics.pop(name)  # hashes elsewhere: validate-snapshot names it
    stats.write_text(json.dumps(doc))
    assert main(["validate-snapshot", str(stats.parents[1])]) == 1
    out = capsys.readouterr().out
    assert f"{name}orders-1\\u202egnp.exe\\u200b\\x1b[2J" in out
    assert not any(c in out for c in "\u202e\u200b\x1b")


def test_the_report_shows_a_disguised_name_escaped_and_its_own_markup_as_it_is():
    from markupsafe import Markup

    from lb_pipeline.report.render import environment

    page = environment().from_string("<p>{{ message }}</p>{{ chart }}{{ groups|join(', ') }}").render(
        message=f"broker b holds 2 namespaces of group {DISGUISED}<b>", chart=Markup("<svg>\u200b</svg>"),
        groups=["a\u202eb", "c"])
    assert page == ("<p>broker b holds 2 namespaces of group orders-1\\u202egnp.exe\\u200b\\x1b[2J&lt;b&gt;</p>"
                    "<svg>\u200b</svg>a\\u202eb, c")


def test_the_main_command_names_a_disguised_folder_escaped(tmp_path, capsys):
    from assets import run

    (tmp_path / "c1" / f"{DEMO_DAY}T08-00-00Z\u202e").mkdir(parents=True)
    assert run.main(["--landing", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"c1/{DEMO_DAY}T08-00-00Z\\u202e: not a snapshot time" in err and "\u202e" not in err
