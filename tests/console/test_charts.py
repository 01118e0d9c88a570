"""Server-rendered SVG charts: the points land where the axes say, and labels are escaped."""

from __future__ import annotations

import re

from posttrain_server.console.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    Series,
    job_charts,
    line_chart,
    series_from_metrics,
)


def test_metrics_events_become_one_point_per_step_and_metric():
    points = series_from_metrics([
        {"step": 1, "train_loss": 2.0, "learning_rate": 1e-3, "epoch": 0.1},
        {"step": 2, "train_loss": 1.5, "learning_rate": 9e-4},
        {"step": 2, "train_loss": 1.4},  # a resumed attempt re-logs step 2: the last wins
        {"step": 3, "train_loss": float("nan")},  # not drawable: dropped
        {"no_step": 1},
    ])
    assert points["train_loss"] == [(1.0, 2.0), (2.0, 1.4)]
    assert points["learning_rate"] == [(1.0, 1e-3), (2.0, 9e-4)]


def test_the_line_spans_the_plot_from_first_to_last_step():
    svg = str(line_chart("Loss", [Series("loss", [(0, 4.0), (10, 2.0), (20, 1.0)])]))
    coords = re.search(r'points="([^"]+)"', svg).group(1).split()
    xs = [float(c.split(",")[0]) for c in coords]
    ys = [float(c.split(",")[1]) for c in coords]
    assert xs[0] == LEFT and xs[-1] == WIDTH - RIGHT
    assert ys[0] == TOP and ys[-1] == HEIGHT - BOTTOM  # highest value at the top
    assert 'role="img"' in svg and "aria-label=" in svg


def test_only_charts_with_data_are_drawn_and_labels_are_escaped():
    charts = job_charts([{"step": 1, "train_loss": 1.0}, {"step": 2, "train_loss": 0.5}])
    assert len(charts) == 1 and "Loss" in charts[0]
    assert "<script>" not in str(line_chart("<script>", [Series("<b>", [(1, 1.0)])]))
    assert job_charts([]) == []
