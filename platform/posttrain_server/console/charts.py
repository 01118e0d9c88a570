"""Training curves as server-rendered SVG: no chart library to ship, nothing for the CSP to
allow, and the page is readable without JavaScript. The live job page re-fetches the panel
that holds them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT = 460, 190
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 30

# (title, metric keys in a metrics event's data): a chart appears when any key has points.
CHARTS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Loss", [("train_loss", "training loss")]),
    ("Reward", [("train_mean_reward", "mean reward")]),
    ("Accuracy", [("train_mean_token_accuracy", "token accuracy"),
                  ("train_reward_accuracy", "preference accuracy")]),
    ("Learning rate", [("learning_rate", "learning rate")]),
]


@dataclass(frozen=True)
class Series:
    label: str
    points: list[tuple[float, float]]  # (step, value)


def series_from_metrics(metrics: Iterable[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Points per metric key, one per step (a resumed attempt's repeat of a step wins)."""
    by_key: dict[str, dict[float, float]] = {}
    for data in metrics:
        step = data.get("step")
        if not isinstance(step, int | float):
            continue
        for key, value in data.items():
            if key != "step" and isinstance(value, int | float) and math.isfinite(value):
                by_key.setdefault(key, {})[float(step)] = float(value)
    return {key: sorted(points.items()) for key, points in by_key.items()}


def _label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) < 0.01 or abs(value) >= 10_000:
        return f"{value:.2e}"
    return f"{value:.3g}"


def line_chart(title: str, series: list[Series]) -> SafeString:
    """One SVG chart: value against step, with its axis ranges labelled."""
    points = [p for s in series for p in s.points]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + (v - x0) / (x1 - x0) * plot_w

    def y(v: float) -> float:
        return TOP + (1 - (v - y0) / (y1 - y0)) * plot_h

    lines = format_html_join(
        "", '<polyline class="series series-{}" points="{}"><title>{}</title></polyline>',
        ((index, " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in s.points), s.label)
         for index, s in enumerate(series)))
    dots = format_html_join(
        "", '<circle class="series-{}" cx="{}" cy="{}" r="2.5"></circle>',
        ((index, f"{x(s.points[-1][0]):.1f}", f"{y(s.points[-1][1]):.1f}")
         for index, s in enumerate(series)))
    legend = ", ".join(f"{s.label} (last {_label(s.points[-1][1])})" for s in series)
    return format_html(
        '<figure class="chart"><figcaption>{title}</figcaption>'
        '<svg viewBox="0 0 {w} {h}" role="img" aria-label="{title} against step: {legend}">'
        '<rect class="plot" x="{left}" y="{top}" width="{pw}" height="{ph}"></rect>'
        '{lines}{dots}'
        '<text class="tick" x="{tx}" y="{ytop}" text-anchor="end">{y1}</text>'
        '<text class="tick" x="{tx}" y="{ybottom}" text-anchor="end">{y0}</text>'
        '<text class="tick" x="{left}" y="{xlabel}">step {x0}</text>'
        '<text class="tick" x="{right}" y="{xlabel}" text-anchor="end">{x1}</text>'
        '</svg><p class="legend">{legend}</p></figure>',
        title=title, w=WIDTH, h=HEIGHT, left=LEFT, top=TOP, pw=plot_w, ph=plot_h,
        lines=lines, dots=dots, tx=LEFT - 6, ytop=TOP + 10, ybottom=TOP + plot_h,
        y1=_label(y1), y0=_label(y0), xlabel=HEIGHT - 8, right=WIDTH - RIGHT,
        x0=int(x0), x1=int(x1), legend=legend)


def job_charts(metrics: Iterable[dict[str, Any]]) -> list[SafeString]:
    """The charts a job has data for, in a fixed order."""
    points = series_from_metrics(metrics)
    charts = []
    for title, keys in CHARTS:
        series = [Series(label, points[key]) for key, label in keys if points.get(key)]
        if series:
            charts.append(line_chart(title, series))
    return charts
