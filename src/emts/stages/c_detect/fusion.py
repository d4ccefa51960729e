"""Stage C, mode ``fused``: compensated-difference blobs at 640x512, scored with the network.

The network (256x192) misses people under ~20 working px (a 19-px person is 7 network px);
the classical compensated difference of issue 8 finds them at full resolution but cannot tell
a person from parallax or a driving car. The fused mode keeps the classical *boxes* and lets
a logistic blend of blob and network evidence *score* them:

1. Stage A's motion ``M_t`` warps the previous working frame onto the current one;
   residual = Gauss5x5(|I_t - warped|) over the letterbox content (the warp's border excluded).
2. Threshold ``T = k x`` the frame's median residual, close 5x5, connected components: blobs.
3. Per blob, features (:data:`FEATURES`): its contrast ``m / (m + T)`` (``m`` its mean
   residual), the network heatmap at the blob's centre cell and the 3x3 max around it, log
   area, log height/width, fill (pixels / box area), log peak / T, and how far the network's
   predicted height at that cell is from the blob's (|log ratio|).
4. score = sigmoid(w . features + b) (:class:`FusionConfig`); box = the blob's; embedding =
   the network's at the centre cell.

``k`` and the weights were fitted on HIT-UAV *train* pseudo-clips (every 5th still, both
variants, seed 0: :func:`emts.eval.real.fit_fusion`), never on val or uav123-person12, once
per network size the network runs at (:data:`FITTED`; 256x192 and 512x384).
Torch-free: numpy + OpenCV + the network's head outputs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cv2
import numpy as np

from emts.config import NETWORK_SIZE, WORKING_SIZE
from emts.geometry import Frame, FrameGeometry, network_letterbox
from emts.stages.c_detect.detector import MAX_DETECTIONS, STRIDE, Detection, Detector

FEATURES = (
    "logit contrast",
    "logit heat (cell)",
    "logit heat (3x3)",
    "log area",
    "log height/width",
    "fill",
    "log peak/T",
    "|log network height / blob height|",
)
_KERNEL = np.ones((5, 5), np.uint8)
_EPS = 1e-4


@dataclass(frozen=True)
class FusionConfig:
    """The blend; fitted by :func:`emts.eval.real.fit_fusion` on HIT-UAV train (see module)."""

    k: float = 4.0  # threshold = k x the frame's median residual (issue 8's baseline, k on train)
    weights: tuple[float, ...] = (-0.37, 0.921, 0.459, -1.195, -0.253, 1.914, 1.183, -4.768)
    bias: float = 7.712
    max_detections: int = MAX_DETECTIONS
    # The weights were fitted on the network's heatmap of Stage B's channels as they are; the
    # blend reads it so (residual-level normalization off), else it accepts more blobs on
    # loud RGB frames than it was fitted to (person12: 0.26 -> 0.78 FP/frame).
    residual_reference: float = 0.0


# The blend fitted with the network run at another size (``fit_fusion(..., network_size=)``):
# its heatmap and size head read differently there.
FITTED = {
    (256, 192): FusionConfig(),
    (512, 384): FusionConfig(
        weights=(-0.923, 1.053, 1.339, -0.289, 0.384, 0.09, 1.381, -4.124), bias=3.256
    ),
}


def fusion_config(network_size: tuple[int, int]) -> FusionConfig:
    """The blend fitted for the network run at ``network_size`` (the 256x192 one, with a
    warning, for a size no blend was fitted at)."""
    size = tuple(network_size)
    if size not in FITTED:
        logging.getLogger("emts").warning(
            "fused mode: no blend fitted at network size %dx%d; using the 256x192 one", *size
        )
    return FITTED.get(size, FITTED[(256, 192)])


def compensated_residual(
    working: np.ndarray, previous: np.ndarray, motion: np.ndarray, content: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(residual float32, valid bool) at WORKING resolution: Gauss5x5(|I_t - M_t(I_t-1)|).

    Args:
        working: the uint8 640x512 frame t.
        previous: the frame t-1.
        motion: 2x3 Stage A estimate t-1 -> t, WORKING px.
        content: uint8 mask of the letterbox content (WORKING px).
    """
    size = WORKING_SIZE
    warped = cv2.warpAffine(
        previous.astype(np.float32), motion, size, flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REPLICATE,
    )  # fmt: skip
    inside = cv2.warpAffine(content, motion, size, flags=cv2.INTER_NEAREST)
    valid = cv2.erode(np.minimum(inside, content), _KERNEL) > 0
    residual = cv2.GaussianBlur(np.abs(working.astype(np.float32) - warped), (5, 5), 0)
    return residual, valid


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


def blob_features(
    residual: np.ndarray, valid: np.ndarray, k: float, heads: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blobs of ``residual`` above ``k`` x its median and their :data:`FEATURES`.

    Args:
        heads: the network's (C, H/8, W/8) heatmap, log-size, offset, embedding of this
            frame (e.g. (C, 24, 32) at 256x192).

    Returns:
        boxes (n, 4) WORKING px (top-left edge), features (n, 8), centre cells (n, 2) [x, y].
    """
    # The median over every other pixel of every other row: within 0.1 % of the full one
    # (person12: median 0.07 %), at a quarter of the cost (np.median of 300k values: ~2 ms).
    sample = residual[::2, ::2][valid[::2, ::2]]
    median = float(np.median(sample)) if sample.size else 0.0
    threshold = max(k * median, 1e-3)
    mask = ((residual > threshold) & valid).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, _KERNEL)
    # 16-bit labels where they cannot overflow (fewer foreground pixels than 65,535): about a
    # third of the time of 32-bit ones for a 640x512 mask, same components.
    label_type = cv2.CV_16U if cv2.countNonZero(mask) < 65535 else cv2.CV_32S
    count, labels, stats, _ = cv2.connectedComponentsWithStatsWithAlgorithm(
        mask, 8, label_type, cv2.CCL_DEFAULT
    )
    if count <= 1:
        return np.zeros((0, 4)), np.zeros((0, len(FEATURES))), np.zeros((0, 2), int)
    # Per-blob sums and peaks over the blobs' own pixels only (a few % of the frame), the
    # peak by one sort and a segmented max (np.maximum.at over the frame cost ~14 ms).
    flat = labels.ravel()
    inside = np.flatnonzero(flat)
    owners, values = flat[inside], residual.ravel()[inside]
    pixels = stats[1:, cv2.CC_STAT_AREA].astype(float)
    mean = np.bincount(owners, weights=values, minlength=count)[1:] / np.maximum(pixels, 1)
    order = np.argsort(owners, kind="stable")
    starts = np.concatenate([[0], np.cumsum(stats[1:, cv2.CC_STAT_AREA])[:-1]])
    peak = np.concatenate([[0.0], np.maximum.reduceat(values[order], starts)])
    boxes = stats[1:, :4].astype(float)
    heat, log_size = heads[0][0], heads[1]
    rows, cols = heat.shape
    # the blob centre (WORKING edge coordinates) to its stride-8 cell of the network grid
    centre = boxes[:, :2] + boxes[:, 2:] / 2 - 0.5
    to_network = network_letterbox((cols * STRIDE, rows * STRIDE)).matrix
    centre_net = centre @ to_network[:2, :2].T + to_network[:2, 2]
    cells = np.floor((centre_net + 0.5) / STRIDE).astype(int)
    cells = np.clip(cells, 0, [cols - 1, rows - 1])
    x, y = cells[:, 0], cells[:, 1]
    heat_3x3 = cv2.dilate(heat, np.ones((3, 3), np.uint8))
    scale = to_network[1, 1]  # network px per working px
    network_height = STRIDE * np.exp(np.clip(log_size[1, y, x], -4.0, 5.0)) / scale
    area = np.maximum(boxes[:, 2] * boxes[:, 3], 1.0)
    height = np.maximum(boxes[:, 3], 1.0)
    features = np.stack(
        [
            _logit(mean / (mean + threshold)),
            _logit(heat[y, x]),
            _logit(heat_3x3[y, x]),
            np.log(area),
            np.log(height / np.maximum(boxes[:, 2], 1.0)),
            pixels / area,
            np.log(peak[1:] / threshold),
            np.abs(np.log(network_height / height)),
        ],
        axis=1,
    )
    return boxes, features, cells


class FusedDetector:
    """Stage C in mode ``fused``: the network plus compensated-difference blobs (module doc).

    A stage with its own state (the previous working frame). The first frame of a stream, or
    of a new frame size, has no residual: it returns no detections.

    Args:
        detector: the network (its session runs on every frame; its threshold is tau_s).
        config: blob threshold and blend weights (default: those fitted at the detector's
            network size, :func:`fusion_config`).

    Example:
        >>> fused = FusedDetector(Detector())                        # doctest: +SKIP
        >>> detections = fused.on_frame(front.step(frame))           # doctest: +SKIP
    """

    def __init__(self, detector: Detector, config: FusionConfig | None = None) -> None:
        self.detector = detector
        self.config = config or fusion_config(self.network_size)
        self.threshold = detector.threshold
        self._weights = np.asarray(self.config.weights, float)
        self._previous: np.ndarray | None = None
        self._geometry: FrameGeometry | None = None
        self._content: np.ndarray | None = None

    @property
    def network_size(self) -> tuple[int, int]:
        """The network's input size: Stage B must be built for it."""
        return tuple(getattr(self.detector, "network_size", NETWORK_SIZE))

    @property
    def stage_b_warp(self) -> str:
        """Stage B's warp the network runs with."""
        return getattr(self.detector, "stage_b_warp", None) or "network"

    @property
    def residual_baseline(self) -> int:
        """The frames R spans for the network (1: eq. 2's)."""
        return int(getattr(self.detector, "residual_baseline", None) or 1)

    def reset(self) -> None:
        self._previous = None
        self._geometry = None

    def scored_blobs(
        self,
        working: np.ndarray,
        motion: np.ndarray,
        geometry: FrameGeometry,
        heads: list[np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All blobs of this frame: boxes (WORKING px), fused scores, centre cells."""
        previous = self._previous if self._geometry is geometry else None
        if self._geometry is not geometry:  # the letterbox content, once per input size
            self._content = geometry.input_to_working.content_mask()
        self._previous, self._geometry = working, geometry
        if previous is None:
            return np.zeros((0, 4)), np.zeros(0), np.zeros((0, 2), int)
        residual, valid = compensated_residual(working, previous, motion, self._content)
        boxes, features, cells = blob_features(residual, valid, self.config.k, heads)
        scores = 1 / (1 + np.exp(-(features @ self._weights + self.config.bias)))
        return boxes, scores, cells

    def detect(
        self, channels: np.ndarray, working: np.ndarray, motion: np.ndarray, geometry
    ) -> list[Detection]:
        """Detections (NETWORK px, best first) of one frame: Stage B's channels, the working
        frame, Stage A's ``M_t`` (WORKING px) and the frame's geometry."""
        heads = [h[0] for h in self.detector.raw(channels, self.config.residual_reference)]
        boxes, scores, cells = self.scored_blobs(working, np.asarray(motion), geometry, heads)
        keep = np.nonzero(scores >= self.threshold)[0]
        keep = keep[np.argsort(-scores[keep])][: self.config.max_detections]
        boxes_net = geometry.boxes(boxes[keep], Frame.WORKING, Frame.NETWORK)
        embedding = heads[3]
        out = []
        for box, score, (x, y) in zip(boxes_net, scores[keep], cells[keep], strict=True):
            vector = embedding[:, y, x].astype(np.float32)
            vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
            out.append(Detection(box, float(score), vector))
        return out

    def on_frame(self, front) -> list[Detection]:
        """:meth:`detect` on a :class:`emts.front_end.FrontEndResult` (Stages A and B's output)."""
        if front.size_changed:
            self.reset()
        return self.detect(front.channels, front.working, front.motion.matrix, front.geometry)
