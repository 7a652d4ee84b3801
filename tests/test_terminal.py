"""Names from the snapshots are shown escaped where a terminal or a browser would hide or obey them
(``model.names.visible``): a topic named with a right-to-left override read as another name on the command line,
and an anti-affinity group so named would in the report. A name printed inside a line keeps to that line
(``one_line``): a file named with line breaks printed lines that read as the program's."""

from __future__ import annotations

import json

from lb_pipeline.cli import main
from lb_pipeline.model.names import one_line, visible
from tests.conftest import DEMO_DAY

DISGUISED = "orders-1\u202egnp.exe\u200b\x1b[2J"


def test_controls_and_invisible_format_characters_are_escaped_and_the_rest_passes():
    assert visible("a\u202eb\u200bc\x1b[2J\u2028d\udcffe") == "a\\u202eb\\u200bc\\x1b[2J\\u2028d\\udcffe"
    assert visible("ünïcode 名前 🙂\n\ttab\r") == "ünïcode 名前 🙂\n\ttab\r"
    assert visible("\U000e0041") == "\\U000e0041"  # a tag character: invisible
    assert one_line("ünï 名\n\t\r\u202e") == "ünï 名\\x0a\\x09\\x0d\\u202e"


def _snapshot(folder):
    from lb_pipeline.snapshots.generate import generate

    generate(folder, "demo", seed=11, start=f"{DEMO_DAY}T08:00:00Z", snapshots=1)
    return next(folder.glob("*/*"))


def test_validate_snapshot_prints_a_disguised_topic_name_escaped(tmp_path, capsys):
    _snapshot(tmp_path)
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


def test_validate_snapshot_prints_a_file_named_with_line_breaks_on_one_line(tmp_path, capsys):
    snapshot = _snapshot(tmp_path)
    forged = "quarantine: 0 files, 0 rows — all clean"
    (snapshot / "topics" / f"x\n{forged}\ny.json").write_text("{}")
    assert main(["validate-snapshot", str(snapshot)]) == 1
    out = capsys.readouterr().out
    assert forged not in out.splitlines() and f"  topics/x\\x0a{forged}\\x0ay.json: (path): expected a file name" in out


def test_whatif_split_names_a_hot_topic_on_one_line(tmp_path):
    from types import SimpleNamespace

    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.whatif.split import BundleSplitWhatIf, render_text

    hot = BundleSplitWhatIf("t/n/0x00000000_0xffffffff", "b:8080", 2, 9e3, 1e6, "t1\nFAKE\u202e", 0.9, "not hot",
                            "not hot", [], [])
    snap = SimpleNamespace(directory=tmp_path, manifest={"cluster": "c"}, config=PulsarConfig())
    text = render_text([hot], snap)
    assert "  note: topic t1\\x0aFAKE\\u202e carries 90% of the load" in text
    assert not any(line.startswith("FAKE") for line in text.splitlines())


def test_whatif_and_simulate_name_a_file_with_line_breaks_on_one_line(tmp_path, capsys):
    from lb_pipeline.simulation.local import render_text

    snapshot = _snapshot(tmp_path)
    odd = snapshot / "namespaces" / "acme" / "x\nFAKE: fine.json"
    odd.write_text((snapshot / "namespaces" / "acme" / "orders.json").read_text())
    assert main(["whatif", "split", str(snapshot)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lb-pipeline: {snapshot}/namespaces/acme/x\\x0aFAKE: fine.json: field 'namespace'")
    assert err.count("\n") == 1
    text = render_text({"cluster": "c", "snapshots": 2, "brokers": 1, "bundles": 1, "runs": [], "notes": [f"{odd}: left out"],
                        "recommendation": {"rationale": "keep", "broker_conf": "", "commands": []}})
    assert text.endswith(f"note: {snapshot}/namespaces/acme/x\\x0aFAKE: fine.json: left out")


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
    (tmp_path / "c1" / f"{DEMO_DAY}T09-00-00Z\nFAKE: all good").mkdir()
    assert run.main(["--landing", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"c1/{DEMO_DAY}T08-00-00Z\\u202e: not a snapshot time" in err and "\u202e" not in err
    assert f"c1/{DEMO_DAY}T09-00-00Z\\x0aFAKE: all good: not a snapshot time" in err
    assert not any(line.startswith("FAKE") for line in err.splitlines())
