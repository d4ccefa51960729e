"""Stage C, mode ``temporal`` (the default): the network's scores averaged over time in
stabilized coordinates.

The paper's detector is stateless: each frame's heatmap stands alone, and on real video a
walking person's peak flickers around tau_s from frame to frame (uav123-person12: on 47 of
the 90 frames where the person was missed, a detection of the right box scored 0.10-0.30)
while many false positives are one- or two-frame flashes (a paving joint the registration
missed, a leaf). A person keeps being a person: this mode keeps a memory of the heatmap,
carried into the current frame by Stage A's camera motion, and scores every peak of the
current heatmap by

    F_t = (1 - a) H_t + a dilate3x3(warp(F_{t-1}, M_t)),    score = F_t at the peak,

with a = :data:`MEMORY`. The 3x3 dilation (one heatmap cell, 8 network px, either way) lets
the memory follow a walker between cells and a peak that moves between head and legs. Peaks
and boxes are the current frame's (local maxima of H_t, its size and offset heads), so
neighbours are never merged and boxes never lag; only the ranking uses the past. A frame
without a camera motion (a stream's first frame, a new frame size, both of Stage A's
estimators failed) restarts the memory from the next frame.

Peaks whose heatmap alone passes the threshold are decoded too, with their heatmap value as
``Detection.raw_score``: what Stage C reports and acquisition chooses from are the detections
whose *score* passes tau_s; a locked track is fed the *sightings*
(:attr:`emts.detector.Detection.sighting`): it has a memory of its own, and the temporal one
would delay a person coming out from behind a tree (person12, `--occlude 60:90`: recovered in
7 frames instead of 3 when the track was fed the temporal scores).

Measured with the shipped detector (``emts eval real --seeds 3``: the rows "(temporal
scores)"): person12 AP@0.25 0.466 -> 0.533 (at tau_s 0.3 recall 0.55 -> 0.47, false
positives 0.28 -> 0.09 a frame); HIT-UAV val persons / + vehicles 0.450 / 0.420 -> 0.453 /
0.426 at 256x192 and 0.747 / 0.711 -> 0.756 / 0.724 at 512x384 (false positives per image
0.64 -> 0.38). a was chosen on person12 and HIT-UAV val seed 0 among 0.3 / 0.5 / 0.7 (0.7:
person12 better, HIT-UAV worse). Torch-free: numpy + OpenCV.
"""

from __future__ import annotations

import cv2
import numpy as np

from emts.detector import STRIDE, Detection, Detector, decode
from emts.errors import BadInputError
from emts.geometry import Frame

MEMORY = 0.5  # a: the weight of the carried memory (time constant ~1.4 frames)
_KERNEL = np.ones((3, 3), np.uint8)
# heatmap cell (i, j) <-> NETWORK px (8 i + 4, 8 j + 4): the cell's centre
_CELL_TO_NETWORK = np.array([[STRIDE, 0, STRIDE / 2], [0, STRIDE, STRIDE / 2], [0, 0, 1]], float)
_NETWORK_TO_CELL = np.linalg.inv(_CELL_TO_NETWORK)


def motion_in_cells(motion_network: np.ndarray) -> np.ndarray:
    """A 2x3 NETWORK-px motion as a motion of heatmap cells (stride 8)."""
    lifted = np.vstack([np.asarray(motion_network, float).reshape(2, 3), [0, 0, 1]])
    return (_NETWORK_TO_CELL @ lifted @ _CELL_TO_NETWORK)[:2]


class ScoreMemory:
    """The heatmap memory ``F_t`` (module doc).

    Args:
        memory: the weight ``a`` of the carried memory, 0 <= a < 1 (0: the current heatmap).

    Example:
        >>> memory, still = ScoreMemory(), np.eye(2, 3)      # a camera that does not move
        >>> heat = np.zeros((24, 32), np.float32); heat[10, 10] = 0.6
        >>> round(float(memory.update(heat, still)[10, 10]), 3)      # nothing carried yet
        0.6
        >>> round(float(memory.update(0 * heat, still)[10, 10]), 3)  # a one-frame flash fades
        0.3
    """

    def __init__(self, memory: float = MEMORY) -> None:
        if not (isinstance(memory, int | float) and 0 <= memory < 1):
            raise BadInputError(f"score memory must be in [0, 1), got {memory!r}")
        self.memory = float(memory)
        self._map: np.ndarray | None = None

    def reset(self) -> None:
        self._map = None

    def update(self, heat: np.ndarray, motion_network: np.ndarray | None) -> np.ndarray:
        """``F_t`` for this frame's heatmap ``heat`` (h, w) and Stage A's ``M_t`` (2x3,
        NETWORK px, t-1 -> t); ``motion_network`` None restarts the memory from the next
        frame (returns ``heat``)."""
        heat = np.asarray(heat, np.float32)
        if motion_network is None:
            self._map = None
            return heat
        carried = self._map
        if carried is None or carried.shape != heat.shape or self.memory == 0:
            fused = heat
        else:
            h, w = heat.shape
            carried = cv2.warpAffine(
                carried,
                motion_in_cells(motion_network),
                (w, h),
                flags=cv2.INTER_LINEAR,
                borderMode=cv2.BORDER_CONSTANT,
                borderValue=0,
            )
            fused = (1 - self.memory) * heat + self.memory * cv2.dilate(carried, _KERNEL)
        self._map = fused
        return fused


class TemporalDetector:
    """Stage C in mode ``temporal``: the network, its peaks scored by :class:`ScoreMemory`.

    A stage with its own state (the memory); :meth:`reset` at a new stream.

    Args:
        detector: the network (its threshold is tau_s, applied to the fused scores).
        memory: the memory's weight ``a`` (default :data:`MEMORY`).

    Example:
        >>> stage = TemporalDetector(Detector())                      # doctest: +SKIP
        >>> detections = stage.on_frame(front.step(frame))           # doctest: +SKIP
    """

    def __init__(self, detector: Detector, memory: float = MEMORY) -> None:
        self.detector = detector
        self.memory = ScoreMemory(memory)
        # peaks decoded down to this far under the threshold too: evidence from outside the
        # network may lift them over it (the pipeline's colour evidence, emts.boxfit)
        self.lookahead = 0.0

    @property
    def network_size(self) -> tuple[int, int]:
        """The network's input size: Stage B must be built for it."""
        return tuple(self.detector.network_size)

    @property
    def threshold(self) -> float:
        return self.detector.threshold

    def __getattr__(self, name: str):
        """The network's own attributes (``path``, ``box_scale``, ...) read through."""
        if name == "detector":  # not set yet (copying, unpickling)
            raise AttributeError(name)
        return getattr(self.detector, name)

    def reset(self) -> None:
        self.memory.reset()

    def detect(
        self,
        channels: np.ndarray,
        motion_network: np.ndarray | None,
        residual_reference: float | None = None,
    ) -> list[Detection]:
        """Detections (NETWORK px, best first) of one frame: Stage B's channels and Stage A's
        ``M_t`` in NETWORK px (None: no motion known; the memory restarts). Every peak whose
        score *or* heatmap passes the threshold: keep ``score >= threshold`` for Stage C's
        output, ``sighting >= threshold`` for a locked track (module doc)."""
        heat, size, offset, embedding = self.detector.raw(channels, residual_reference)
        scores = self.memory.update(heat[0][0], motion_network)
        return decode(
            heat[0],
            size[0],
            offset[0],
            embedding[0],
            self.detector.threshold - self.lookahead,
            box_scale=self.detector.box_scale,
            scores=scores,
        )

    def detect_working(
        self, channels: np.ndarray, motion_working: np.ndarray | None, geometry
    ) -> list[Detection]:
        """:meth:`detect` with Stage A's ``M_t`` as it comes, in WORKING px (None: no motion
        known), mapped to NETWORK px by the frame's :class:`emts.geometry.FrameGeometry`."""
        motion = None
        if motion_working is not None:
            motion = geometry.motion(np.asarray(motion_working), Frame.WORKING, Frame.NETWORK)
        return self.detect(channels, motion)

    def on_frame(self, front) -> list[Detection]:
        """Detections of a :class:`emts.pipeline.FrontEndResult` (Stages A and B's output)."""
        known = front.motion.method != "identity" and not front.size_changed
        return self.detect_working(
            front.channels, front.motion.matrix if known else None, front.geometry
        )
