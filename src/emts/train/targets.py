"""CenterNet targets on the stride-8 grid (§3.4.2; 32x24 cells at 256x192).

Boxes come in NETWORK pixels (256x192, see :mod:`emts.geometry`). Each box's centre is
splatted onto the heatmap with a size-adaptive Gaussian (CenterNet's radius rule at
``min_overlap`` 0.7); the cell holding the centre is the positive, carrying the log-size
``log(w / 8), log(h / 8)`` (so that box = 8 * exp(S)) and the sub-cell offset.
Persons that are mostly hidden are neither positives nor negatives (an ignore region).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STRIDE = 8
GRID = (32, 24)  # (w, h) cells
MIN_OVERLAP = 0.7  # CenterNet Gaussian radius rule
MIN_VISIBLE = 0.3  # persons less visible than this are ignored, not positives
MAX_OBJECTS = 64


def gaussian_radius(height: float, width: float, min_overlap: float = MIN_OVERLAP) -> float:
    """CenterNet's radius (in cells) within which a shifted box keeps IoU >= min_overlap."""
    a1, b1 = 1.0, height + width
    c1 = width * height * (1 - min_overlap) / (1 + min_overlap)
    r1 = (b1 + np.sqrt(b1**2 - 4 * a1 * c1)) / 2
    a2, b2 = 4.0, 2 * (height + width)
    c2 = (1 - min_overlap) * width * height
    r2 = (b2 + np.sqrt(b2**2 - 4 * a2 * c2)) / 2
    a3, b3 = 4 * min_overlap, -2 * min_overlap * (height + width)
    c3 = (min_overlap - 1) * width * height
    r3 = (b3 + np.sqrt(b3**2 - 4 * a3 * c3)) / 2
    return float(min(r1, r2, r3))


@dataclass
class FrameTargets:
    heatmap: np.ndarray  # (1, 24, 32) float32 in [0, 1]
    weight: np.ndarray  # (1, 24, 32) float32: 0 in ignore regions, else 1
    indices: np.ndarray  # (MAX_OBJECTS,) int64 flat cell index of each positive
    log_size: np.ndarray  # (MAX_OBJECTS, 2) float32
    offset: np.ndarray  # (MAX_OBJECTS, 2) float32
    identity: np.ndarray  # (MAX_OBJECTS,) int64 person identity (-1 if none)
    mask: np.ndarray  # (MAX_OBJECTS,) float32 1 for real positives


def _splat(heatmap: np.ndarray, cx: int, cy: int, radius: int) -> None:
    diameter = 2 * radius + 1
    sigma = diameter / 6
    ys, xs = np.ogrid[-radius : radius + 1, -radius : radius + 1]
    gaussian = np.exp(-(xs * xs + ys * ys) / (2 * sigma * sigma))
    h, w = heatmap.shape
    left, right = min(cx, radius), min(w - cx, radius + 1)
    top, bottom = min(cy, radius), min(h - cy, radius + 1)
    region = heatmap[cy - top : cy + bottom, cx - left : cx + right]
    patch = gaussian[radius - top : radius + bottom, radius - left : radius + right]
    np.maximum(region, patch, out=region)


def build_targets(
    boxes: np.ndarray,
    identities: np.ndarray | None = None,
    visible: np.ndarray | None = None,
    grid: tuple[int, int] = GRID,
) -> FrameTargets:
    """Targets of one frame from (n, 4) ``[x, y, w, h]`` person boxes in NETWORK px, on a
    ``grid`` of (w, h) stride-8 cells (the input's size / 8)."""
    w_cells, h_cells = grid
    heatmap = np.zeros((h_cells, w_cells), np.float32)
    weight = np.ones((h_cells, w_cells), np.float32)
    t = FrameTargets(
        heatmap=heatmap,
        weight=weight,
        indices=np.zeros(MAX_OBJECTS, np.int64),
        log_size=np.zeros((MAX_OBJECTS, 2), np.float32),
        offset=np.zeros((MAX_OBJECTS, 2), np.float32),
        identity=np.full(MAX_OBJECTS, -1, np.int64),
        mask=np.zeros(MAX_OBJECTS, np.float32),
    )
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    ids = np.arange(len(boxes)) if identities is None else np.asarray(identities)
    vis = np.ones(len(boxes)) if visible is None else np.asarray(visible, np.float64)
    count = 0
    for (x, y, w, h), identity, seen in zip(boxes, ids, vis, strict=True):
        if w <= 0 or h <= 0:
            continue
        centre = np.array([x + w / 2, y + h / 2]) / STRIDE
        cell = np.floor(centre).astype(int)
        if not (0 <= cell[0] < w_cells and 0 <= cell[1] < h_cells):
            continue
        radius = max(0, int(gaussian_radius(h / STRIDE, w / STRIDE)))
        if seen < MIN_VISIBLE:
            x0, y0 = max(cell[0] - radius, 0), max(cell[1] - radius, 0)
            weight[y0 : cell[1] + radius + 1, x0 : cell[0] + radius + 1] = 0.0
            continue
        _splat(heatmap, int(cell[0]), int(cell[1]), radius)
        if count < MAX_OBJECTS:
            t.indices[count] = cell[1] * w_cells + cell[0]
            t.log_size[count] = np.log(np.array([w, h]) / STRIDE)
            t.offset[count] = centre - cell
            t.identity[count] = int(identity)
            t.mask[count] = 1.0
            count += 1
    heatmap[weight == 0] = 0.0
    t.heatmap, t.weight = heatmap[None], weight[None]
    return t
