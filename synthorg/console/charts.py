"""Small line charts as SVG, drawn on the server from the traffic samples (no script, no
library). Every text in them is escaped by the template that includes them; the numbers here
are the node's own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT, PAD = 300, 110, 22
COLOURS = ("#0b5cad", "#a40e26", "#116329", "#8250df", "#bc4c00")


@dataclass(frozen=True)
class Chart:
    caption: str
    svg: Markup


def line_chart(title: str, series: Sequence[tuple[str, Sequence[float]]], unit: str) -> Chart:
    """One chart of several series over the same intervals, scaled to the largest value."""
    top = max((max(values, default=0.0) for _, values in series), default=0.0) or 1.0
    count = max((len(values) for _, values in series), default=0)
    step = (WIDTH - 2 * PAD) / max(count - 1, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#d0d7de"/>',
        f'<text x="{PAD}" y="12" font-size="10" fill="#57606a">{escape(_number(top))} '
        f'{escape(unit)}</text>',
    ]
    for index, (name, values) in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        points = " ".join(
            f"{PAD + i * step:.1f},{HEIGHT - PAD - (value / top) * (HEIGHT - 2 * PAD):.1f}"
            for i, value in enumerate(values)
        )
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                     f'points="{points}"><title>{escape(name)}</title></polyline>')
        parts.append(f'<text x="{PAD + index * 90}" y="{HEIGHT - 6}" font-size="10" '
                     f'fill="{colour}">{escape(name)}</text>')
    parts.append("</svg>")
    return Chart(title, Markup("".join(parts)))  # every text above is escaped


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.2f}"
