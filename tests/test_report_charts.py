"""The report's charts a planner can read: values and units on the axes, legends, labels that neither overlap nor
leave the chart, idle brokers told apart. The same in the browser: ``test_report_browser.py``."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from lb_pipeline.report import svg
from lb_pipeline.report.simulation import time_labels


def _texts(markup: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", str(markup))


def test_the_pareto_chart_has_values_on_both_axes_and_labels_kept_apart():
    """Seven runs, four of them at nearly the same point: the labels were drawn over each other."""
    points = [("no-balancing", 0.221, 0, False), ("as-recorded", 0.223, 120, False),
              ("OverloadShedder", 0.2211, 118, True), ("ThresholdShedder", 0.2230, 121, False),
              ("UniformLoadShedder", 0.2212, 119, False), ("AvgShedder", 0.15, 3000, True),
              ("TransferShedder", 0.30, 2990, False)]
    chart = str(svg.scatter(points, "t", "imbalance", "client reconnections"))
    texts = _texts(chart)
    assert "0.0%" in texts and any(t.endswith("%") and t != "0.0%" for t in texts)  # x values, in percent
    assert "0" in texts and any(t.replace(",", "").isdigit() and int(t.replace(",", "")) >= 1000 for t in texts)
    boxes = []
    for x, y, anchor, text in re.findall(r'<text x="([\d.]+)" y="([\d.]+)" font-size="10" text-anchor="(start|end)">'
                                         r"([^<]*)</text>", chart):
        w = svg.CHAR_WIDTH * 10 * len(text)
        x0 = float(x) if anchor == "start" else float(x) - w
        boxes.append((x0, float(y) - 10, x0 + w, float(y) + 2, text))
    assert {"AvgShedder", "TransferShedder"} <= {b[4] for b in boxes}
    for i, a in enumerate(boxes):
        assert 0 <= a[0] and a[2] <= 640, a
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    # every point keeps its name in its tooltip, labelled or not
    assert all(f"<title>{name}: " in chart for name, *_ in points)


def test_the_time_axis_marks_whole_hours_and_keeps_its_last_label_inside():
    start = datetime(2026, 1, 15, 0, 0)
    day = [start + timedelta(minutes=12 * i) for i in range(120)]
    labels = time_labels(day)
    assert [t for _, t in labels] == ["00:00", "04:00", "08:00", "12:00", "16:00", "20:00"]
    short = [start + timedelta(minutes=7 + i) for i in range(30)]  # no whole hour: first and last
    assert time_labels(short) == [(0, "00:07"), (29, "00:36")]
    chart = str(svg.lines({"a": [0.1] * 120}, [(0, "00:00"), (119, "23:48")], "t", "std", percent=True))
    assert 'text-anchor="end">23:48' in chart and 'text-anchor="start">00:00' in chart
    assert {"0.0%", "5.0%", "10.0%"} <= set(_texts(chart)) and "std" in _texts(chart)


def test_the_heatmap_has_a_colour_legend_and_hatches_idle_brokers():
    values = {("b1", "00:00"): 0.9, ("b2", "00:00"): 0.05, ("b3", "00:00"): None}
    chart = str(svg.heatmap(["b1", "b2", "b3"], ["00:00"], values, "t", idle={("b2", "00:00")}))
    assert {"0 %", "50 %", "85 %", "100 %+", "no report", "idle: no bundle"} <= set(_texts(chart))
    assert 'fill="url(#idle)"><title>b2 at 00:00: 5%, idle: no bundle</title>' in chart
    assert 'fill="url(#idle)"><title>b1' not in chart
