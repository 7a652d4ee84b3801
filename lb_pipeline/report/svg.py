"""Inline SVG charts (no script, no network): the broker × time heatmap and small bars."""

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


def heatmap(brokers: list[str], times: list[str], values: dict[tuple[str, str], float], title: str) -> Markup:
    """Rows = brokers, columns = snapshot times, colour = max usage (1.0 = 100 %)."""
    cell, left, top = 22, 230, 40
    width, height = left + cell * len(times) + 10, top + cell * len(brokers) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px">',
             f"<title>{escape(title)}</title>"]
    for j, t in enumerate(times):
        if j % 3 == 0:
            parts.append(f'<text x="{left + j * cell + 2}" y="{top - 8}" font-size="10">{escape(t)}</text>')
    for i, b in enumerate(brokers):
        y = top + i * cell
        parts.append(f'<text x="{left - 6}" y="{y + 15}" font-size="11" text-anchor="end">{escape(b)}</text>')
        for j, t in enumerate(times):
            v = values.get((b, t))
            label = "no report" if v is None else f"{v:.0%}"
            parts.append(f'<rect x="{left + j * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                         f'fill="{_color(v)}"><title>{escape(b)} at {escape(t)}: {label}</title></rect>')
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


def lines(series: dict[str, list[float]], labels: list[str], title: str, unit: str = "") -> Markup:
    """One polyline per named series over shared x positions (``labels`` name a few of them), with a legend."""
    width, height, left, top, legend = 640, 220, 48, 12, 18
    n = max((len(v) for v in series.values()), default=0)
    peak = max((x for v in series.values() for x in v if x == x), default=0.0) or 1.0
    plot_h = height - top - 28

    def xy(i: int, v: float) -> str:
        return f"{left + (width - left - 10) * i / max(1, n - 1):.1f},{top + plot_h * (1 - v / peak):.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height + legend * len(series)}" width="100%" style="max-width:{width}px">',
             f"<title>{escape(title)}</title>",
             f'<text x="{left - 4}" y="{top + 8}" font-size="10" text-anchor="end">{peak:.2g}{escape(unit)}</text>',
             f'<text x="{left - 4}" y="{top + plot_h}" font-size="10" text-anchor="end">0</text>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#9ca3af"/>']
    for i, label in enumerate(labels):
        x = left + (width - left - 10) * i / max(1, len(labels) - 1)
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" font-size="10" text-anchor="middle">{escape(label)}</text>')
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


def scatter(points: list[tuple[str, float, float, bool]], title: str, x_label: str, y_label: str) -> Markup:
    """Labelled points (label, x, y, highlighted): the Pareto chart of imbalance against churn."""
    width, height, left, bottom = 640, 260, 56, 36
    xs, ys = [p[1] for p in points] or [0.0], [p[2] for p in points] or [0.0]
    x_hi, y_hi = (max(xs) or 1.0) * 1.05, (max(ys) or 1.0) * 1.05
    plot_w, plot_h = width - left - 10, height - bottom - 10

    def at(x: float, y: float) -> tuple[float, float]:
        return left + plot_w * x / x_hi, 10 + plot_h * (1 - y / y_hi)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px">', f"<title>{escape(title)}</title>",
             f'<line x1="{left}" y1="{10 + plot_h}" x2="{width - 10}" y2="{10 + plot_h}" stroke="#9ca3af"/>',
             f'<line x1="{left}" y1="10" x2="{left}" y2="{10 + plot_h}" stroke="#9ca3af"/>',
             f'<text x="{left + plot_w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">{escape(x_label)}</text>',
             f'<text x="12" y="{10 + plot_h / 2}" font-size="11" text-anchor="middle" '
             f'transform="rotate(-90 12 {10 + plot_h / 2})">{escape(y_label)}</text>']
    for label, x, y, hot in points:
        cx, cy = at(x, y)
        color = "#dc2626" if hot else "#2563eb"
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{5 if hot else 4}" fill="{color}">'
                     f"<title>{escape(label)}: {x:.1%} imbalance, {y:,.0f}</title></circle>"
                     f'<text x="{cx + 7:.1f}" y="{cy + 4:.1f}" font-size="10">{escape(label)}</text>')
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
