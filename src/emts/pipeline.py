"""Composes the stages on the per-frame schedule of §3 and times each of them.

Stages A and B run on every frame (:class:`MotionFrontEnd`); the detector, tracker and
verifier are added by later stages of the build.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from emts.channels import MotionChannels
from emts.config import STAGE_A_SIZE, ChannelConfig, EgoMotionConfig
from emts.ego_motion import EgoMotion, EgoMotionEstimator
from emts.geometry import Frame, FrameGeometry
from emts.preprocess import Preprocessor

log = logging.getLogger("emts")

# Corners closer than this (working px) to the letterbox padding are not used by Stage A.
_CONTENT_MARGIN = 8
# An operator tap locks on a detection within this many working px of the tapped point; the
# tap waits (carried along by the camera motion) up to TAP_PATIENCE frames for one to appear.
TAP_RADIUS = 32.0
TAP_PATIENCE = 15


@dataclass(frozen=True)
class FrontEndResult:
    """What Stages A and B produce for one frame.

    Attributes:
        index: frame number in the stream (0-based).
        geometry: coordinate conversions for this frame's input size.
        working: the 640x512 uint8 gray working frame.
        motion: Stage A's estimate (WORKING coordinates).
        channels: Stage B's (3, 192, 256) float32 ``[L, R, D]``.
        ms: milliseconds spent per stage: ``"A"`` (incl. gray/letterbox conversion), ``"B"``.
    """

    index: int
    geometry: FrameGeometry
    working: np.ndarray
    motion: EgoMotion
    channels: np.ndarray
    ms: dict[str, float] = field(default_factory=dict)

    def motion_in_input(self) -> np.ndarray:
        """``M_t`` (2x3) in the input's own pixel coordinates."""
        return self.geometry.motion(self.motion.matrix, Frame.WORKING, Frame.INPUT)


class MotionFrontEnd:
    """Stages A and B over a stream of frames of any supported size and dtype.

    A change of frame size mid-stream restarts the motion history (logged), since motions
    between frames of different geometry mean nothing.

    Example:
        >>> import numpy as np
        >>> front = MotionFrontEnd()
        >>> result = front.step(np.zeros((720, 1280, 3), np.uint8))
        >>> result.channels.shape, result.motion.method
        ((3, 192, 256), 'identity')
    """

    def __init__(
        self,
        ego_config: EgoMotionConfig | None = None,
        channel_config: ChannelConfig | None = None,
    ) -> None:
        self.preprocess = Preprocessor()
        self.ego_motion = EgoMotionEstimator(ego_config)
        self.channels = MotionChannels(channel_config)
        self._corner_mask: np.ndarray | None = None
        self._index = 0

    def reset(self) -> None:
        self.preprocess.reset()
        self.ego_motion.reset()
        self.channels.reset()
        self._index = 0

    def step(self, frame: np.ndarray) -> FrontEndResult:
        """Run Stages A and B on one frame (any size; uint8 or uint16; gray, BGR or BGRA)."""
        start = time.perf_counter()
        working = self.preprocess(frame)
        geometry = self.preprocess.geometry
        assert geometry is not None
        if self.preprocess.geometry_changed:
            log.warning("frame %d: frame size changed; motion history restarted", self._index)
            self.ego_motion.reset()
            self.channels.reset()
        if self.preprocess.geometry_changed or self._index == 0:
            self._corner_mask = _stage_a_mask(geometry)
        motion = self.ego_motion.update(working, self._corner_mask)
        after_a = time.perf_counter()
        channels = self.channels.update(working, motion)
        after_b = time.perf_counter()
        ms = {"A": (after_a - start) * 1e3, "B": (after_b - after_a) * 1e3}
        result = FrontEndResult(self._index, geometry, working, motion, channels, ms)
        self._index += 1
        return result


def _stage_a_mask(geometry: FrameGeometry) -> np.ndarray | None:
    """Stage A corner mask of the letterbox content (None when the input fills the frame)."""
    letterbox = geometry.input_to_working
    if letterbox.content == letterbox.size:
        return None
    mask = letterbox.content_mask(margin=_CONTENT_MARGIN)
    return cv2.resize(mask, STAGE_A_SIZE, interpolation=cv2.INTER_NEAREST)


@dataclass(frozen=True)
class Target:
    """The locked target in the input's pixels."""

    box: np.ndarray  # [x, y, w, h]
    score: float | None  # detector score of the associated detection (None when coasting)
    p_human: float | None  # last verifier probability, None until known


@dataclass(frozen=True)
class FrameResult:
    """Everything the pipeline says about one frame (boxes in input pixels).

    Attributes:
        index: frame number in the stream.
        mode: ``"search"``, ``"locked"`` or ``"reacquire"``.
        target: the locked target, or None in search mode.
        verified: True once the verifier has accepted the current lock.
        detections: ``[(box, score)]`` of Stage C above the score threshold.
        ego_motion: Stage A's estimate; ``motion_input`` is ``M_t`` in input pixels.
        motion_input: 2x3 ``M_t`` in input pixels (frame t-1 -> t).
        ms: milliseconds per stage ``A``-``E``.
        channels: the (3, 192, 256) ``[L, R, D]`` stack (for drawing).
    """

    index: int
    mode: str
    target: Target | None
    verified: bool
    detections: list[tuple[np.ndarray, float]]
    ego_motion: EgoMotion
    motion_input: np.ndarray
    ms: dict[str, float]
    channels: np.ndarray = field(repr=False)


class Pipeline:
    """Stages A-E on the multi-rate schedule of §3.7: A-D every frame, E every 8th frame.

    Args:
        detector: Stage C (default: the shipped model).
        verifier: Stage E (default: the shipped model); None disables verification.
        tracker_config / verifier_config: Stage D / E parameters.
        auto_lock: lock on its own (§6.7) when no operator tap is given.
        threads: worker threads for OpenCV and onnxruntime.

    Example:
        >>> pipeline = Pipeline.default()                      # doctest: +SKIP
        >>> for frame in frames:                                # doctest: +SKIP
        ...     result = pipeline.step(frame)
        ...     if result.target is not None:
        ...         print(result.index, result.mode, result.target.box)
    """

    def __init__(
        self,
        detector=None,
        verifier=None,
        tracker_config=None,
        verifier_config=None,
        auto_lock: bool = True,
        threads: int = 2,
    ) -> None:
        from emts.config import TrackerConfig, VerifierConfig
        from emts.tracker import TargetTracker

        cv2.setNumThreads(threads)
        self.front = MotionFrontEnd()
        self.detector = detector
        self.verifier = verifier
        self.tracker = TargetTracker(tracker_config or TrackerConfig())
        self.verifier_config = verifier_config or VerifierConfig()
        self.auto_lock = auto_lock
        self._pending_tap: tuple[float, float] | None = None  # input px, as tapped
        self._tap_working: np.ndarray | None = None  # the tap carried along, working px
        self._tap_age = 0
        self._candidate_history: list[np.ndarray] = []  # auto-lock: recent top detections
        self._verified = False
        self._p_human: float | None = None
        self._provisional = False  # auto-lock waiting for the verifier
        self._since_verify = 0
        self._pending_verdict: bool | None = None  # computed at frame t, reaches D at t+1
        self.reacquisitions = 0

    @classmethod
    def default(cls, threads: int = 2, auto_lock: bool = True) -> Pipeline:
        """The pipeline with the models shipped in the package."""
        from emts.detector import Detector
        from emts.verifier import Verifier, default_model_path

        verifier = Verifier(threads=1) if default_model_path().is_file() else None
        if verifier is None:
            log.warning("no verifier model shipped: running without Stage E")
        return cls(Detector(threads=threads), verifier, auto_lock=auto_lock, threads=threads)

    def reset(self) -> None:
        """Forget everything: motion history, lock, verifier window."""
        self.front.reset()
        self.tracker.reset()
        if self.verifier is not None:
            self.verifier.reset()
        self._pending_tap = None
        self._tap_working = None
        self._candidate_history = []
        self._verified = False
        self._p_human = None
        self._provisional = False

    def lock(self, x: float, y: float) -> None:
        """Operator tap at input pixel (x, y) on the frame last shown.

        The pipeline locks on the detection nearest to the tap within ``TAP_RADIUS`` working px,
        from the next frame on; the tapped point follows the camera motion while it waits, for
        at most ``TAP_PATIENCE`` frames (then the tap is dropped with a warning).
        """
        self._pending_tap = (float(x), float(y))
        self._tap_working = None
        self._tap_age = 0

    def step(self, frame: np.ndarray) -> FrameResult:
        """Run one frame through Stages A-E."""
        from emts.tracker import Candidate

        start = time.perf_counter()
        front = self.front.step(frame)
        ms = dict(front.ms)
        geometry = front.geometry
        if self.front.preprocess.geometry_changed and self.tracker.locked:
            log.warning("frame %d: frame size changed; lock dropped", front.index)
            self._drop_lock()
        t = time.perf_counter()
        detections = self.detector(front.channels) if self.detector is not None else []
        ms["C"] = (time.perf_counter() - t) * 1e3

        t = time.perf_counter()
        boxes_net = np.array([d.box for d in detections]).reshape(-1, 4)
        boxes_work = geometry.boxes(boxes_net, Frame.NETWORK, Frame.WORKING)
        candidates = [
            Candidate(b[:2] + b[2:] / 2, b[2:], d.score, d.embedding)
            for b, d in zip(boxes_work, detections, strict=True)
        ]
        self._handle_lock_requests(front, candidates)
        was_mode = self.tracker.mode
        verdict = self._verdict_for_tracker()
        state = self.tracker.update(front.motion.matrix, candidates, verdict)
        if was_mode == "locked" and state.mode == "reacquire":
            self.reacquisitions += 1
            self._verified = False
            if self.verifier is not None:
                self.verifier.reset()
        ms["D"] = (time.perf_counter() - t) * 1e3

        t = time.perf_counter()
        self._run_verifier(front, state)
        ms["E"] = (time.perf_counter() - t) * 1e3

        target = None
        mode = state.mode if not self._provisional else "search"
        if state.centre is not None and not self._provisional:
            box_work = np.array([*(state.centre - state.size / 2), *state.size])
            box_input = geometry.boxes([box_work], Frame.WORKING, Frame.INPUT)[0]
            target = Target(box_input, state.score, self._p_human)
        boxes_input = geometry.boxes(boxes_net, Frame.NETWORK, Frame.INPUT)
        ms["total"] = (time.perf_counter() - start) * 1e3
        return FrameResult(
            index=front.index,
            mode=mode,
            target=target,
            verified=self._verified and not self._provisional,
            detections=[(b, d.score) for b, d in zip(boxes_input, detections, strict=True)],
            ego_motion=front.motion,
            motion_input=front.motion_in_input(),
            ms=ms,
            channels=front.channels,
        )

    # ------------------------------------------------------------------ internals
    def _drop_lock(self) -> None:
        self._pending_verdict = None
        self.tracker.reset()
        if self.verifier is not None:
            self.verifier.reset()
        self._verified = False
        self._p_human = None
        self._provisional = False
        self._candidate_history = []

    def _handle_lock_requests(self, front: FrontEndResult, candidates) -> None:
        if self._pending_tap is not None:
            if self._tap_working is None:
                self._tap_working = front.geometry.points(
                    [self._pending_tap], Frame.INPUT, Frame.WORKING
                )[0]
            else:
                m = front.motion.matrix
                self._tap_working = m[:, :2] @ self._tap_working + m[:, 2]
            self._tap_age += 1
            tap = self._tap_working
            near = [k for k in candidates if np.hypot(*(k.centre - tap)) <= TAP_RADIUS]
            if near:
                self._drop_lock()
                self.tracker.lock(min(near, key=lambda k: np.hypot(*(k.centre - tap))))
                self._pending_tap = None
            elif self._tap_age >= TAP_PATIENCE:
                log.warning("frame %d: nothing detected near the tap; tap dropped", front.index)
                self._pending_tap = None
            return
        if not self.auto_lock or self.tracker.locked:
            return
        # §6.7: the strongest detection, spatially stable for 3 consecutive frames.
        if not candidates:
            self._candidate_history = []
            return
        top = max(candidates, key=lambda k: k.score)
        moved = [
            front.motion.matrix[:, :2] @ c + front.motion.matrix[:, 2]
            for c in self._candidate_history
        ]
        if moved and np.hypot(*(moved[-1] - top.centre)) > max(top.size[1], 8.0):
            moved = []
        self._candidate_history = [*moved, top.centre][-3:]
        if len(self._candidate_history) == 3:
            self.tracker.lock(top)
            self._provisional = self.verifier is not None  # wait for the verifier's word
            self._verified = False
            self._candidate_history = []

    def _verdict_for_tracker(self) -> bool | None:
        verdict, self._pending_verdict = self._pending_verdict, None
        return verdict

    def _run_verifier(self, front: FrontEndResult, state) -> None:
        if self.verifier is None or state.centre is None:
            return
        box_work = np.array([*(state.centre - state.size / 2), *state.size])
        box_net = front.geometry.boxes([box_work], Frame.WORKING, Frame.NETWORK)[0]
        self.verifier.observe(front.channels, box_net)
        self._since_verify += 1
        if not self.verifier.ready or self._since_verify < self.verifier_config.every:
            return
        self._since_verify = 0
        p = self.verifier.probability()
        self._p_human = p
        if self._provisional:
            if p >= self.verifier_config.autolock_threshold:
                self._provisional = False
                self._verified = True
            else:
                self._drop_lock()
            return
        human = p >= self.verifier_config.threshold
        self._verified = human
        self._pending_verdict = human  # reaches Stage D with the next frame
