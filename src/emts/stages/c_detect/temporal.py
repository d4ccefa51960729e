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
``Detection.raw_score``: what Stage C reports and acquisition chooses from are the detections whose
*score* passes tau_s; a locked track is fed the *sightings*
(:attr:`emts.stages.c_detect.detector.Detection.sighting`): it has a memory of its own, and the
temporal one would delay a person coming out from behind a tree (person12, `--occlude 60:90`:
recovered in 7 frames instead of 3 when the track was fed the temporal scores).

Measured with the shipped detector (``emts eval real --seeds 3``: the rows "(temporal
scores)"): person12 AP@0.25 0.466 -> 0.533 (at tau_s 0.3 recall 0.55 -> 0.47, false
positives 0.28 -> 0.09 a frame); HIT-UAV val persons / + vehicles 0.450 / 0.420 -> 0.453 /
0.426 at 256x192 and 0.747 / 0.711 -> 0.756 / 0.724 at 512x384 (false positives per image
0.64 -> 0.38). a was chosen on person12 and HIT-UAV val seed 0 among 0.3 / 0.5 / 0.7 (0.7:
person12 better, HIT-UAV worse).

**The coarse pass.** A model run at twice the size it was trained at (the thermal model:
trained at 256x192, run at 512x384 for HIT-UAV's 19-px people) sees tall people at twice the
scale it learnt: on real thermal persons magnified to a median 74 / 94 px tall (HIT-UAV val
stills, ``benchmarks/thermal_large_persons.py``, seed 0) it found them at AP@0.25 0.84 /
0.69, AP@0.5 0.41 / 0.29. So such a model also runs at its training size on the same channels halved
(:func:`emts.stages.b_channels.halved_channels`), with a score memory of its own; its detections at
least :data:`COARSE_MIN_HEIGHT` WORKING px tall join the fine pass's, a detection of either
pass giving way to a better one of the other that it overlaps (:func:`merge_passes`).
Measured: magnified persons AP@0.25 0.84 / 0.69 -> 0.87 / 0.85 at 74 / 94 px (AP@0.5 0.41 /
0.29 -> 0.58 / 0.57), unchanged at 39 / 56 px; HIT-UAV val as it is unchanged with persons
moving, -0.004 with vehicles moving too (pooled seeds 0-2); on person-free gray footage 40 ->
42 verified false auto-locks in 39 windows. It costs ~0.7 ms a thermal frame (the halving
0.2, the network at 256x192 0.5; ``emts bench --model thermal [--coarse-pass off]``). The
50-px floor was chosen among 40 / 50 / 60 on those sets: below it the coarse pass adds only
false positives where the fine one already sees. ``coarse=None`` (``--coarse-pass off``)
runs the fine pass alone. Torch-free: numpy + OpenCV.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from emts.errors import BadInputError
from emts.geometry import Frame, FrameGeometry, box_iou, lift, working_geometry
from emts.modality import AUTO
from emts.stages.b_channels import halved_channels, network_content
from emts.stages.c_detect.detector import (
    STRIDE,
    Detection,
    Detector,
    decode,
    fixed_size,
    recorded_size,
)

MEMORY = 0.5  # a: the weight of the carried memory (time constant ~1.4 frames)
# The coarse pass (module doc): its detections shorter than this (WORKING px) are dropped,
# and a detection of either pass overlapping a better one of the other pass at this IoU
COARSE_MIN_HEIGHT = 50.0
COARSE_MERGE_IOU = 0.25
_KERNEL = np.ones((3, 3), np.uint8)
# heatmap cell (i, j) <-> NETWORK px (8 i + 4, 8 j + 4): the cell's centre
_CELL_TO_NETWORK = np.array([[STRIDE, 0, STRIDE / 2], [0, STRIDE, STRIDE / 2], [0, 0, 1]], float)
_NETWORK_TO_CELL = np.linalg.inv(_CELL_TO_NETWORK)


def motion_in_cells(motion_network: np.ndarray) -> np.ndarray:
    """A 2x3 NETWORK-px motion as a motion of heatmap cells (stride 8)."""
    lifted = lift(np.asarray(motion_network, float).reshape(2, 3))
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


def coarse_pass_for(detector) -> Detector | None:
    """The coarse pass of ``detector`` (module doc): the same model at the size it was
    trained at, where it runs at exactly twice that size (the thermal model: trained at
    256x192, run at 512x384) -- the same file where its input size is open, else (a LiteRT
    file, whose size is fixed) the file converted at that size beside it,
    ``NAME.WxH.tflite`` (``emts export-litert --network-size WxH``); None without one, for a
    model run at another size (the default model at its own 256x192) or one that records no
    training size."""
    session, path = getattr(detector, "session", None), getattr(detector, "path", None)
    if session is None or path is None:
        return None
    trained = recorded_size(session)
    if trained is None or tuple(detector.network_size) != (2 * trained[0], 2 * trained[1]):
        return None
    if fixed_size(session) is not None:
        path = path.with_name(f"{path.stem}.{trained[0]}x{trained[1]}{path.suffix}")
        if not path.is_file():
            return None
    return Detector(
        path,
        threads=getattr(detector, "threads", 2),
        threshold=detector.threshold,
        residual_reference=detector.residual_reference,
        network_size=trained,
        mirror_average=getattr(detector, "mirror_average", None),
    )


def merge_passes(
    fine: list[Detection], coarse: list[Detection], iou: float = COARSE_MERGE_IOU
) -> list[Detection]:
    """The fine and coarse passes' detections (same NETWORK px) as one list, best first: from
    the best down, a detection is dropped where it overlaps a kept one *of the other pass* at
    ``iou`` or more (each pass's own neighbours are the decoder's business)."""
    if not coarse:
        return fine
    both = sorted(
        [(d, 0) for d in fine] + [(d, 1) for d in coarse], key=lambda item: -item[0].score
    )
    kept: list[Detection] = []
    kept_boxes: tuple[list, list] = ([], [])
    for detection, source in both:
        other = kept_boxes[1 - source]
        if other and box_iou(np.asarray(detection.box, float), np.array(other)).max() >= iou:
            continue
        kept.append(detection)
        kept_boxes[source].append(np.asarray(detection.box, float))
    return kept


def _remembered(
    network: Detector,
    memory: ScoreMemory,
    channels: np.ndarray,
    motion_network: np.ndarray | None,
    threshold: float,
    residual_reference: float | None,
    raw: list[np.ndarray] | None = None,
) -> list[Detection]:
    """``network``'s peaks on ``channels``, scored by ``memory`` (updated with this frame);
    ``raw``: the network's outputs on them, already run (:meth:`TemporalDetector.run_ahead`)."""
    if raw is None:
        raw = network.raw(channels, residual_reference)
    heat, size, offset, embedding = raw
    scores = memory.update(heat[0][0], motion_network)
    return decode(
        heat[0],
        size[0],
        offset[0],
        embedding[0],
        threshold,
        box_scale=network.box_scale,
        scores=scores,
    )


@dataclass(frozen=True)
class AheadOutputs:
    """:meth:`TemporalDetector.run_ahead`'s result: the networks' outputs on one frame's
    channels (``coarse``: None without a coarse pass), and the network that gave them."""

    detector: Detector
    fine: list[np.ndarray]
    coarse: list[np.ndarray] | None


class TemporalDetector:
    """Stage C in mode ``temporal``: the network, its peaks scored by :class:`ScoreMemory`.

    A stage with its own state (the memory); :meth:`reset` at a new stream.

    Args:
        detector: the network (its threshold is tau_s, applied to the fused scores).
        memory: the memory's weight ``a`` (default :data:`MEMORY`).
        coarse: the coarse pass (module doc): ``"auto"`` (default) :func:`coarse_pass_for`
            the network, a network at half its size, or None: none.

    Example:
        >>> stage = TemporalDetector(Detector())                      # doctest: +SKIP
        >>> detections = stage.on_frame(front.step(frame))           # doctest: +SKIP
    """

    def __init__(
        self, detector: Detector, memory: float = MEMORY, coarse: Detector | str | None = AUTO
    ) -> None:
        self.detector = detector
        self.memory = ScoreMemory(memory)
        # the coarse pass (module doc): "auto" where the network runs at twice the size it
        # was trained at (coarse_pass_for), a Detector, or None: none
        self.coarse = coarse_pass_for(detector) if coarse == AUTO else coarse
        self.coarse_memory = ScoreMemory(memory)
        self._coarse_content: dict[tuple, np.ndarray | None] = {}
        if self.coarse is not None:
            self._fine_geometry = working_geometry(self.detector.network_size)
            self._coarse_geometry = working_geometry(self.coarse.network_size)
        # peaks decoded down to this far under the threshold too: evidence from outside the
        # network may lift them over it (the pipeline's colour evidence,
        # emts.stages.c_detect.boxfit)
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
        self.coarse_memory.reset()

    def detect(
        self,
        channels: np.ndarray,
        motion_network: np.ndarray | None,
        residual_reference: float | None = None,
        content: np.ndarray | None = None,
    ) -> list[Detection]:
        """Detections (NETWORK px, best first) of one frame: Stage B's channels and Stage A's
        ``M_t`` in NETWORK px (None: no motion known; the memory restarts). Every peak whose
        score *or* heatmap passes the threshold: keep ``score >= threshold`` for Stage C's
        output, ``sighting >= threshold`` for a locked track (module doc). ``content``: the
        coarse pass's letterbox content mask (:func:`emts.stages.b_channels.content_mask` at its
        size; None: the frame fills the network input)."""
        return self._detect(channels, motion_network, residual_reference, content, None)

    def _detect(self, channels, motion_network, residual_reference, content, ahead):
        """:meth:`detect`, with the networks' outputs already run where ``ahead`` holds them
        (:class:`AheadOutputs` for these channels, or None)."""
        threshold = self.detector.threshold - self.lookahead
        fine = None if ahead is None else ahead.fine
        detections = _remembered(
            self.detector,
            self.memory,
            channels,
            motion_network,
            threshold,
            residual_reference,
            fine,
        )
        if self.coarse is None:
            return detections
        coarse = self._coarse_pass(
            channels,
            motion_network,
            threshold,
            residual_reference,
            content,
            None if ahead is None else ahead.coarse,
        )
        return merge_passes(detections, coarse)

    def _coarse_pass(
        self,
        channels: np.ndarray,
        motion_network: np.ndarray | None,
        threshold: float,
        residual_reference: float | None,
        content: np.ndarray | None,
        raw: list[np.ndarray] | None = None,
    ) -> list[Detection]:
        """The coarse pass's detections at least :data:`COARSE_MIN_HEIGHT` tall, in the fine
        pass's NETWORK px; scored by a memory of their own (``raw``: its network's outputs on
        the halved channels, already run)."""
        fine, coarse = self._fine_geometry, self._coarse_geometry
        motion = None
        if motion_network is not None:
            working = fine.motion(np.asarray(motion_network), Frame.NETWORK, Frame.WORKING)
            motion = coarse.motion(working, Frame.WORKING, Frame.NETWORK)
        small = None if raw is not None else self._halved(channels, content)
        found = _remembered(
            self.coarse, self.coarse_memory, small, motion, threshold, residual_reference, raw
        )
        if not found:
            return []
        boxes = coarse.boxes(np.array([d.box for d in found]), Frame.NETWORK, Frame.WORKING)
        tall = boxes[:, 3] >= COARSE_MIN_HEIGHT
        if not tall.any():
            return []
        boxes = fine.boxes(boxes[tall], Frame.WORKING, Frame.NETWORK)
        kept = [d for d, keep in zip(found, tall, strict=True) if keep]
        return [replace(d, box=box) for d, box in zip(kept, boxes, strict=True)]

    def _halved(self, channels: np.ndarray, content: np.ndarray | None) -> np.ndarray:
        """The coarse pass's input: ``channels`` at half size."""
        baseline = getattr(self.coarse, "residual_baseline", None) or 1
        return halved_channels(channels, content, baseline)

    def detect_working(
        self,
        channels: np.ndarray,
        motion_working: np.ndarray | None,
        geometry,
        ahead: AheadOutputs | None = None,
    ) -> list[Detection]:
        """:meth:`detect` with Stage A's ``M_t`` as it comes, in WORKING px (None: no motion
        known), mapped to NETWORK px by the frame's :class:`emts.geometry.FrameGeometry`;
        ``ahead``: :meth:`run_ahead`'s outputs for ``channels`` (None: run here)."""
        motion = None
        if motion_working is not None:
            motion = geometry.motion(np.asarray(motion_working), Frame.WORKING, Frame.NETWORK)
        content = None
        if self.coarse is not None:
            content = self._content_of(geometry)
        if ahead is not None and ahead.detector is not self.detector:
            ahead = None  # (run by another network: not these outputs)
        return self._detect(channels, motion, None, content, ahead)

    def run_ahead(self, front) -> AheadOutputs:
        """The networks' outputs on a :class:`emts.front_end.FrontEndResult`'s channels (the
        fine pass, and the coarse pass on the halved channels), for :meth:`on_frame` later:
        they read nothing of the stage's state (the score memories, which do, are updated
        there, in the stream's order), so they may run in another thread, ahead, as Stages
        A-B do (:meth:`emts.pipeline.Pipeline.front_ahead`). The detections are the same."""
        fine = self.detector.raw(front.channels)
        coarse = None
        if self.coarse is not None:
            content = self._content_of(front.geometry)
            coarse = self.coarse.raw(self._halved(front.channels, content))
        return AheadOutputs(self.detector, fine, coarse)

    def _content_of(self, geometry) -> np.ndarray | None:
        """The coarse pass's content mask for the frame's input size (None: no letterbox)."""
        key = tuple(geometry.input_size)
        if key not in self._coarse_content:
            coarse = FrameGeometry(key, self.coarse.network_size)
            self._coarse_content[key] = network_content(coarse)
        return self._coarse_content[key]

    def on_frame(self, front) -> list[Detection]:
        """Detections of a :class:`emts.front_end.FrontEndResult` (Stages A and B's output)."""
        known = front.motion.method != "identity" and not front.size_changed
        return self.detect_working(
            front.channels,
            front.motion.matrix if known else None,
            front.geometry,
            front.network,
        )
