"""Render the nightly report (one self-contained HTML file per cluster and night) and the index of nights.

Templates live in the top-level ``reports/`` folder. Autoescape is forced on for every template (a topic named
``<script>`` renders as text); only our own SVG is marked safe.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from lb_pipeline import __version__
from lb_pipeline.model.names import visible
from lb_pipeline.planning.forecast import PEER_NIGHTS

BROKER_ROWS_SHOWN = 25  # the broker table's hottest rows; the rest fold (a 1,000-broker table is not read)


def templates_dir() -> Path:
    """The repository's ``reports/`` (editable installs, CI) or the copy installed as data files."""
    candidates = [Path(os.environ["LB_REPORT_TEMPLATES"])] if os.environ.get("LB_REPORT_TEMPLATES") else []
    candidates += [Path(__file__).resolve().parents[2] / "reports", Path(sys.prefix) / "share" / "lb_pipeline" / "reports"]
    for c in candidates:
        if (c / "nightly.html.j2").is_file():
            return c
    raise FileNotFoundError("report templates not found; set LB_REPORT_TEMPLATES to the reports/ folder")


def environment() -> jinja2.Environment:
    # Names Pulsar leaves free (anti-affinity groups, failure domains) are shown with a right-to-left override or a
    # zero-width space escaped (model.names.visible): autoescape stops markup, not a name disguised as another.
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=lambda v: visible(v) if type(v) is str else v)  # Markup (the charts) as it is
    env.filters["pct"] = lambda v: "–" if v is None else f"{v:.1%}"
    env.filters["num"] = lambda v, d=0: "–" if v is None else f"{v:,.{d}f}"
    env.filters["mib"] = lambda v: "–" if v is None else f"{v / 1048576:,.1f} MiB/s"
    env.filters["code"] = code_spans
    return env


def code_spans(text: str | None) -> Markup:
    """``text`` escaped, its backquoted spans (the commands a finding's action names) as ``<code>``: a command is
    always set apart from the prose around it, so that it can be copied, and checked, whole."""
    parts = escape(visible(text or "")).split("`")
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def render_nightly(context: dict) -> str:
    from lb_pipeline.report import svg

    heat = context["heat"]
    charts = {
        "heatmap_svg": svg.heatmap(heat["rows"].hot, heat["times"], heat["values"], "Broker max usage by snapshot",
                                   heat.get("idle", set())),
        "heatmap_calm_svg": svg.heatmap(heat["rows"].calm, heat["times"], heat["values"],
                                        "Max usage of the brokers that stayed in the comfortable band",
                                        heat.get("idle", set())),
        "strategy_svg": svg.bars([(s["name"], s["spread_after"]) for s in context["strategies"]], "msg/s",
                                 "Spread of broker message rates after each strategy's moves"),
    }
    sim = context.get("simulation")
    charts["simulation_svg"] = svg.lines(sim["series"], sim["labels"], "Load spread (std of weighted max usage, unpinned brokers) per run",
                                         "std of brokers' weighted max usage, UTC on the time axis",
                                         percent=True) if sim else ""
    charts["pareto_svg"] = svg.scatter([(r["strategy"], r["spread"], r["reconnections"], r["on_front"])
                                        for r in sim["runs"] if r["simulated"]], "Spread against churn per run (red: the Pareto front)",
                                       "spread (mean std of weighted max usage, unpinned brokers)", "client reconnections") if sim else ""
    cap = context.get("capacity")
    charts["capacity_svgs"] = [(r["subject"] + (f" ({r['note']})" if r.get("scope") == "domain" and r.get("note") else ""),
                                svg.forecast(r["daily_peaks"] or [], r["forecast"] or [], r["forecast_low"] or [],
                                                           r["forecast_high"] or [], r["threshold"],
                                                           f"Daily peak max usage of {r['subject']} and its forecast"))
                               for r in ([cap["headline"]] + cap["domains"] if cap and cap["enough"] else [])]
    return environment().get_template("nightly.html.j2").render(version=__version__, broker_rows_shown=BROKER_ROWS_SHOWN,
                                                                peer_nights=PEER_NIGHTS,
                                                                **context, **charts)


def render_index(nights: list[dict], cluster: str) -> str:
    return environment().get_template("index.html.j2").render(version=__version__, nights=nights, cluster=cluster)


def write_report(out_dir: str | Path, cluster: str, day: str, html: str, partial: dict[str, dict] | None = None) -> Path:
    """``<out>/<cluster>/<day>.html`` and a refreshed ``<out>/<cluster>/index.html`` of every night there, and of
    the ``partial`` nights (``night_runs.partial_nights``: stopped half-way, with or without a report of an earlier
    run), marked as such; the path returned is absolute (the asset links it as a ``file://`` URI, and
    ``LB_REPORTS_DIR`` may be relative)."""
    folder = Path(out_dir).resolve() / cluster
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{day}.html"
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    partial = {d: p for d, p in (partial or {}).items() if d != day}
    files = {p.stem: p.name for p in folder.glob("????-??-??.html")}
    nights = [{"day": d, "file": files.get(d), "partial": partial.get(d)}
              for d in sorted(files.keys() | partial.keys(), reverse=True)]
    (folder / "index.html").write_text(render_index(nights, cluster), encoding="utf-8")
    return path
