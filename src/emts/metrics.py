"""Small runtime-side measures shared by the demo, benchmarks and tests."""

from __future__ import annotations

import numpy as np

_GRID_STEPS = 8

# Camera motions between two 640x512 frames, (angle rad, scale, tx px, ty px) about the frame
# centre: Stage A's accuracy cases (unit tests and benchmarks/bench_stage_ab.py use both).
GUST_PAIRS = {
    "drift": (0.0, 1.0, 6.0, -4.0),
    "roll": (0.02, 1.0, 0.0, 0.0),
    "zoom": (0.0, 1.015, 0.0, 0.0),
    "gust_15px": (0.0, 1.0, 15.0, 0.0),
    "gust_diagonal": (0.008, 1.006, -10.6, 10.6),
    "everything": (-0.015, 0.985, 9.0, 7.0),
}


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
