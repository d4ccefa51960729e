"""Composes the stages on the per-frame schedule of §3 and times each of them.

:class:`Pipeline` runs the straight sequence A -> B -> C -> lock acquisition -> D -> E on every
frame (E classifies every 8th frame); :class:`FrameResult` is what it says about a frame.
Stages A and B run in :class:`emts.front_end.MotionFrontEnd`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import cv2
import numpy as np

from emts.config import (
    AcquisitionConfig,
    BoxFitConfig,
    ChannelConfig,
    TrackerConfig,
    VerifierConfig,
)
from emts.errors import BadInputError
from emts.front_end import FrontEndResult, MotionFrontEnd
from emts.geometry import Frame, FrameGeometry
from emts.modality import AUTO, COLOUR, frame_modality
from emts.preprocess import validate_frame
from emts.stages.a_ego_motion import EgoMotion
from emts.stages.acquisition import LockAcquisition, Tap
from emts.stages.appearance import AppearanceView
from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT
from emts.stages.c_detect.stage import (
    DEFAULT_DETECTOR_MODE,
    DetectionStage,
    DetectorMode,
    shipped_stage,
)
from emts.stages.d_track.tracker import TargetTracker
from emts.stages.d_track.types import Candidate
from emts.stages.e_verify import FrameView, VerificationSchedule

log = logging.getLogger("emts")


def candidates_of(
    detections, geometry: FrameGeometry, threshold: float = 0.0, sightings: bool = False
) -> list[Candidate]:
    """Stage D's candidates (WORKING px) of NETWORK-px detections whose score reaches
    ``threshold``; with ``sightings``, scored (and kept) by this frame's evidence alone
    (:attr:`emts.stages.c_detect.detector.Detection.sighting`: what a locked track is fed)."""
    kept = [(d, d.sighting if sightings else d.score) for d in detections]
    kept = [(d, score) for d, score in kept if score >= threshold]
    boxes_net = np.array([d.box for d, _ in kept]).reshape(-1, 4)
    boxes_work = geometry.boxes(boxes_net, Frame.NETWORK, Frame.WORKING)
    return [
        Candidate(b[:2] + b[2:] / 2, b[2:], score, d.embedding)
        for b, (d, score) in zip(boxes_work, kept, strict=True)
    ]


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
        detections: ``[(box, score)]`` of Stage C above the score threshold. While a lock
            is held and no tap waits to be applied, the network's boxes and scores
            (Stage C's colour evidence serves choosing a target and is skipped there:
            ~1 ms a 1280x720 frame); ``Pipeline(evidence_while_locked=True)`` keeps it.
        ego_motion: Stage A's estimate; ``motion_input`` is ``M_t`` in input pixels.
        motion_input: 2x3 ``M_t`` in input pixels (frame t-1 -> t).
        ms: milliseconds per stage ``A``-``E``.
        channels: the (3, H, W) ``[L, R, D]`` stack at the network size (for drawing).
        event: what changed on this frame, as reported (:func:`reported_event`): ``"lock"``
            (a lock is reported: a tap, a drag, an auto-lock the verifier accepted; with
            ``lock_source``), ``"relock"`` (``reacquire`` -> ``locked``, or the lock moved onto
            a new origin), ``"lost"`` (``locked`` -> ``reacquire``), ``"dropped"`` (reacquire
            gave up, a re-lock was rejected or the frame size changed: -> ``search``),
            ``"unlock"`` (:meth:`Pipeline.unlock`: -> ``search``) or ``"no_target"`` (an
            operator's tap found neither a detection nor a region standing out from the
            ground under the point, on its frame nor on the ``tap_retry_frames`` after it --
            said on the last: no lock was made, the mode and a lock already held are
            unchanged; said only where none of the others is, since those tell of the mode
            -- ``tap`` says it either way); else None.
        lock_source: how the current lock was made (``"tap:detection"``, ``"tap:blob"``,
            ``"tap:faint"``, ``"tap:box"``, ``"auto"``); None while ``mode`` is ``search``.
        unseen: while ``mode`` is ``reacquire``, the frames since the person was last seen
            (the tracker gives up at ``TrackerConfig.give_up_after``); else None.
        tap: what became of an operator tap (:meth:`Pipeline.lock`) on this frame:
            ``"lock"`` (locked on it), ``"no_target"`` (refused: nothing there, on its frame
            and the ``AcquisitionConfig.tap_retry_frames`` after it) or ``"waiting"`` (nothing
            under the point yet: tried again on the next frame); None when no tap was
            decided on this frame. For whoever sent the tap and waits on its outcome (the
            ground station's page, a MAVLink ``COMMAND_ACK``): ``"lock"`` or ``"no_target"``.
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
    unseen: int | None = None
    tap: str | None = None


def _faint_sightings(found, geometry, floor: float) -> list[Candidate] | None:
    """Stage C's sightings of this frame scored from ``floor`` up to its threshold (the
    detector's faint ones), as candidates; None where ``floor`` is 0 or not below the
    threshold, or the detector gives no raw scores."""
    if not 0 < floor < found.threshold:
        return None
    if not any(d.raw_score is not None for d in found.decoded):
        return None
    return [
        k
        for k in candidates_of(found.decoded, geometry, floor, sightings=True)
        if k.score < found.threshold
    ]


class Pipeline:
    """Stages A-E on the multi-rate schedule of §3.7: A-D every frame, E every 8th frame.

    Each frame is a straight sequence: A (ego-motion) -> B (channels) -> C (detections) -> lock
    acquisition (tap / auto-lock, :mod:`emts.stages.acquisition`) -> D (tracker, which applies a
    lock after the frame's camera motion) -> E (verifier). The stages hold their own state; what one
    stage tells another travels as an argument.

    Args:
        detector: Stage C, or a :class:`emts.modality.DetectorChoice` (picked on the first
            frame with content, and again after :meth:`reset`); None: no detections.
        verifier: Stage E (default: the shipped model); None disables verification.
        tracker_config: Stage D's parameters.
        verifier_config: Stage E's parameters.
        auto_lock: lock on its own (§6.7) when no operator tap is given.
        threads: worker threads for OpenCV and onnxruntime.
        box_fit: Stage C's colour evidence (:mod:`emts.stages.c_detect.boxfit`; not in the
            paper): on colour frames its boxes fitted to the person's own pixels, scored up
            where they fit and move, down where they do not move; None keeps the network's
            boxes and scores.
        channel_config: Stage B's parameters for every detector (default: each detector's
            own warp, :attr:`emts.stages.c_detect.detector.Detector.stage_b_warp` -- the paper's
            for the
            default model, ``"working"`` for the thermal one); e.g.
            ``ChannelConfig(warp_at="working")`` with detectors fed
            ``WORKING_WARP_RESIDUAL_REFERENCE``.
        evidence_while_locked: run Stage C's colour evidence on every frame (False: not
            while the lock is held with no tap waiting -- nothing chooses from the
            detections then: the tracker measures with the network's sightings, and taps
            and auto-locks are not in play; only ``FrameResult.detections`` differ).
        network_ahead: :meth:`front_ahead` runs Stage C's networks too, with Stages A-B
            (the same detections), unless told otherwise frame by frame; False: Stage C runs
            them. ``emts track`` decides frame by frame: there while frames wait for Stages
            C-E (on 2 cores, person12 at 1280x720 as a stream: colour 0.91x the time a frame;
            in gray always there cost 1.04-1.14x, the networks' own threads contending).

    Example:
        >>> pipeline = Pipeline.default()                      # doctest: +SKIP
        >>> for frame in frames:                                # doctest: +SKIP
        ...     result = pipeline.step(frame)
        ...     if result.target is not None:
        ...         print(result.index, result.mode, result.target.box)
    """

    def __init__(
        self,
        detector: DetectorMode | None = None,
        verifier: VerifierModel | None = None,
        tracker_config: TrackerConfig | None = None,
        verifier_config: VerifierConfig | None = None,
        auto_lock: bool = True,
        threads: int = 2,
        acquisition_config: AcquisitionConfig | None = None,
        box_fit: BoxFitConfig | None = DEFAULT_BOX_FIT,
        channel_config: ChannelConfig | None = None,
        evidence_while_locked: bool = False,
        network_ahead: bool = False,
    ) -> None:
        cv2.setNumThreads(threads)
        self.evidence_while_locked = evidence_while_locked
        self.network_ahead = network_ahead
        self.detection = DetectionStage(detector, box_fit)
        self._channel_config = channel_config  # None: each detector's own Stage B warp
        self.front = MotionFrontEnd(
            channel_config=self.detection.channel_config(channel_config),
            network_size=self.detection.network_size,
        )
        self.verifier = verifier
        self.acquisition = LockAcquisition(auto_lock, verifier is not None, acquisition_config)
        self.tracker = TargetTracker(tracker_config or TrackerConfig())
        self.verification = VerificationSchedule(verifier, verifier_config or VerifierConfig())
        self.reacquisitions = 0
        self._release = False  # an unlock() waiting for the next step
        self._reported = "search"  # the mode the last FrameResult reported
        # does the stream carry colour (:meth:`_colour_stream`)? Gray or thermal video decoded
        # into three channels does not
        self._stream_colour: bool | None = None
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
        """The pipeline with the models shipped in the package; ``model`` ``auto`` (the thermal
        detector for frames without colour, the default one for colour: :mod:`emts.modality`),
        ``default`` or ``thermal``; ``precision`` ``fp32``, ``int8`` or ``auto`` (the faster here,
        measured once: :mod:`emts.precision`); ``detector_mode`` ``temporal`` (the network, scores
        averaged over time: :mod:`emts.stages.c_detect.temporal`), ``plain`` (the network, frame by
        frame) or ``fused`` (:mod:`emts.stages.c_detect.fusion`); ``backend`` ``onnxruntime``
        (.onnx) or ``litert`` (.tflite through LiteRT/XNNPACK, extra ``[litert]``:
        :mod:`emts.litert`); ``coarse_pass`` as :func:`detector_stage` (the thermal model's second
        pass at 256x192, for people 50 px tall or more)."""
        from emts.precision import model_path
        from emts.stages.e_verify import Verifier, default_model_path

        stage = shipped_stage(model, detector_mode, precision, threads, backend, coarse_pass)
        verifier = None
        if default_model_path().is_file():
            verifier = Verifier(model_path("verifier", precision, 1, backend), threads=1)
        else:
            log.warning("no verifier model shipped: running without Stage E")
        return cls(stage, verifier, auto_lock=auto_lock, threads=threads)

    @property
    def detector(self):
        """Stage C's model running now (None: none, or a choice not made yet)."""
        return self.detection.model

    @property
    def box_fit(self) -> BoxFitConfig | None:
        return self.detection.box_fit

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
        self.detection.reset()  # a choice is made again on the next frame with content
        self.acquisition.reset()
        self.tracker.reset()
        self.verification.reset()
        self.reacquisitions = 0
        self._release = False
        self._reported = "search"
        self._previous_working = None
        self._stream_colour = None

    def lock(
        self,
        x: float,
        y: float,
        box: Sequence[float] | None = None,
        on_last_frame: bool = False,
    ) -> None:
        """Operator tap at input pixel (x, y), applied with the next :meth:`step`.

        The lock is made at once on the person under the point (see
        :mod:`emts.stages.acquisition`), whether or not the detector sees them: the
        detection under it, else the region under it that stands out from the local ground.
        Where there is neither, the tap is tried again on the next
        ``AcquisitionConfig.tap_retry_frames`` frames, the point followed by its own optical
        flow (:attr:`FrameResult.tap` ``"waiting"``; the first frame of a stream has no motion
        for the detector). Where none of them finds
        anything either (a tap on empty ground), no lock is made: the last one's
        :attr:`FrameResult.tap` (and, unless something else happened, its ``event``) is
        ``"no_target"``, and a lock already held is kept. A ``box`` always locks at once.

        Args:
            x: the tapped point's x, input px, on the next frame given to :meth:`step` (or on
                the frame last processed, with ``on_last_frame=True``: a live display).
            y: the tapped point's y, likewise.
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
        return self.detection.chosen

    def _choose(self, frame: np.ndarray) -> None:
        if not self.detection.choose(validate_frame(frame)):
            return  # a uniform frame: Stages A-B run, Stage C waits for content
        config = self.detection.channel_config(self._channel_config)
        self.front.use_network_size(
            self.detection.network_size, config.warp_at, config.residual_baseline
        )

    def _colour_stream(self, frame: np.ndarray, front: FrontEndResult) -> bool | None:
        """Does the stream carry colour (:func:`frame_modality` of its first frame with
        content, again after a reset or a size change; None: no content seen yet)? The
        appearance view, a tap's lock and an auto-lock all read this one decision."""
        if self._stream_colour is None or front.size_changed:
            modality = frame_modality(frame)
            self._stream_colour = None if modality is None else modality == COLOUR
        return self._stream_colour

    def _gray_view(self, front: FrontEndResult) -> AppearanceView | None:
        """The gray working frame as the appearance view of a stream without colour (None: the
        view Stage C makes of the frame itself). Gray and thermal video decoded as BGR carries
        its codec's chroma noise (person12 in gray through mp4 at 1280x720: a channel 1-3
        levels off its neighbours near edges), which the colour checks read as a person's
        colours: the lock was lost at frame 8 on colours of noise, and held 22 of 541 frames;
        as gray frames the same video holds frames 0-200. (One-channel and uint16 input is
        looked at in the gray working frame anyway.)"""
        return AppearanceView.of(front.working) if self._stream_colour is False else None

    def _evidence_wanted(self) -> bool:
        """Whether this frame's detections need Stage C's colour evidence: unless the lock is
        held (the tracker's mode after the last frame, as :class:`LockAcquisition` sees it)
        with no tap to apply, no tap's lock waiting for a detection and no provisional
        auto-lock -- then nothing chooses from ``found.shown`` (Stage D measures with the
        network's sightings)."""
        if self.evidence_while_locked or self.tracker.mode != "locked":
            return True
        acquisition = self.acquisition
        return acquisition.pending or acquisition.waiting or acquisition.provisional

    @property
    def can_run_ahead(self) -> bool:
        """Whether Stages A-B may run ahead of C-E (:meth:`front_ahead`): the detector, and
        with it the channels' size, is chosen (or none is to be chosen)."""
        return self.detection.model is not None or self.detection.choice is None

    def front_ahead(
        self, frame: np.ndarray, first: bool = False, network: bool | None = None
    ) -> FrontEndResult:
        """Stages A-B of ``frame`` (and Stage C's networks on it, :attr:`network_ahead`), for
        :meth:`step` ``(frame, front=...)`` later: e.g. in another thread while this one runs
        Stages C-E of the frames before (they touch no state of A-B, nor the networks any of
        theirs). Every frame goes through here, in the stream's order, once
        :attr:`can_run_ahead` -- or, with ``first``, for the stream's first frame before
        :meth:`step` has seen any (the detector is then chosen on it, as :meth:`step` would).
        Raises what :meth:`step` raises for a bad frame (and then leaves A-B as they were).
        ``network``: run Stage C's networks here for this frame (None: :attr:`network_ahead`)."""
        if first and not self.can_run_ahead:
            self._choose(frame)
        front = self.front.step(frame)
        model = self.detection.model
        network = self.network_ahead if network is None else network
        if not network or not hasattr(model, "run_ahead"):
            return front
        # Stage C's networks too: they read nothing of C-E's state (the detections they give
        # are the same); the frame's Stage C time keeps their share
        start = time.perf_counter()
        outputs = model.run_ahead(front)
        ms = {**front.ms, "C": (time.perf_counter() - start) * 1e3}
        return dataclasses.replace(front, network=outputs, ms=ms)

    def step(self, frame: np.ndarray, front: FrontEndResult | None = None) -> FrameResult:
        """Run one frame through Stages A-E (``front``: its Stages A-B already run by
        :meth:`front_ahead`)."""
        start = time.perf_counter()
        ahead = front is not None
        if not ahead:
            if self.detection.model is None and self.detection.choice is not None:
                self._choose(frame)
            front = self.front.step(frame)  # A, B
        ms = {k: v for k, v in front.ms.items() if k != "C"}
        geometry = front.geometry
        t = time.perf_counter()
        self._colour_stream(frame, front)
        found = self.detection.step(  # C
            front, frame, self._gray_view(front), evidence=self._evidence_wanted()
        )
        # Stage C's output (and what acquisition chooses from): found.shown. A locked track is
        # fed every *sighting* instead, as the network boxes it -- this frame's evidence alone
        # (the temporal mode's memory would delay a person reappearing from behind a tree, and
        # the track has its own memory: the Kalman filter and the appearance template).
        # Fitted sightings cost the tap runs on uav123-person12 (one of 24 fell to 0.22),
        # hence the network's boxes there.
        detections, appearance = found.shown, found.view
        ms["C"] = (time.perf_counter() - t) * 1e3 + front.ms.get("C", 0.0)

        t = time.perf_counter()
        boxes_net = np.array([d.box for d in detections]).reshape(-1, 4)
        candidates = candidates_of(detections, geometry)
        if any(d.raw_score is not None for d in found.decoded):
            sightings = candidates_of(found.decoded, geometry, found.threshold, sightings=True)
        else:
            sightings = candidates_of(found.passed, geometry)
        faint = None
        if self.tracker.mode == "reacquire":
            faint = _faint_sightings(found, geometry, self.tracker.config.refind_faint)
        # a pending tap's lock depends on whether the camera sees colour; a tap's lock waiting
        # for a detection needs the track's box (asked only then); a tap with nothing else
        # under the finger may take a faint sighting there
        tapped = self.acquisition.pending
        tap_faint = None
        if tapped:
            tap_faint = _faint_sightings(found, geometry, self.acquisition.config.tap_faint)
        colour = tapped and self._stream_colour is True
        waiting = self.acquisition.waiting and self.tracker.locked
        source = self.acquisition.last_source
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
            tap_faint,
        )
        release = decision.release or self._release or front.size_changed
        if front.size_changed and self.tracker.locked:
            log.warning("frame %d: frame size changed; lock dropped", front.index)
        unlocked, self._release = self._release, False
        lock = decision.lock
        if lock is not None:  # the tracker's merge hold is for frames without colour
            lock = dataclasses.replace(lock, colour=self._stream_colour is True)
        state = self.tracker.update(
            front.motion.matrix,
            sightings,
            verdict=self.verification.verdict_for_tracker(),
            lock=lock,
            release=release,
            view=appearance,
            content=geometry.content_box,
            faint=faint,
        )
        if lock is not None and lock.moves and state.event != "lock":
            self.acquisition.last_source = source  # the tracker kept the tap's lock
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
            # the person's own box where the tracker measured it (colour frames)
            shown = state.reported_size
            box_work = np.array([*(state.centre - shown / 2), *shown])
            box_input = geometry.boxes([box_work], Frame.WORKING, Frame.INPUT)[0]
            target = Target(
                _clamp_box(box_input, geometry.input_size),
                state.score,
                self.verification.p_human,
                verified,
                state.measured_by,
            )
        boxes_input = geometry.boxes(boxes_net, Frame.NETWORK, Frame.INPUT)
        if provisional:  # an auto-lock (or its re-lock) the verifier has not accepted yet
            mode = "reacquire" if self.acquisition.relocking else "search"
        else:
            mode = state.mode
        event = reported_event(self._reported, mode, None if provisional else state.event, unlocked)
        if event is None and decision.refused is not None:  # the mode's own events come first
            event = decision.refused
        self._reported = mode
        tap = decision.tap

        ms["total"] = (time.perf_counter() - start) * 1e3
        if ahead:  # (A and B -- and Stage C's networks, where they did -- ran before this call)
            ms["total"] += front.ms["A"] + front.ms["B"] + front.ms.get("C", 0.0)
        return FrameResult(
            index=front.index,
            mode=mode,
            target=target,
            verified=verified,
            detections=[(b, d.score) for b, d in zip(boxes_input, detections, strict=True)],
            ego_motion=front.motion,
            motion_input=front.motion_in_input(),
            ms=ms,
            channels=front.channels,
            event=event,
            lock_source=self.acquisition.last_source if mode != "search" else None,
            unseen=state.misses if mode == "reacquire" else None,
            tap=tap,
        )


def reported_event(
    before: str, after: str, tracker_event: str | None, unlocked: bool = False
) -> str | None:
    """The event of a frame whose reported mode went from ``before`` to ``after``
    (``search`` / ``locked`` / ``reacquire``): what a user reading the modes needs told, so
    that every lock, loss, re-lock, give-up and unlock carries one.

    A refused tap (``"no_target"``, :attr:`FrameResult.event`) changes no mode and is not
    decided here: :meth:`Pipeline.step` reports it only on a frame where this gives None.

    Args:
        before: the mode the previous frame reported.
        after: the mode this frame reports.
        tracker_event: Stage D's own event this frame (:class:`emts.stages.d_track.types.
            TrackState`; None for a provisional lock): ``"lock"`` (a new lock, e.g. a tap over
            a lock) and ``"relock"`` (moved onto a new origin while locked) count even where
            the mode stays.
        unlocked: :meth:`Pipeline.unlock` dropped the lock on this frame.

    Example:
        >>> reported_event("search", "locked", None)  # an auto-lock the verifier accepted
        'lock'
        >>> reported_event("locked", "reacquire", "lost")
        'lost'
        >>> reported_event("reacquire", "search", None)  # reacquire gave up
        'dropped'
    """
    if after == "search":
        if before == "search":
            return None
        return "unlock" if unlocked else "dropped"
    if tracker_event == "lock" or before == "search":
        return "lock"
    if before == "reacquire" and after == "locked":
        return "relock"
    if before == "locked" and after == "reacquire":
        return "lost"
    return "relock" if tracker_event == "relock" else None


def _clamp_box(box: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``[x, y, w, h]`` cut to the image ``size`` (keeps at least 1 px of width and height)."""
    x, y, w, h = (float(v) for v in box)  # (builtin min/max: np.clip on scalars is ~10x slower)
    x0 = min(max(x, 0.0), size[0] - 1.0)
    y0 = min(max(y, 0.0), size[1] - 1.0)
    x1 = min(max(x + w, x0 + 1.0), float(size[0]))
    y1 = min(max(y + h, y0 + 1.0), float(size[1]))
    return np.array([x0, y0, x1 - x0, y1 - y0])
