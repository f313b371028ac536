"""Inline SVG charts for the HTML report: pure functions of numbers to markup, no scripts.

Every chart carries a <title> per shape (the browser's tooltip) and text labels, so it reads
without colour and prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

# Part of a step -> (label, colour). Colours: compute blue, exposed communication warm,
# memory brown, idle greys/purple, preparation greens/yellows.
PARTS: dict[str, tuple[str, str]] = {
    "compute": ("compute", "#4e79a7"),
    "comm_exposed": ("exposed communication", "#f28e2b"),
    "memory": ("memory copies", "#9c755f"),
    "idle_host": ("idle: host launched late", "#79706e"),
    "idle_blocked": ("idle: host blocked in a wait", "#5a4e4c"),
    "idle_dependency": ("idle: waiting on a dependency", "#b07aa1"),
    "idle_unattributed": ("idle: unexplained", "#bab0ac"),
    "idle": ("idle (not split)", "#bab0ac"),
    "preparing_dataloader": ("preparing: data loading", "#59a14f"),
    "preparing_allocator": ("preparing: memory allocation", "#8cd17d"),
    "preparing_sync": ("preparing: synchronisation", "#b6992d"),
    "preparing_other": ("preparing: other host work", "#edc948"),
    "preparing": ("preparing (not split)", "#edc948"),
}
COMM_KIND_COLOURS = {
    "allgather": "#f28e2b",
    "reducescatter": "#e15759",
    "allreduce": "#ff9d9a",
    "alltoall": "#d37295",
    "broadcast": "#fabfd2",
    "send": "#ffbe7d",
    "receive": "#ffbe7d",
}
OTHER_COMM = "#e8a0a0"


def part_style(name: str) -> tuple[str, str]:
    """The label and colour of a step part (`comm_exposed:<kind>` for a collective kind)."""
    if name.startswith("comm_exposed:"):
        kind = name.split(":", 1)[1]
        return f"exposed {kind}", COMM_KIND_COLOURS.get(kind, OTHER_COMM)
    return PARTS.get(name, (name.replace("_", " "), "#cccccc"))


@dataclass(frozen=True)
class Bar:
    label: str
    segments: Sequence[tuple[str, float]]  # (part name, value)
    note: str = ""


def _ticks(top: float) -> list[float]:
    if top <= 0:
        return [0.0]
    raw = top / 5
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    while magnitude > raw and magnitude > 1e-6:
        magnitude /= 10
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude * 5 >= top)
    return [i * step for i in range(int(top / step) + 1)]


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def stacked_bars(bars: Sequence[Bar], unit: str, width: int = 880) -> str:
    """Horizontal stacked bars, one row per bar, a shared axis and a legend."""
    if not bars:
        return ""
    label_w, row_h, gap, top_pad = 120, 22, 6, 8
    plot_w = width - label_w - 70
    top = max(sum(v for _, v in bar.segments) for bar in bars) or 1.0
    ticks = _ticks(top)
    scale = plot_w / max(ticks[-1], top)
    height = top_pad + len(bars) * (row_h + gap) + 28
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="stacked bars ({escape(unit)})">'
    ]
    for tick in ticks:
        x = label_w + tick * scale
        out.append(
            f'<line x1="{x:.1f}" y1="{top_pad}" x2="{x:.1f}" y2="{height - 24}" class="grid"/>'
            f'<text x="{x:.1f}" y="{height - 8}" class="tick">{_fmt(tick)}</text>'
        )
    out.append(f'<text x="{width - 4}" y="{height - 8}" class="tick end">{escape(unit)}</text>')
    for i, bar in enumerate(bars):
        y = top_pad + i * (row_h + gap)
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h * 0.7:.1f}" class="label end">'
            f"{escape(bar.label)}</text>"
        )
        x = float(label_w)
        total = sum(v for _, v in bar.segments)
        for name, value in bar.segments:
            if value <= 0:
                continue
            w = value * scale
            label, colour = part_style(name)
            share = value / total if total else 0.0
            out.append(
                f'<rect x="{x:.2f}" y="{y}" width="{max(w, 0.5):.2f}" height="{row_h}" '
                f'fill="{colour}"><title>{escape(bar.label)} · {escape(label)}: '
                f"{_fmt(value)} {escape(unit)} ({share:.1%})</title></rect>"
            )
            x += w
        out.append(
            f'<text x="{x + 6:.1f}" y="{y + row_h * 0.7:.1f}" class="label">'
            f"{_fmt(total)}{escape(bar.note)}</text>"
        )
    out.append("</svg>")
    return "".join(out) + legend(
        [name for bar in bars for name, value in bar.segments if value > 0]
    )


def legend(names: Sequence[str]) -> str:
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    items = []
    for name in seen:
        label, colour = part_style(name)
        items.append(f'<span class="key"><i style="background:{colour}"></i>{escape(label)}</span>')
    return f'<div class="legend">{"".join(items)}</div>'


def hbars(rows: Sequence[tuple[str, float, str]], colour: str = "#4e79a7", width: int = 880) -> str:
    """One horizontal bar per row: (label, value in [0, 1], text shown after the bar)."""
    if not rows:
        return ""
    label_w, row_h, gap = 260, 18, 5
    plot_w = width - label_w - 190
    height = len(rows) * (row_h + gap) + 4
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'role="img">'
    ]
    for i, (label, value, text) in enumerate(rows):
        y = 2 + i * (row_h + gap)
        w = max(0.0, min(value, 1.0)) * plot_w
        short = label if len(label) <= 38 else label[:37] + "…"
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h * 0.75:.1f}" class="label end">'
            f"<title>{escape(label)}</title>{escape(short)}</text>"
            f'<rect x="{label_w}" y="{y}" width="{max(w, 0.5):.2f}" height="{row_h}" '
            f'fill="{colour}"><title>{escape(label)}: {escape(text)}</title></rect>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + row_h * 0.75:.1f}" class="label">'
            f"{escape(text)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def heat_colour(position: float) -> str:
    """White (0) to deep red (1): how far a value sits towards the column's worst."""
    p = max(0.0, min(position, 1.0))
    r, g, b = 255, int(255 - 160 * p), int(255 - 170 * p)
    return f"rgb({r},{g},{b})"


@dataclass(frozen=True)
class Cell:
    label: str
    value: float
    title: str
    marked: bool = False


def heat_grid(cells: Sequence[Cell], columns: int = 32, size: int = 16) -> str:
    """A grid of small squares (one per rank) coloured by value, min white to max red; marked
    cells get a black outline."""
    if not cells:
        return ""
    low = min(c.value for c in cells)
    high = max(c.value for c in cells)
    span = high - low or 1.0
    rows = (len(cells) + columns - 1) // columns
    width, height = columns * (size + 2) + 2, rows * (size + 2) + 2
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'role="img" aria-label="per-rank heat map">'
    ]
    for i, cell in enumerate(cells):
        x, y = 2 + (i % columns) * (size + 2), 2 + (i // columns) * (size + 2)
        stroke = ' stroke="#000" stroke-width="2"' if cell.marked else ""
        out.append(
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" '
            f'fill="{heat_colour((cell.value - low) / span)}"{stroke}>'
            f"<title>{escape(cell.label)}: {escape(cell.title)}</title></rect>"
        )
    out.append("</svg>")
    return "".join(out)
