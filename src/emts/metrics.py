"""Small runtime-side measures shared by the demo, benchmarks and tests."""

from __future__ import annotations

import numpy as np

_GRID_STEPS = 8


def registration_error(estimate: np.ndarray, truth: np.ndarray, size: tuple[int, int]) -> float:
    """Mean distance (px) between where two 2x3 motions send an 8x8 grid of points.

    The grid spans the central 80 % of a ``size = (w, h)`` frame, so the error weighs
    rotation and scale errors as they displace real image content.
    """
    w, h = size
    xs = np.linspace(0.1 * w, 0.9 * w, _GRID_STEPS)
    ys = np.linspace(0.1 * h, 0.9 * h, _GRID_STEPS)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    a = grid @ np.asarray(estimate)[:, :2].T + np.asarray(estimate)[:, 2]
    b = grid @ np.asarray(truth)[:, :2].T + np.asarray(truth)[:, 2]
    return float(np.linalg.norm(a - b, axis=1).mean())
