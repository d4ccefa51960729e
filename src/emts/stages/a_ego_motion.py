"""Stage A: camera ego-motion between consecutive frames (§3.2, eq. 1).

Shi-Tomasi corners on a 320x256 downsample are tracked with pyramidal Lucas-Kanade (the corners
are detected every ``EgoMotionConfig.corner_refresh_every`` frames, 4 by default; in between the
previous step's RANSAC inliers are tracked on -- §3.2 detects them every frame), and a 4-DoF
similarity (rotation, uniform scale, translation) is fitted by RANSAC; a homography is fitted to
the same tracks for Stage B's warp (:attr:`EgoMotionConfig.homography`, not in the paper). When
too few tracks survive or too few agree (snow, water, fog), Hanning-windowed phase correlation on a
small downsample (160x128 by default; §3.2's 96x72 via ``EgoMotionConfig.phase_size``) gives
a translation-only motion; when that fails too, the motion is the
identity. The estimator never raises on a frame of the right shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import cv2
import numpy as np

from emts.config import STAGE_A_SIZE, WORKING_SIZE, EgoMotionConfig
from emts.errors import BadInputError
from emts.geometry import WORKING_TO_STAGE_A, lift

Method = Literal["lk", "phase", "identity"]

_IDENTITY = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
_WORKING_TO_STAGE_A = WORKING_TO_STAGE_A.matrix  # (the property builds a new array per call)
_WORKING_TO_STAGE_A.setflags(write=False)
_STAGE_A_TO_WORKING = np.linalg.inv(_WORKING_TO_STAGE_A)
_INLIER_SHARE = 0.9  # a homography must explain this share of the similarity's inliers
# the WORKING frame's corners (homogeneous columns): where a homography and the similarity
# put them is how far they disagree
_CORNERS = np.array(
    [
        [0, WORKING_SIZE[0] - 1, 0, WORKING_SIZE[0] - 1],
        [0, 0, WORKING_SIZE[1] - 1, WORKING_SIZE[1] - 1],
        [1, 1, 1, 1],
    ],
    float,
)


@dataclass(frozen=True)
class EgoMotion:
    """Camera motion between frame t-1 and frame t.

    Attributes:
        matrix: 2x3 affine ``M_t`` mapping frame t-1 coordinates to frame t coordinates, in
            the 640x512 WORKING frame (use :meth:`emts.geometry.FrameGeometry.motion` for
            another frame).
        method: ``"lk"`` (corners + RANSAC), ``"phase"`` (translation by phase correlation)
            or ``"identity"`` (first frame, or both estimators failed).
        tracks: corner tracks that survived Lucas-Kanade (0 when none were attempted).
        inlier_ratio: fraction of those tracks consistent with the RANSAC similarity.
        homography: 3x3 map of frame t-1 to frame t (WORKING px) that Stage B warps by, fitted
            to the same tracks; None when Stage A has none (``method`` other than ``"lk"``,
            switched off, or rejected: :class:`emts.config.EgoMotionConfig`), and Stage B
            then warps by ``matrix``.
    """

    matrix: np.ndarray = field(default_factory=lambda: _IDENTITY.copy())
    method: Method = "identity"
    tracks: int = 0
    inlier_ratio: float = 0.0
    homography: np.ndarray | None = None

    def __post_init__(self) -> None:
        assert self.matrix.shape == (2, 3), self.matrix.shape
        self.matrix.setflags(write=False)
        if self.homography is not None:
            assert self.homography.shape == (3, 3), self.homography.shape
            self.homography.setflags(write=False)


class EgoMotionEstimator:
    """Estimates ``M_t`` for each new working frame; holds only the previous frame.

    Args:
        config: Stage A parameters (defaults from §3.2).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> scene = cv2.GaussianBlur(rng.integers(0, 255, (560, 700), np.uint8), (5, 5), 0)
        >>> estimator = EgoMotionEstimator()
        >>> estimator.update(scene[:512, :640]).method
        'identity'
        >>> motion = estimator.update(scene[4:516, 6:646])  # camera moved by (+6, +4)
        >>> motion.method, np.round(motion.matrix[:, 2]).tolist()
        ('lk', [-6.0, -4.0])
    """

    def __init__(self, config: EgoMotionConfig | None = None) -> None:
        self.config = config or EgoMotionConfig()
        c = self.config
        self._lk_params = dict(
            winSize=(c.lk_window, c.lk_window),
            maxLevel=c.lk_levels,
            criteria=(
                cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT,
                c.lk_iterations,
                c.lk_epsilon,
            ),
        )
        self._window = cv2.createHanningWindow(c.phase_size, cv2.CV_32F)
        self._previous: np.ndarray | None = None  # previous frame at 320x256
        # the previous frame's inlier tracks (320x256 px, in that frame) and their age in frames
        self._carried: np.ndarray | None = None
        self._carried_age = 0
        # this step's LK tracks (320x256 px) and which of them the similarity explains
        self._tracks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def reset(self) -> None:
        """Forget the previous frame; the next update returns the identity."""
        self._previous = None
        self._carried = None

    def update(self, frame: np.ndarray, mask: np.ndarray | None = None) -> EgoMotion:
        """Estimate the motion from the previous frame to ``frame``.

        Args:
            frame: 640x512 uint8 gray working frame (see :class:`emts.preprocess.Preprocessor`).
            mask: optional 320x256 uint8 mask of where corners may be picked (the letterbox
                content); None means everywhere.

        Returns:
            The motion in WORKING coordinates; the identity for the first frame.
        """
        if frame.dtype != np.uint8 or frame.shape != (WORKING_SIZE[1], WORKING_SIZE[0]):
            raise BadInputError(
                f"Stage A expects a {WORKING_SIZE[0]}x{WORKING_SIZE[1]} uint8 gray frame, "
                f"got shape {frame.shape} dtype {frame.dtype}"
            )
        current = cv2.resize(frame, STAGE_A_SIZE, interpolation=cv2.INTER_AREA)
        previous, self._previous = self._previous, current
        if previous is None:
            return EgoMotion()
        similarity, tracks, inlier_ratio = self._track_corners(previous, current, mask)
        c = self.config
        if similarity is not None and tracks >= c.min_tracks and inlier_ratio >= c.min_inlier_ratio:
            matrix = self._to_working(similarity)
            homography = self._homography(similarity, matrix) if c.homography else None
            return EgoMotion(matrix, "lk", tracks, inlier_ratio, homography)
        shift = self._phase_correlate(previous, current)
        if shift is not None:
            translation = np.array([[1.0, 0.0, shift[0]], [0.0, 1.0, shift[1]]])
            return EgoMotion(translation, "phase", tracks, inlier_ratio)
        return EgoMotion(_IDENTITY.copy(), "identity", tracks, inlier_ratio)

    def _track_corners(
        self, previous: np.ndarray, current: np.ndarray, mask: np.ndarray | None
    ) -> tuple[np.ndarray | None, int, float]:
        """Corners + LK + RANSAC at 320x256. Returns (similarity or None, tracks, inlier ratio)."""
        c = self.config
        self._tracks = None
        corners, self._carried = self._carried_corners(mask), None
        if corners is None:
            self._carried_age = 0
            corners = cv2.goodFeaturesToTrack(
                previous,
                maxCorners=c.max_corners,
                qualityLevel=c.corner_quality,
                minDistance=c.corner_min_distance,
                mask=mask,
                blockSize=c.corner_block_size,
            )
        if corners is None or len(corners) < 3:
            return None, 0, 0.0
        moved, status, _ = cv2.calcOpticalFlowPyrLK(
            previous, current, corners, None, **self._lk_params
        )
        ok = status.ravel() == 1
        src, dst = corners[ok].reshape(-1, 2), moved[ok].reshape(-1, 2)
        tracks = len(src)
        if tracks < 3:
            return None, tracks, 0.0
        similarity, inliers = cv2.estimateAffinePartial2D(
            src,
            dst,
            method=cv2.RANSAC,
            ransacReprojThreshold=c.ransac_threshold,
            maxIters=c.ransac_max_iters,
            confidence=c.ransac_confidence,
            refineIters=c.refine_iters,
        )
        if similarity is None or not np.all(np.isfinite(similarity)):
            return None, tracks, 0.0
        self._carried = dst[inliers.ravel() == 1].reshape(-1, 1, 2)
        self._carried_age += 1
        self._tracks = (src, dst, inliers.ravel() == 1)
        return similarity, tracks, float(inliers.sum()) / tracks

    def _homography(
        self, similarity: np.ndarray, similarity_working: np.ndarray
    ) -> np.ndarray | None:
        """The homography of this step's LK tracks (WORKING px) by RANSAC at the similarity's
        threshold (2 px at 320x256), or None where the similarity (``similarity``: 320x256
        px; ``similarity_working``: WORKING px) is as good or the fit is not trusted: too few
        tracks, a degenerate fit, under 90 % of the similarity's inliers (RANSAC's counts
        differ by a few on the same motion), a mean squared reprojection error over the
        similarity's inliers not ``homography_min_gain`` below the similarity's, or a frame
        corner moved farther than ``homography_max_deviation`` from where the similarity puts
        it (tracks bunched in one part of the frame extrapolate badly; a real frame-to-frame
        change of perspective stays within a few px)."""
        c = self.config
        if self._tracks is None or len(self._tracks[0]) < c.min_tracks:
            return None
        src, dst, explained = self._tracks
        # OpenCV's USAC (local-optimization RANSAC, fixed seed): 0.06 ms on person12's
        # tracks against 0.16 for cv2.RANSAC with its Levenberg-Marquardt refinement, and the
        # detector's figures there the same (recall / FP per frame / AP@0.25 0.602 / 0.040 /
        # 0.707 against 0.587 / 0.035 / 0.696, measured before the model selection below)
        homography, inliers = cv2.findHomography(src, dst, cv2.USAC_FAST, c.ransac_threshold)
        if homography is None or not np.all(np.isfinite(homography)):
            return None
        if int(inliers.sum()) < _INLIER_SHARE * int(explained.sum()):
            return None
        # Model selection: eight parameters always fit noisy tracks a little better than
        # four (on synthetic similarity paths by 1-10 %, which only adds noise to R); a real
        # change of perspective cuts the error by half (person12: median 0.52).
        # (by OpenCV's point transforms and norm: ~0.01 ms a frame against ~0.04 for numpy's
        # products on the bench clip's ~100 inliers)
        points, targets = src[explained].reshape(-1, 1, 2), dst[explained].reshape(-1, 1, 2)
        count = len(points)
        error_similarity = (
            cv2.norm(cv2.transform(points, similarity), targets, cv2.NORM_L2SQR) / count
        )
        scale = points.reshape(-1, 2) @ homography[2, :2] + homography[2, 2]
        if np.any(scale <= 1e-6):  # a track sent through the horizon: a degenerate fit
            return None
        mapped = cv2.perspectiveTransform(points, homography)
        error_homography = cv2.norm(mapped, targets, cv2.NORM_L2SQR) / count
        if error_homography > (1.0 - c.homography_min_gain) * error_similarity:
            return None
        working = _STAGE_A_TO_WORKING @ homography @ _WORKING_TO_STAGE_A
        corners = working @ _CORNERS
        if np.any(corners[2] <= 1e-6):  # a corner sent through the horizon
            return None
        deviation = corners[:2] / corners[2] - similarity_working @ _CORNERS
        if np.abs(deviation).max() > c.homography_max_deviation:
            return None
        return working / working[2, 2]

    def _carried_corners(self, mask: np.ndarray | None) -> np.ndarray | None:
        """The previous frame's inlier tracks as this frame's corners, or None when Shi-Tomasi
        should run: none carried, too old (``corner_refresh_every``), or too few left."""
        c, carried = self.config, self._carried
        if carried is None or self._carried_age >= c.corner_refresh_every:
            return None
        if mask is not None:  # keep only those still on the letterbox content
            x = np.clip(carried[:, 0, 0].astype(np.intp), 0, mask.shape[1] - 1)
            y = np.clip(carried[:, 0, 1].astype(np.intp), 0, mask.shape[0] - 1)
            carried = carried[mask[y, x] > 0]
        if len(carried) < c.corner_refresh_fraction * c.max_corners:
            return None
        return carried

    def _phase_correlate(
        self, previous: np.ndarray, current: np.ndarray
    ) -> tuple[float, float] | None:
        """Translation (working px) by windowed phase correlation at ``phase_size``, or None."""
        c = self.config
        size = c.phase_size
        # Fresh float32 arrays on every call: cv2.phaseCorrelate multiplies its inputs by the
        # window in place, which must never reach a frame we keep or the caller's frame.
        prev_small = cv2.resize(previous, size, interpolation=cv2.INTER_AREA).astype(np.float32)
        cur_small = cv2.resize(current, size, interpolation=cv2.INTER_AREA).astype(np.float32)
        if prev_small.std() < c.min_texture_std or cur_small.std() < c.min_texture_std:
            return None
        # Remove the mean first: otherwise the window itself (identical in both frames)
        # dominates the spectrum and pulls the peak towards zero shift.
        prev_small -= prev_small.mean()
        cur_small -= cur_small.mean()
        (dx, dy), response = cv2.phaseCorrelate(prev_small, cur_small, self._window)
        if not (np.isfinite(dx) and np.isfinite(dy)) or response < c.phase_min_response:
            return None
        limit = c.max_translation_fraction
        if abs(dx) > limit * size[0] or abs(dy) > limit * size[1]:
            return None
        return dx * WORKING_SIZE[0] / size[0], dy * WORKING_SIZE[1] / size[1]

    @staticmethod
    def _to_working(similarity_stage_a: np.ndarray) -> np.ndarray:
        return (_STAGE_A_TO_WORKING @ lift(similarity_stage_a) @ _WORKING_TO_STAGE_A)[:2]


def local_ground_motion(
    previous: np.ndarray, current: np.ndarray, centre: np.ndarray, size: tuple[float, float]
) -> np.ndarray | None:
    """The ground's own image motion (px, frame t-1 -> t) around an object: the median LK flow
    of corners in a window reaching two object heights each way from ``centre`` (px on the
    gray frame ``previous``), the object's box (``size`` (w, h), grown to 1.5x) masked out.
    None where the window is under 8 px or fewer than 6 corners are found or tracked.

    Stage D asks whether a re-lock candidate moves on its ground: stabilized coordinates
    drift off the ground plane in oblique views, so the local ground is measured here.
    """
    x, y = centre
    width, height = size
    frame_h, frame_w = previous.shape
    half = 2.0 * height
    x0, y0 = int(max(x - half, 0)), int(max(y - half, 0))
    x1, y1 = int(min(x + half, frame_w)), int(min(y + half, frame_h))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    mask = np.full((y1 - y0, x1 - x0), 255, np.uint8)
    w2, h2 = 0.75 * width, 0.75 * height  # the object itself is not ground
    cv2.rectangle(
        mask,
        (int(x - x0 - w2), int(y - y0 - h2)),
        (int(x - x0 + w2), int(y - y0 + h2)),
        0,
        -1,
    )
    corners = cv2.goodFeaturesToTrack(previous[y0:y1, x0:x1], 40, 0.01, 3, mask=mask, blockSize=3)
    if corners is None or len(corners) < 6:
        return None
    start = (corners.reshape(-1, 2) + [x0, y0]).astype(np.float32)
    end, status, _ = cv2.calcOpticalFlowPyrLK(
        previous, current, start, None, winSize=(11, 11), maxLevel=2
    )
    good = status.reshape(-1) == 1
    if good.sum() < 6:
        return None
    return np.median(end[good] - start[good], axis=0)
