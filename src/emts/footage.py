"""Real footage without labels: what evaluation and training both do with it, outside the runtime.

The classical compensated-difference baseline (:class:`CompensatedDifference`): moving blobs of
the camera-compensated frame difference. ``emts eval real`` (:mod:`emts.eval.real`) scores it
beside the network; ``emts adapt`` (:mod:`emts.train.adapt`) makes its strongest blobs ignore
regions. It lives here so that training does not import evaluation; numpy and OpenCV only.
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from emts.config import WORKING_SIZE
from emts.stages.c_detect.fusion import compensated_residual

K_SWEEP = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0, 24.0)  # the threshold multipliers swept

Boxes = tuple[np.ndarray, np.ndarray]  # (n, 4) WORKING px, (n,) scores


class FramePair(Protocol):
    """A working frame with its predecessor and Stage A's motion between them (e.g.
    :class:`emts.eval.real_frames.EvalFrame`)."""

    working: np.ndarray  # uint8 640x512, frame t
    previous: np.ndarray | None  # uint8 640x512, frame t-1 (None on a stream's first frame)
    motion: np.ndarray  # 2x3 Stage A estimate, WORKING, t-1 -> t
    valid: np.ndarray  # uint8 640x512 mask of the letterbox content


class CompensatedDifference:
    """The issue's classical baseline, at full 640x512 working resolution.

    Stage A's motion (corners + LK + RANSAC similarity at half resolution) warps the previous
    frame onto the current one; residual = Gauss5x5(|I_t - warped|); threshold T = k x the
    frame's median residual; morphological close 5x5; connected components; box = blob;
    score = m / (m + T) with m the blob's mean residual. Pixels the warp brings in from
    outside the previous frame and the letterbox padding are excluded (they hold no image).
    One call returns the detections for every k in ``ks``.
    """

    def __init__(self, ks: tuple[float, ...] = K_SWEEP, max_detections: int = 100) -> None:
        self.ks = tuple(ks)
        self.max_detections = max_detections
        self._kernel = np.ones((5, 5), np.uint8)

    def __call__(self, frame: FramePair) -> dict[float, Boxes]:
        """:meth:`detect` on ``frame``."""
        return self.detect(frame.working, frame.previous, frame.motion, frame.valid)

    def residual(
        self,
        working: np.ndarray,
        previous: np.ndarray | None,
        motion: np.ndarray,
        content: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(residual float32, valid bool) at WORKING resolution: Stage C's
        :func:`~emts.stages.c_detect.fusion.compensated_residual`; nothing valid on a first frame
        (``previous`` None)."""
        if previous is None:
            size = WORKING_SIZE
            return np.zeros((size[1], size[0]), np.float32), np.zeros((size[1], size[0]), bool)
        return compensated_residual(working, previous, motion, content)

    def detect(
        self,
        working: np.ndarray,
        previous: np.ndarray | None,
        motion: np.ndarray,
        content: np.ndarray,
    ) -> dict[float, Boxes]:
        """``{k: (boxes WORKING px, scores)}``, best first, for every k of ``ks``.

        Args:
            working, previous: uint8 640x512 frames t and t-1 (``previous`` None: a first frame,
                no detections).
            motion: 2x3 Stage A estimate t-1 -> t, WORKING px.
            content: uint8 mask of the letterbox content (WORKING px).
        """
        residual, valid = self.residual(working, previous, motion, content)
        out: dict[float, Boxes] = {}
        median = float(np.median(residual[valid])) if valid.any() else 0.0
        for k in self.ks:
            threshold = max(k * median, 1e-3)
            mask = ((residual > threshold) & valid).astype(np.uint8)
            mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, self._kernel)
            count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
            if count <= 1:
                out[k] = (np.zeros((0, 4)), np.zeros(0))
                continue
            sums = np.bincount(labels.ravel(), weights=residual.ravel(), minlength=count)
            mean = sums[1:] / np.maximum(stats[1:, cv2.CC_STAT_AREA], 1)
            scores = mean / (mean + threshold)
            boxes = stats[1:, :4].astype(float)
            order = np.argsort(-scores)[: self.max_detections]
            out[k] = (boxes[order], scores[order])
        return out
