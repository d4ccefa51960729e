"""Composes the stages on the per-frame schedule of §3 and times each of them.

:class:`MotionFrontEnd` runs Stages A and B; :class:`Pipeline` runs the straight sequence
A -> B -> C -> lock acquisition -> D -> E on every frame (E classifies every 8th frame).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

import cv2
import numpy as np

from emts.acquisition import LockAcquisition, Tap
from emts.boxfit import DEFAULT_BOX_FIT, fit_detections, look_ahead
from emts.channels import MotionChannels, network_content
from emts.config import (
    NETWORK_SIZE,
    STAGE_A_SIZE,
    AcquisitionConfig,
    BoxFitConfig,
    ChannelConfig,
    EgoMotionConfig,
    TrackerConfig,
    VerifierConfig,
)
from emts.detector import Detection
from emts.ego_motion import EgoMotion, EgoMotionEstimator
from emts.errors import BadInputError
from emts.fusion import FusedDetector
from emts.geometry import Frame, FrameGeometry
from emts.modality import AUTO, COLOUR, DEFAULT, MODEL_CHOICES, DetectorChoice, frame_modality
from emts.preprocess import Preprocessor, validate_frame
from emts.temporal import TemporalDetector
from emts.tracker import AppearanceView, Candidate, TargetTracker
from emts.verifier import FrameView, VerificationSchedule

log = logging.getLogger("emts")

# Corners closer than this (working px) to the letterbox padding are not used by Stage A.
_CONTENT_MARGIN = 8


@dataclass(frozen=True)
class FrontEndResult:
    """What Stages A and B produce for one frame.

    Attributes:
        index: frame number in the stream (0-based).
        geometry: coordinate conversions for this frame's input size.
        working: the 640x512 uint8 gray working frame.
        motion: Stage A's estimate (WORKING coordinates).
        channels: Stage B's (3, H, W) float32 ``[L, R, D]`` at the network size.
        size_changed: the input size differs from the previous frame's (history restarted).
        ms: milliseconds spent per stage: ``"A"`` (incl. gray/letterbox conversion), ``"B"``.
    """

    index: int
    geometry: FrameGeometry
    working: np.ndarray
    motion: EgoMotion
    channels: np.ndarray
    ms: dict[str, float] = field(default_factory=dict)
    size_changed: bool = False

    def motion_in_input(self) -> np.ndarray:
        """``M_t`` (2x3) in the input's own pixel coordinates."""
        return self.geometry.motion(self.motion.matrix, Frame.WORKING, Frame.INPUT)

    def homography_in_input(self) -> np.ndarray | None:
        """Stage A's homography (3x3, frame t-1 -> t; what Stage B warped by) in the input's
        own pixel coordinates, or None when Stage B warped by ``M_t``."""
        if self.motion.homography is None:
            return None
        return self.geometry.homography(self.motion.homography, Frame.WORKING, Frame.INPUT)


class MotionFrontEnd:
    """Stages A and B over a stream of frames of any supported size and dtype.

    A change of frame size mid-stream restarts the motion history (logged), since motions
    between frames of different geometry mean nothing. ``network_size`` is Stage B's output
    size, the detector's input (:attr:`emts.detector.Detector.network_size`).

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
        network_size: tuple[int, int] = NETWORK_SIZE,
    ) -> None:
        self.network_size = tuple(network_size)
        self.preprocess = Preprocessor(self.network_size)
        self.ego_motion = EgoMotionEstimator(ego_config)
        self.channels = MotionChannels(channel_config, self.network_size)
        self._corner_mask: np.ndarray | None = None
        self._corner_mask_for: FrameGeometry | None = None
        self._content: np.ndarray | None = None  # NETWORK px holding image (letterboxed input)
        self._index = 0

    def reset(self) -> None:
        self.preprocess.reset()
        self.ego_motion.reset()
        self.channels.reset()
        self._corner_mask_for = None
        self._index = 0

    def use_network_size(
        self,
        network_size: tuple[int, int],
        warp_at: str | None = None,
        residual_baseline: int | None = None,
    ) -> None:
        """Feed a detector of another input size (and, given ``warp_at`` and
        ``residual_baseline``, Stage B warp and R) from the next frame on: Stage A's history is
        kept (its working frame does not change), Stage B's restarts."""
        size = (int(network_size[0]), int(network_size[1]))
        config = self.channels.config
        changes = {}
        if warp_at is not None and warp_at != config.warp_at:
            changes["warp_at"] = warp_at
        if residual_baseline is not None and residual_baseline != config.residual_baseline:
            changes["residual_baseline"] = int(residual_baseline)
        if changes:
            config = dataclasses.replace(config, **changes)
        elif size == self.network_size:
            return
        self.network_size = size
        self.preprocess.network_size = size
        self.preprocess.geometry = None  # rebuilt for the new size by the next frame
        self.channels = MotionChannels(config, size)

    def step(self, frame: np.ndarray) -> FrontEndResult:
        """Run Stages A and B on one frame (any size; uint8 or uint16; gray, BGR or BGRA)."""
        start = time.perf_counter()
        working, geometry, size_changed = self.preprocess(frame)
        if size_changed:
            log.warning("frame %d: frame size changed; motion history restarted", self._index)
            self.ego_motion.reset()
            self.channels.reset()
        if size_changed or self._corner_mask_for is not geometry:
            self._corner_mask = _stage_a_mask(geometry)
            self._corner_mask_for = geometry
            self._content = network_content(geometry)
        motion = self.ego_motion.update(working, self._corner_mask)
        after_a = time.perf_counter()
        channels = self.channels.update(working, motion, self._content)
        after_b = time.perf_counter()
        ms = {"A": (after_a - start) * 1e3, "B": (after_b - after_a) * 1e3}
        result = FrontEndResult(self._index, geometry, working, motion, channels, ms, size_changed)
        self._index += 1
        return result


def channels_at(
    frames,
    network_size: tuple[int, int] = NETWORK_SIZE,
    warp_at: str = "network",
    residual_baseline: int = 1,
) -> np.ndarray:
    """(n, 3, H, W) Stage B channels of a clip's frames run through Stages A and B at
    ``network_size`` with Stage B's ``warp_at`` and ``residual_baseline`` (e.g. a stored clip
    set's frames for a detector of another size or warp: the sets cache the paper's 256x192,
    "network", R of the previous frame)."""
    config = ChannelConfig(warp_at=warp_at, residual_baseline=residual_baseline)
    front = MotionFrontEnd(channel_config=config, network_size=network_size)
    return np.stack([front.step(frame).channels for frame in frames])


def _stage_a_mask(geometry: FrameGeometry) -> np.ndarray | None:
    """Stage A corner mask of the letterbox content (None when the input fills the frame)."""
    letterbox = geometry.input_to_working
    if letterbox.content == letterbox.size:
        return None
    mask = letterbox.content_mask(margin=_CONTENT_MARGIN)
    return cv2.resize(mask, STAGE_A_SIZE, interpolation=cv2.INTER_NEAREST)


def candidates_of(
    detections, geometry: FrameGeometry, threshold: float = 0.0, sightings: bool = False
) -> list[Candidate]:
    """Stage D's candidates (WORKING px) of NETWORK-px detections whose score reaches
    ``threshold``; with ``sightings``, scored (and kept) by this frame's evidence alone
    (:attr:`emts.detector.Detection.sighting`: what a locked track is fed)."""
    kept = [(d, d.sighting if sightings else d.score) for d in detections]
    kept = [(d, score) for d, score in kept if score >= threshold]
    boxes_net = np.array([d.box for d, _ in kept]).reshape(-1, 4)
    boxes_work = geometry.boxes(boxes_net, Frame.NETWORK, Frame.WORKING)
    return [
        Candidate(b[:2] + b[2:] / 2, b[2:], score, d.embedding)
        for b, (d, score) in zip(boxes_work, kept, strict=True)
    ]


class DetectorStage(Protocol):
    """Stage C: ``[L, R, D]`` (3, H, W) -> detections in NETWORK px."""

    def __call__(self, channels: np.ndarray) -> list[Detection]: ...


DETECTOR_MODES = ("temporal", "plain", "fused")
DEFAULT_DETECTOR_MODE = "temporal"


def stage_b_of(detector) -> str:
    """Stage B's warp a Stage C runs with (:attr:`emts.detector.Detector.stage_b_warp`; the
    paper's for one that says none, and for no detector)."""
    return getattr(detector, "stage_b_warp", None) or "network"


def residual_baseline_of(detector) -> int:
    """The frames R spans for a Stage C (:attr:`emts.detector.Detector.residual_baseline`;
    1, eq. 2's, for one that says none, and for no detector)."""
    return int(getattr(detector, "residual_baseline", None) or 1)


def stage_b_config(detector, override: ChannelConfig | None = None) -> ChannelConfig:
    """Stage B's parameters for ``detector``: ``override`` where given (a command line's
    ``--stage-b paper|working``), else the defaults with the detector's own warp; R spans
    the frames the detector was trained with either way (a property of its weights)."""
    config = override if override is not None else ChannelConfig(warp_at=stage_b_of(detector))
    baseline = residual_baseline_of(detector)
    if config.residual_baseline == baseline:
        return config
    return dataclasses.replace(config, residual_baseline=baseline)


def cached_by_sets(network_size: tuple[int, int], config: ChannelConfig) -> bool:
    """Whether a stored clip set's cached channels are Stage B's at ``network_size`` with
    ``config`` (the sets cache the paper's 256x192, warp and eq. 2's R); else Stages A and B
    run again (:func:`channels_at`)."""
    paper_stage_b = config.warp_at == "network" and config.residual_baseline == 1
    return tuple(network_size) == NETWORK_SIZE and paper_stage_b


def channel_key(detector) -> tuple:
    """What a Stage C's channels depend on: its network size (w, h) for the paper's warp and
    R, (w, h, warp) for another warp, (w, h, warp, n) for an R over n > 1 frames (keys of the
    channels an evaluation computes per detector)."""
    size, warp = network_size_of(detector), stage_b_of(detector)
    baseline = residual_baseline_of(detector)
    if baseline > 1:
        return (*size, warp, baseline)
    return size if warp == "network" else (*size, warp)


def key_warp(key: tuple) -> str:
    """Stage B's warp of a channel key (:func:`channel_key`)."""
    return key[2] if len(key) > 2 else "network"


def key_config(key: tuple) -> ChannelConfig:
    """Stage B's parameters of a channel key (:func:`channel_key`)."""
    baseline = key[3] if len(key) > 3 else 1
    return ChannelConfig(warp_at=key_warp(key), residual_baseline=baseline)


def network_size_of(detector) -> tuple[int, int]:
    """The NETWORK frame size Stage B must feed ``detector`` (the paper's 256x192 for None)."""
    return tuple(getattr(detector, "network_size", NETWORK_SIZE))


def check_detector_mode(mode: str) -> str:
    if mode not in DETECTOR_MODES:
        raise BadInputError(f"detector mode {mode!r}: expected one of {', '.join(DETECTOR_MODES)}")
    return mode


def detector_stage(detector, mode: str = DEFAULT_DETECTOR_MODE, coarse_pass: bool = True):
    """Stage C for ``mode``: ``temporal`` (default) the network with its scores averaged
    over time in stabilized coordinates (:class:`emts.temporal.TemporalDetector`; with
    ``coarse_pass``, a model run at twice the size it was trained at runs at that size too,
    for people too tall for the finer pass), ``plain`` the network alone, frame by frame (the
    paper's), ``fused`` the network scoring compensated-difference blobs at 640x512
    (:class:`emts.fusion.FusedDetector`)."""
    check_detector_mode(mode)
    if mode == "fused":
        return FusedDetector(detector)
    if mode == "temporal":
        return TemporalDetector(detector, coarse=AUTO if coarse_pass else None)
    return detector


def shipped_detector(
    variant: str = DEFAULT,
    precision: str = "fp32",
    threads: int = 2,
    backend: str = "onnxruntime",
    fp32_fallback: bool = False,
    **options,
):
    """The shipped detector ``variant`` (``default`` or ``thermal``) for ``precision`` and
    ``backend``; ``options`` go to :class:`emts.detector.Detector` (``threshold``,
    ``network_size``). With ``fp32_fallback`` a variant shipped without that precision's file
    (the thermal model has no int8) runs in fp32, with a warning; else that is an error."""
    from emts.detector import Detector
    from emts.precision import model_path

    name = "" if variant == DEFAULT else variant
    try:
        path = model_path("detector", precision, threads, backend, name)
    except BadInputError as error:
        if not (fp32_fallback and name) or precision == "fp32":
            raise
        log.warning("%s; running the %s detector in fp32", error, variant)
        path = model_path("detector", "fp32", threads, backend, name)
    return Detector(path, threads=threads, **options)


def shipped_stage(
    model: str = AUTO,
    mode: str = DEFAULT_DETECTOR_MODE,
    precision: str = "fp32",
    threads: int = 2,
    backend: str = "onnxruntime",
    coarse_pass: bool = True,
    **options,
):
    """Stage C from the shipped detectors: ``model`` ``auto`` (a
    :class:`emts.modality.DetectorChoice`: the thermal model for frames without colour, the
    default model for colour, the thermal one in fp32 where its ``precision`` is not
    shipped), ``default`` or ``thermal``; ``mode`` and ``coarse_pass`` as
    :func:`detector_stage`; ``options`` as :func:`shipped_detector`."""
    if model not in MODEL_CHOICES:
        raise BadInputError(f"model {model!r}: expected one of {', '.join(MODEL_CHOICES)}")
    check_detector_mode(mode)  # one line now, not at the first frame
    from emts.precision import check_backend, check_precision

    check_precision(precision)
    if check_backend(backend) == "litert":
        from emts.litert import require_litert

        require_litert()

    def make(variant: str):
        detector = shipped_detector(
            variant, precision, threads, backend, fp32_fallback=model == AUTO, **options
        )
        return detector_stage(detector, mode, coarse_pass)

    return DetectorChoice(make) if model == AUTO else make(model)


class VerifierModel(Protocol):
    """Stage E's model: a window of per-frame descriptors -> P(human motion)."""

    ready: bool
    fps: float  # the stream's frame rate (descriptors are rescaled to 30 fps)

    def observe(self, channels: np.ndarray, box: np.ndarray) -> None: ...

    def probability(self) -> float | None: ...

    def reset(self) -> None: ...


@dataclass(frozen=True)
class Target:
    """The locked target in the input's pixels.

    Attributes:
        box: ``[x, y, w, h]``, input px, inside the image.
        score: detector score of the associated detection (None when none was associated).
        p_human: the verifier's last P(human motion) for this track, None until known.
        verified: the verifier accepted this track at its last classification.
        measured_by: ``"detection"``, ``"appearance"``, ``"both"``, ``"relock"`` or None
            (coasting on the Kalman prediction).
    """

    box: np.ndarray
    score: float | None
    p_human: float | None
    verified: bool = False
    measured_by: str | None = None


@dataclass(frozen=True)
class FrameResult:
    """Everything the pipeline says about one frame (boxes in input pixels).

    Attributes:
        index: frame number in the stream.
        mode: ``"search"``, ``"locked"`` or ``"reacquire"`` (a provisional auto-lock that the
            verifier has not accepted yet is reported as ``"search"``, the tracker's own
            re-lock of an auto-lock as ``"reacquire"`` until the verifier accepts it).
        target: the locked target, or None in search mode.
        verified: True once the verifier has accepted the current lock.
        detections: ``[(box, score)]`` of Stage C above the score threshold.
        ego_motion: Stage A's estimate; ``motion_input`` is ``M_t`` in input pixels.
        motion_input: 2x3 ``M_t`` in input pixels (frame t-1 -> t).
        ms: milliseconds per stage ``A``-``E``.
        channels: the (3, H, W) ``[L, R, D]`` stack at the network size (for drawing).
        event: ``"lock"`` (with ``lock_source``), ``"relock"`` or ``"lost"`` on the frame where
            that happened, else None.
        lock_source: how the current lock was made (``"tap:detection"``, ``"tap:blob"``,
            ``"tap:box"``, ``"tap:default"``, ``"auto"``), None in search.
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
    event: str | None = None
    lock_source: str | None = None


class Pipeline:
    """Stages A-E on the multi-rate schedule of §3.7: A-D every frame, E every 8th frame.

    Each frame is a straight sequence: A (ego-motion) -> B (channels) -> C (detections) ->
    lock acquisition (tap / auto-lock, :mod:`emts.acquisition`) -> D (tracker, which applies a
    lock after the frame's camera motion) -> E (verifier). The stages hold their own state;
    what one stage tells another travels as an argument.

    Args:
        detector: Stage C, or a :class:`emts.modality.DetectorChoice` (picked on the first
            frame with content, and again after :meth:`reset`); None: no detections.
        verifier: Stage E (default: the shipped model); None disables verification.
        tracker_config / verifier_config / acquisition_config: stage parameters.
        auto_lock: lock on its own (§6.7) when no operator tap is given.
        threads: worker threads for OpenCV and onnxruntime.
        box_fit: Stage C's colour evidence (:mod:`emts.boxfit`; not in the paper): on colour
            frames its boxes fitted to the person's own pixels, scored up where they fit and
            move, down where they do not move;
            None keeps the network's boxes and scores.
        channel_config: Stage B's parameters for every detector (default: each detector's
            own warp, :attr:`emts.detector.Detector.stage_b_warp` -- the paper's for the
            default model, ``"working"`` for the thermal one); e.g.
            ``ChannelConfig(warp_at="working")`` with detectors fed
            ``WORKING_WARP_RESIDUAL_REFERENCE``.

    Example:
        >>> pipeline = Pipeline.default()                      # doctest: +SKIP
        >>> for frame in frames:                                # doctest: +SKIP
        ...     result = pipeline.step(frame)
        ...     if result.target is not None:
        ...         print(result.index, result.mode, result.target.box)
    """

    def __init__(
        self,
        detector: DetectorStage | None = None,
        verifier: VerifierModel | None = None,
        tracker_config: TrackerConfig | None = None,
        verifier_config: VerifierConfig | None = None,
        auto_lock: bool = True,
        threads: int = 2,
        acquisition_config: AcquisitionConfig | None = None,
        box_fit: BoxFitConfig | None = DEFAULT_BOX_FIT,
        channel_config: ChannelConfig | None = None,
    ) -> None:
        cv2.setNumThreads(threads)
        self.box_fit = box_fit
        self._choice = detector if isinstance(detector, DetectorChoice) else None
        self.detector = None if self._choice is not None else detector
        look_ahead(self.detector, box_fit)
        self._channel_config = channel_config  # None: each detector's own Stage B warp
        self.front = MotionFrontEnd(
            channel_config=stage_b_config(self.detector, channel_config),
            network_size=network_size_of(self.detector),
        )
        self.verifier = verifier
        self.acquisition = LockAcquisition(auto_lock, verifier is not None, acquisition_config)
        self.tracker = TargetTracker(tracker_config or TrackerConfig())
        self.verification = VerificationSchedule(verifier, verifier_config or VerifierConfig())
        self.reacquisitions = 0
        self._release = False  # an unlock() waiting for the next step
        self._previous_working: np.ndarray | None = None  # frame t-1 for a "working" Stage E

    @classmethod
    def default(
        cls,
        threads: int = 2,
        auto_lock: bool = True,
        precision: str = "fp32",
        detector_mode: str = DEFAULT_DETECTOR_MODE,
        backend: str = "onnxruntime",
        model: str = AUTO,
        coarse_pass: bool = True,
    ) -> Pipeline:
        """The pipeline with the models shipped in the package; ``model`` ``auto`` (the
        thermal detector for frames without colour, the default one for colour:
        :mod:`emts.modality`), ``default`` or ``thermal``; ``precision`` ``fp32``,
        ``int8`` or ``auto`` (the faster here, measured once: :mod:`emts.precision`);
        ``detector_mode`` ``temporal`` (the network, scores averaged over time:
        :mod:`emts.temporal`), ``plain`` (the network, frame by frame) or ``fused``
        (:mod:`emts.fusion`);
        ``backend`` ``onnxruntime`` (.onnx) or ``litert`` (.tflite through LiteRT/XNNPACK,
        extra ``[litert]``: :mod:`emts.litert`); ``coarse_pass`` as :func:`detector_stage` (the
        thermal model's second pass at 256x192, for people 50 px tall or more)."""
        from emts.precision import model_path
        from emts.verifier import Verifier, default_model_path

        stage = shipped_stage(model, detector_mode, precision, threads, backend, coarse_pass)
        verifier = None
        if default_model_path().is_file():
            verifier = Verifier(model_path("verifier", precision, 1, backend), threads=1)
        else:
            log.warning("no verifier model shipped: running without Stage E")
        return cls(stage, verifier, auto_lock=auto_lock, threads=threads)

    @property
    def auto_lock(self) -> bool:
        return self.acquisition.auto_lock

    @property
    def fps(self) -> float | None:
        """The stream's frame rate as Stage E uses it (None without a verifier)."""
        return getattr(self.verifier, "fps", None)

    @fps.setter
    def fps(self, value: float) -> None:
        if not (isinstance(value, int | float) and np.isfinite(value) and value > 0):
            raise BadInputError(f"fps must be a number > 0, got {value!r}")
        if self.verifier is not None:
            self.verifier.fps = float(value)
        self.tracker.fps = float(value)

    def reset(self) -> None:
        """Forget everything: motion history, pending taps, lock, verifier window, counters."""
        self.front.reset()
        if self._choice is not None:
            self.detector = None  # chosen again on the next frame with content
        if hasattr(self.detector, "reset"):  # the stateful Stage C modes
            self.detector.reset()
        self.acquisition.reset()
        self.tracker.reset()
        self.verification.reset()
        self.reacquisitions = 0
        self._release = False
        self._previous_working = None

    def lock(self, x: float, y: float, box=None, on_last_frame: bool = False) -> None:
        """Operator tap at input pixel (x, y), applied with the next :meth:`step`.

        The lock is made at once on the person under the point (see :mod:`emts.acquisition`),
        whether or not the detector sees them.

        Args:
            x, y: the tapped point, input px, on the next frame given to :meth:`step` (or on
                the frame last processed, with ``on_last_frame=True``: a live display).
            box: optional ``[x, y, w, h]`` around the person (input px): lock on exactly it.
            on_last_frame: carry the tap by the next frame's camera motion.

        Raises:
            BadInputError: the point or box is not finite numbers.
        """
        self.acquisition.request(Tap.make(x, y, box, on_last_frame))

    def unlock(self) -> None:
        """Drop the lock (and any pending tap) from the next :meth:`step` on."""
        self.acquisition.reset()
        self._release = True

    @property
    def chosen_model(self) -> str | None:
        """The shipped detector a ``DetectorChoice`` picked (``default`` / ``thermal``), or
        None (not chosen yet, or no choice given)."""
        if self._choice is None or self.detector is None:
            return None
        return self._choice.chosen

    def _choose(self, frame: np.ndarray) -> None:
        stage = self._choice.stage_for(validate_frame(frame))
        if stage is None:
            return  # a uniform frame: Stages A-B run, Stage C waits for content
        self.detector = stage
        look_ahead(stage, self.box_fit)
        config = stage_b_config(stage, self._channel_config)
        self.front.use_network_size(
            network_size_of(stage), config.warp_at, config.residual_baseline
        )

    def step(self, frame: np.ndarray) -> FrameResult:
        """Run one frame through Stages A-E."""
        start = time.perf_counter()
        if self.detector is None and self._choice is not None:
            self._choose(frame)
        front = self.front.step(frame)  # A, B
        ms = dict(front.ms)
        geometry = front.geometry
        t = time.perf_counter()
        if hasattr(self.detector, "on_frame"):  # modes "temporal", "fused": need A's output
            detections = self.detector.on_frame(front)
        else:
            detections = self.detector(front.channels) if self.detector is not None else []
        # Stage C's output (and what acquisition chooses from): detections whose score passes
        # tau_s after the colour evidence (on colour frames, boxes fitted to the person's own
        # pixels, scored up where they fit and move, down where they do not; emts.boxfit). A locked
        # track is fed every *sighting* instead, as the network boxes it -- this frame's
        # evidence alone (the temporal mode's memory would delay a person reappearing from
        # behind a tree, and the track has its own memory: the Kalman filter and the
        # appearance template). Fitted sightings cost the tap runs on uav123-person12 (one of
        # 24 fell to 0.22), hence the network's boxes there.
        threshold = getattr(self.detector, "threshold", 0.0)
        decoded, passed = detections, [d for d in detections if d.score >= threshold]
        appearance = appearance_view(frame, front)
        detections = fit_detections(
            decoded, appearance, geometry, self.box_fit, threshold, front.channels
        )
        ms["C"] = (time.perf_counter() - t) * 1e3

        t = time.perf_counter()
        boxes_net = np.array([d.box for d in detections]).reshape(-1, 4)
        candidates = candidates_of(detections, geometry)
        if any(d.raw_score is not None for d in decoded):
            sightings = candidates_of(decoded, geometry, threshold, sightings=True)
        else:
            sightings = candidates_of(passed, geometry)
        # a pending tap's lock depends on whether the camera sees colour (read only then); a
        # tap's lock waiting for a detection needs the track's box (asked only then)
        tapped = self.acquisition.pending
        colour = tapped and frame_modality(frame) == COLOUR
        waiting = self.acquisition.waiting and self.tracker.locked
        decision = self.acquisition.step(
            geometry,
            front.working,
            front.motion.matrix,
            candidates,
            self.tracker.mode,
            self.verification.classified,
            colour,
            self.tracker.image_box() if waiting else None,
            self.verification.travel,
        )
        release = decision.release or self._release or front.size_changed
        if front.size_changed and self.tracker.locked:
            log.warning("frame %d: frame size changed; lock dropped", front.index)
        self._release = False
        lock = decision.lock
        if lock is not None:  # the tracker's merge hold is for frames without colour
            if not tapped:  # read above for a tap's lock; an auto-lock or a waited one: now
                colour = frame_modality(frame) == COLOUR
            lock = dataclasses.replace(lock, colour=colour)
        state = self.tracker.update(
            front.motion.matrix,
            sightings,
            verdict=self.verification.verdict_for_tracker(),
            lock=lock,
            release=release,
            view=appearance,
            content=geometry.content_box,
        )
        self.reacquisitions += state.event == "lost"
        self.acquisition.track_event(state.event)
        ms["D"] = (time.perf_counter() - t) * 1e3

        t = time.perf_counter()
        box_net = None
        if state.centre is not None:
            box_work = np.array([*(state.centre - state.size / 2), *state.size])
            box_net = geometry.boxes([box_work], Frame.WORKING, Frame.NETWORK)[0]
        previous = None if front.size_changed else self._previous_working
        view = FrameView(front.channels, front.working, previous, front.motion.matrix, geometry)
        # with the opt-in still veto, an accepted auto-lock whose track stands still is vetoed
        # (an auto-lock's acceptance asks for the walk in LockAcquisition either way)
        config = self.acquisition.config
        veto_still = self.acquisition.last_source == "auto" and config.autolock_still_veto
        min_travel = config.autolock_min_travel if veto_still else None
        self.verification.step(view, box_net, state.event is not None, min_travel)
        if getattr(self.verifier, "resolution", "network") == "working":
            self._previous_working = front.working.copy()
        ms["E"] = (time.perf_counter() - t) * 1e3

        provisional = self.acquisition.provisional
        target = None
        verified = self.verification.verified and not provisional
        if state.centre is not None and not provisional:
            box_work = np.array([*(state.centre - state.size / 2), *state.size])
            box_input = geometry.boxes([box_work], Frame.WORKING, Frame.INPUT)[0]
            target = Target(
                _clamp_box(box_input, geometry.input_size),
                state.score,
                self.verification.p_human,
                verified,
                state.measured_by,
            )
        boxes_input = geometry.boxes(boxes_net, Frame.NETWORK, Frame.INPUT)
        ms["total"] = (time.perf_counter() - start) * 1e3
        return FrameResult(
            index=front.index,
            mode=("reacquire" if self.acquisition.relocking else "search")
            if provisional
            else state.mode,
            target=target,
            verified=verified,
            detections=[(b, d.score) for b, d in zip(boxes_input, detections, strict=True)],
            ego_motion=front.motion,
            motion_input=front.motion_in_input(),
            ms=ms,
            channels=front.channels,
            event=None if provisional else state.event,
            lock_source=self.acquisition.last_source if state.mode != "search" else None,
        )


def appearance_view(frame: np.ndarray, front: FrontEndResult) -> AppearanceView:
    """Colour input (uint8 BGR) is sampled directly: colour tells a person from the shadow
    they walk into, where gray does not. Anything else uses the gray working frame."""
    if frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3:
        matrix = front.geometry.matrix(Frame.WORKING, Frame.INPUT)
        return AppearanceView(frame, matrix, front.working)
    return AppearanceView.of(front.working)


def _clamp_box(box: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``[x, y, w, h]`` cut to the image ``size`` (keeps at least 1 px of width and height)."""
    x, y, w, h = (float(v) for v in box)  # (builtin min/max: np.clip on scalars is ~10x slower)
    x0 = min(max(x, 0.0), size[0] - 1.0)
    y0 = min(max(y, 0.0), size[1] - 1.0)
    x1 = min(max(x + w, x0 + 1.0), float(size[0]))
    y1 = min(max(y + h, y0 + 1.0), float(size[1]))
    return np.array([x0, y0, x1 - x0, y1 - y0])
