"""Inline SVG charts (no script, no network): the broker × time heatmap, bars, lines, the Pareto scatter and the
forecast; axes with values and units, legends, labels that neither overlap nor leave the chart."""

from __future__ import annotations

from markupsafe import Markup, escape


def _color(value: float | None) -> str:
    if value is None:
        return "#e5e7eb"
    v = max(0.0, min(value, 1.2))
    if v < 0.5:  # green → amber
        r, g, b = int(34 + (245 - 34) * v / 0.5), int(197 - (197 - 158) * v / 0.5), int(94 - 83 * v / 0.5)
    else:  # amber → red
        t = min((v - 0.5) / 0.4, 1.0)
        r, g, b = int(245 - (245 - 220) * t), int(158 - (158 - 38) * t), int(11 + (38 - 11) * t)
    return f"rgb({r},{g},{b})"


CHAR_WIDTH = 0.6  # of the font size: a label's width, conservatively, to keep labels apart and inside the chart


def _legend_scale(x: float, y: float) -> list[str]:
    """The heatmap's colour legend: the usage scale, "no report" and "idle" swatches."""
    out = [f'<text x="{x}" y="{y + 10}" font-size="10" text-anchor="end">max usage</text>']
    for k, (v, label) in enumerate([(0.0, "0 %"), (0.5, "50 %"), (0.85, "85 %"), (1.0, "100 %+")]):
        cx = x + 8 + k * 58
        out.append(f'<rect x="{cx}" y="{y}" width="14" height="12" fill="{_color(v)}"/>'
                   f'<text x="{cx + 18}" y="{y + 10}" font-size="10">{label}</text>')
    cx = x + 8 + 4 * 58
    out.append(f'<rect x="{cx}" y="{y}" width="14" height="12" fill="{_color(None)}"/>'
               f'<text x="{cx + 18}" y="{y + 10}" font-size="10">no report</text>')
    cx += 80
    out.append(f'<rect x="{cx}" y="{y}" width="14" height="12" fill="url(#idle)" stroke="#6b7280"/>'
               f'<text x="{cx + 18}" y="{y + 10}" font-size="10">idle: no bundle</text>')
    return out


_IDLE_PATTERN = ('<defs><pattern id="idle" width="6" height="6" patternUnits="userSpaceOnUse" '
                 'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3f4f6"/>'
                 '<line x1="0" y1="0" x2="0" y2="6" stroke="#6b7280" stroke-width="2"/></pattern></defs>')


def heatmap(brokers: list[str], times: list[str], values: dict[tuple[str, str], float], title: str,
            idle: set[tuple[str, str]] = frozenset()) -> Markup:
    """Rows = brokers, columns = snapshot times, colour = max usage (1.0 = 100 %); a broker owning no bundle at a
    snapshot is hatched (idle, whatever its usage), a missing report grey; a legend under the cells."""
    cell, left, top = 22, 230, 40
    legend_w = 8 + 4 * 58 + 80 + 110
    width = max(left + cell * len(times) + 10, left + legend_w)
    height = top + cell * len(brokers) + 30
    every = max(1, -(-48 // cell))  # a time label needs about 48 px: every third cell at 22 px
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px">',
             f"<title>{escape(title)}</title>", _IDLE_PATTERN,
             f'<text x="{left - 6}" y="{top - 8}" font-size="10" text-anchor="end">UTC</text>']
    for j, t in enumerate(times):
        if j % every == 0:
            parts.append(f'<text x="{left + j * cell + 2}" y="{top - 8}" font-size="10">{escape(t)}</text>')
    for i, b in enumerate(brokers):
        y = top + i * cell
        parts.append(f'<text x="{left - 6}" y="{y + 15}" font-size="11" text-anchor="end">{escape(b)}</text>')
        for j, t in enumerate(times):
            v = values.get((b, t))
            lazy = (b, t) in idle
            label = "no report" if v is None else f"{v:.0%}" + (", idle: no bundle" if lazy else "")
            parts.append(f'<rect class="cell" x="{left + j * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                         f'fill="{"url(#idle)" if lazy else _color(v)}"><title>{escape(b)} at {escape(t)}: '
                         f'{label}</title></rect>')
    parts += _legend_scale(left, top + cell * len(brokers) + 8)
    parts.append("</svg>")
    return Markup("".join(parts))


def bars(items: list[tuple[str, float]], unit: str, title: str) -> Markup:
    """Horizontal bars for a few labelled values."""
    row, left, scale = 20, 200, 360
    top = max((v for _, v in items), default=0) or 1.0
    height = row * len(items) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {left + scale + 120} {height}" width="100%" style="max-width:{left + scale + 120}px">',
             f"<title>{escape(title)}</title>"]
    for i, (label, v) in enumerate(items):
        y = i * row + 4
        w = scale * v / top
        parts.append(f'<text x="{left - 6}" y="{y + 12}" font-size="11" text-anchor="end">{escape(label)}</text>'
                     f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{row - 6}" fill="#2563eb"/>'
                     f'<text x="{left + w + 4:.1f}" y="{y + 12}" font-size="11">{v:,.1f} {escape(unit)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


_PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#6b7280", "#111827", "#db2777")


def lines(series: dict[str, list[float]], labels: list[tuple[int, str]], title: str, unit: str = "",
          percent: bool = False) -> Markup:
    """One polyline per named series over shared x positions, ``labels`` (index, text) marking a few of them, a
    y axis with three values (in percent when ``percent``), the unit, and a legend."""
    width, height, left, top, legend = 640, 220, 56, 12, 18
    n = max((len(v) for v in series.values()), default=0)
    peak = max((x for v in series.values() for x in v if x == x), default=0.0) or 1.0
    plot_h = height - top - 28
    plot_w = width - left - 10

    def xy(i: int, v: float) -> str:
        return f"{left + plot_w * i / max(1, n - 1):.1f},{top + plot_h * (1 - v / peak):.1f}"

    def value(v: float) -> str:
        return f"{v:.1%}" if percent else f"{v:,.3g}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height + legend * len(series)}" width="100%" style="max-width:{width}px">',
             f"<title>{escape(title)}</title>",
             f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#9ca3af"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#9ca3af"/>']
    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - frac)
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{value(peak * frac)}</text>'
                     f'<line x1="{left - 2}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#9ca3af"/>')
    if unit:
        parts.append(f'<text x="{left + 4}" y="{top + 8}" font-size="10" fill="#6b7280">{escape(unit)}</text>')
    for i, label in labels:
        x = left + plot_w * i / max(1, n - 1)
        anchor = "start" if x - left < 20 else ("end" if width - 10 - x < 20 else "middle")
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" font-size="10" text-anchor="{anchor}">{escape(label)}</text>'
                     f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 3}" stroke="#9ca3af"/>')
    for k, (name, values) in enumerate(series.items()):
        color = _PALETTE[k % len(_PALETTE)]
        points = " ".join(xy(i, v) for i, v in enumerate(values) if v == v)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{points}">'
                     f"<title>{escape(name)}</title></polyline>")
        y = height + legend * k + 4
        parts.append(f'<rect x="{left}" y="{y}" width="12" height="4" fill="{color}"/>'
                     f'<text x="{left + 18}" y="{y + 6}" font-size="11">{escape(name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _ticks(hi: float) -> list[float]:
    """0 and two round values up to ``hi``."""
    if hi <= 0:
        return [0.0]
    from math import floor, log10

    step = 10 ** floor(log10(hi / 2))
    for m in (1, 2, 5, 10):
        if hi / (m * step) <= 3:
            step *= m
            break
    return [k * step for k in range(int(hi / step) + 1)]


def _place(labels: list[tuple[float, float, str]], width: float, height: float, size: float = 10) -> list:
    """Label positions (x, y, anchor, text) beside their points that neither overlap each other nor leave the
    chart: right of the point, else left, else a line lower or higher; a label with no room is left out (the
    point's tooltip still names it)."""
    placed, boxes = [], []
    for cx, cy, text in sorted(labels, key=lambda p: (p[1], p[0])):
        w = CHAR_WIDTH * size * len(text) + 2
        for dx, dy in ((7, 4), (-7, 4), (7, 4 + size + 2), (-7, 4 + size + 2), (7, 4 - size - 2), (-7, 4 - size - 2)):
            x0 = cx + dx if dx > 0 else cx + dx - w
            y0 = cy + dy - size
            box = (x0, y0, x0 + w, y0 + size + 2)
            if box[0] < 0 or box[2] > width or box[1] < 0 or box[3] > height:
                continue
            if any(not (box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1]) for b in boxes):
                continue
            boxes.append(box)
            placed.append((cx + dx, cy + dy, "start" if dx > 0 else "end", text))
            break
    return placed


def scatter(points: list[tuple[str, float, float, bool]], title: str, x_label: str, y_label: str) -> Markup:
    """Labelled points (label, x, y, highlighted): the Pareto chart of imbalance (x, a fraction shown in percent)
    against churn (y, a count), with values on both axes; labels kept apart and inside the chart."""
    width, height, left, bottom = 640, 270, 72, 44
    xs, ys = [p[1] for p in points] or [0.0], [p[2] for p in points] or [0.0]
    x_ticks, y_ticks = _ticks((max(xs) or 0.01) * 1.05), _ticks((max(ys) or 1.0) * 1.05)
    x_hi, y_hi = max(x_ticks[-1], (max(xs) or 0.01) * 1.05), max(y_ticks[-1], (max(ys) or 1.0) * 1.05)
    plot_w, plot_h = width - left - 16, height - bottom - 10

    def at(x: float, y: float) -> tuple[float, float]:
        return left + plot_w * x / x_hi, 10 + plot_h * (1 - y / y_hi)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px">', f"<title>{escape(title)}</title>",
             f'<line x1="{left}" y1="{10 + plot_h}" x2="{width - 16}" y2="{10 + plot_h}" stroke="#9ca3af"/>',
             f'<line x1="{left}" y1="10" x2="{left}" y2="{10 + plot_h}" stroke="#9ca3af"/>',
             f'<text x="{left + plot_w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">{escape(x_label)}</text>',
             f'<text x="12" y="{10 + plot_h / 2}" font-size="11" text-anchor="middle" '
             f'transform="rotate(-90 12 {10 + plot_h / 2})">{escape(y_label)}</text>']
    for t in x_ticks:
        x, _ = at(t, 0)
        parts.append(f'<line x1="{x:.1f}" y1="{10 + plot_h}" x2="{x:.1f}" y2="{14 + plot_h}" stroke="#9ca3af"/>'
                     f'<text x="{x:.1f}" y="{26 + plot_h}" font-size="10" text-anchor="middle">{t:.1%}</text>')
    for t in y_ticks:
        _, y = at(0, t)
        parts.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#9ca3af"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{t:,.0f}</text>')
    spots = []
    for label, x, y, hot in points:
        cx, cy = at(x, y)
        color = "#dc2626" if hot else "#2563eb"
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{5 if hot else 4}" fill="{color}">'
                     f"<title>{escape(label)}: {x:.1%} imbalance, {y:,.0f}</title></circle>")
        spots.append((cx, cy, label))
    # labels stay clear of the axes' values too
    for x, y, anchor, text in _place(spots, width - 16, 10 + plot_h - 2):
        if (anchor == "end" and x - CHAR_WIDTH * 10 * len(text) < left + 2) or (anchor == "start" and x < left + 2):
            continue
        parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="10" text-anchor="{anchor}">{escape(text)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def forecast(history: list[float], expected: list[float], low: list[float], high: list[float], threshold: float,
             title: str) -> Markup:
    """Daily peaks recorded (solid), the forecast (dashed) inside its 5-95 % band (shaded), the threshold (red);
    values in percent."""
    width, height, left, top, bottom = 640, 200, 48, 10, 24
    n = len(history) + len(expected)
    # the axis follows the threshold and what was recorded; a wide band is clipped rather than flattening the rest
    top_v = max([threshold * 1.25, *[v * 1.1 for v in history + expected if v == v]]) or 1.0
    plot_w, plot_h = width - left - 10, height - top - bottom

    def x(i: int) -> float:
        return left + plot_w * i / max(1, n - 1)

    def y(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(v, top_v)) / top_v)

    now = len(history) - 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px">', f"<title>{escape(title)}</title>",
             f'<text x="{left - 4}" y="{top + 8}" font-size="10" text-anchor="end">{top_v:.0f} %</text>',
             f'<text x="{left - 4}" y="{top + plot_h}" font-size="10" text-anchor="end">0</text>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#9ca3af"/>',
             f'<line x1="{left}" y1="{y(threshold):.1f}" x2="{width - 10}" y2="{y(threshold):.1f}" stroke="#dc2626" '
             f'stroke-dasharray="2 2"><title>threshold {threshold:.0f} %</title></line>',
             f'<text x="{x(now):.1f}" y="{height - 8}" font-size="10" text-anchor="middle">today</text>',
             f'<text x="{width - 10}" y="{height - 8}" font-size="10" text-anchor="end">+{len(expected)} days</text>']
    if expected:
        band = [f"{x(now + 1 + i):.1f},{y(v):.1f}" for i, v in enumerate(high)]
        band += [f"{x(now + 1 + i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(low)))]
        parts.append(f'<polygon points="{" ".join(band)}" fill="#bfdbfe" opacity="0.7"><title>5-95 % band</title></polygon>')
        line = [f"{x(now):.1f},{y(history[-1]):.1f}"] + [f"{x(now + 1 + i):.1f},{y(v):.1f}" for i, v in enumerate(expected)]
        parts.append(f'<polyline fill="none" stroke="#2563eb" stroke-width="1.5" stroke-dasharray="5 3" '
                     f'points="{" ".join(line)}"><title>forecast daily peak</title></polyline>')
    parts.append(f'<polyline fill="none" stroke="#111827" stroke-width="1.5" points="'
                 f'{" ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(history) if v == v)}">'
                 f"<title>recorded daily peak</title></polyline>")
    parts.append("</svg>")
    return Markup("".join(parts))
