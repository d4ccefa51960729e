"""Rasterization of an actor's projected shapes into a feathered sprite patch.

The projected shapes (capsule outlines, convex hulls, mesh triangles) are filled, farthest
first, into a small label canvas at 4x supersampling (sub-pixel vertex positions via OpenCV's
fixed-point ``shift``, so nothing snaps to whole pixels), box-filtered down to frame
resolution (``INTER_AREA``) and feathered with a Gaussian of sigma 0.5 px.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

# --- Rendering ------------------------------------------------------------------------------
SUPERSAMPLE = 4  # sub-pixels per frame pixel and axis for actors up to LARGE_ACTOR_PX
LARGE_ACTOR_PX = 160  # patch side (frame px) above which SUPERSAMPLE is halved (speed)
_SUBPIXEL_BITS = 4  # fixed-point fraction bits of the polygon vertices (cv2 ``shift``)
_ARC_POINTS = 9  # points on each half-circle end of a capsule outline
FEATHER_SIGMA = 0.5  # px, Gaussian feathering of the alpha edge (§4.1 "alpha-feathered")
SHADOW_FEATHER_SIGMA = 0.8  # px, a little softer: penumbra
_PATCH_MARGIN = 2  # px of empty border around the drawn shapes (room for the feathering)
BOX_ALPHA = 0.25  # the box is the tight box of alpha above this (sprites.py)
_MIN_ALPHA = 1e-3  # below this the contrast of a pixel is undefined and set to 0
# cv2's anti-aliased polygon fill covers ~0.62 sub-pixels beyond the true outline; capsule
# radii are drawn that much smaller so that limbs keep their width at any size.
FILL_DILATION_PX = 0.62 / SUPERSAMPLE


_ARC = np.linspace(-math.pi / 2, math.pi / 2, _ARC_POINTS)


def _capsule_polygons(starts: np.ndarray, ends: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Convex outlines (m, 2 * _ARC_POINTS, 2) of 2-D capsules; a sphere is a zero-length one."""
    direction = ends - starts
    heading = np.arctan2(direction[:, 1], direction[:, 0])[:, None]
    angles = heading + _ARC[None, :]  # half circle around the end, facing forward
    ring = np.stack([np.cos(angles), np.sin(angles)], -1) * radii[:, None, None]
    return np.concatenate([ends[:, None] + ring, starts[:, None] - ring], 1)


def _rasterize(
    polygons: list[np.ndarray],
    parts: list[int],
    frame_size: tuple[int, int],
    feather_sigma: float,
    lut: np.ndarray | None,
    antialias: bool,
    transform: tuple[np.ndarray, np.ndarray],
) -> tuple[int, int, np.ndarray, np.ndarray | None] | None:
    """Fill convex frame-px polygons, in order, into supersampled canvases.

    Coverage is filled anti-aliased (so edges move by fractions of a sub-pixel, not in
    sub-pixel steps), or, with ``antialias`` False (hundreds of triangles: half the fills),
    taken from the binary label fill; the part labels are filled into a second, binary
    canvas from which the per-pixel value of ``lut`` (label -> value) is unmixed.

    ``transform`` = ``(linear, origin)`` maps the polygons' points to frame px first
    (``p @ linear.T + origin``).

    Returns:
        ``(x0, y0, alpha, contrast)``: the integer frame position of the patch, the feathered
        coverage and the unmixed ``lut`` values (None without a ``lut``); None if the patch
        misses the frame.
    """
    points = np.concatenate(polygons) @ transform[0].T + transform[1]
    low, high = points.min(axis=0), points.max(axis=0)
    x0, y0 = (np.floor(low) - _PATCH_MARGIN).astype(int)
    x1, y1 = (np.ceil(high) + _PATCH_MARGIN).astype(int)
    width, height = frame_size
    if x1 < 0 or y1 < 0 or x0 >= width or y0 >= height:
        return None
    patch_w, patch_h = x1 - x0 + 1, y1 - y0 + 1
    ss = SUPERSAMPLE if max(patch_w, patch_h) <= LARGE_ACTOR_PX else max(1, SUPERSAMPLE // 2)
    coverage = np.zeros((patch_h * ss, patch_w * ss), np.uint8)
    labels = np.zeros_like(coverage) if lut is not None else None
    # Frame pixel i (centre at i) holds sub-pixels centred at i - 1/2 + (k + 1/2) / ss.
    fixed = float(ss * (1 << _SUBPIXEL_BITS))
    offset = np.array([x0, y0], float) - 0.5 + 0.5 / ss
    fixed_points = np.round((points - offset) * fixed).astype(np.int32)
    bounds = np.cumsum([0, *(len(polygon) for polygon in polygons)]).tolist()
    pieces = [fixed_points[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    if antialias:
        for vertices, part in zip(pieces, parts, strict=True):
            cv2.fillConvexPoly(coverage, vertices, 255, cv2.LINE_AA, _SUBPIXEL_BITS)
            if labels is not None:
                cv2.fillConvexPoly(labels, vertices, int(part), cv2.LINE_8, _SUBPIXEL_BITS)
    else:  # many small polygons (a mesh): coverage is where a label was drawn
        canvas = labels if labels is not None else coverage
        for vertices, part in zip(pieces, parts, strict=True):
            cv2.fillConvexPoly(canvas, vertices, int(part), cv2.LINE_8, _SUBPIXEL_BITS)
        coverage = np.where(canvas > 0, np.uint8(255), np.uint8(0))
    size = (patch_w, patch_h)
    kernel = (3, 3) if feather_sigma <= 0.6 else (5, 5)
    alpha = cv2.resize(coverage, size, interpolation=cv2.INTER_AREA).astype(np.float32) / 255
    alpha = np.clip(cv2.GaussianBlur(alpha, kernel, feather_sigma), 0.0, 1.0)
    if labels is None:
        return int(x0), int(y0), alpha, None
    inside = cv2.resize((labels > 0).astype(np.float32), size, interpolation=cv2.INTER_AREA)
    premultiplied = cv2.resize(lut[labels], size, interpolation=cv2.INTER_AREA)
    inside = cv2.GaussianBlur(inside, kernel, feather_sigma)
    premultiplied = cv2.GaussianBlur(premultiplied, kernel, feather_sigma)
    contrast = np.where(inside > _MIN_ALPHA, premultiplied / np.maximum(inside, _MIN_ALPHA), 0.0)
    return int(x0), int(y0), alpha, contrast.astype(np.float32)


def _tight_box(alpha: np.ndarray, x0: int, y0: int) -> np.ndarray | None:
    """``[x, y, w, h]`` (frame px, top-left edge) of the pixels with alpha > BOX_ALPHA."""
    mask = alpha > BOX_ALPHA
    columns, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
    if columns.size == 0:
        return None
    return np.array(
        [x0 + columns[0], y0 + rows[0], columns[-1] - columns[0] + 1, rows[-1] - rows[0] + 1], float
    )
