"""Stage C as the pipeline and every job run it: :class:`DetectionStage` (one frame's Stages A-B
result -> :class:`Detections`), the runtime modes (``temporal``, ``plain``, ``fused``) around a
detector network, and the shipped detectors."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from emts.config import BoxFitConfig, ChannelConfig
from emts.errors import BadInputError
from emts.front_end import FrontEndResult, network_size_of, stage_b_config
from emts.modality import AUTO, DEFAULT, MODEL_CHOICES, DetectorChoice
from emts.stages.appearance import AppearanceView, appearance_view
from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT, fit_detections, look_ahead
from emts.stages.c_detect.detector import Detection
from emts.stages.c_detect.fusion import FusedDetector
from emts.stages.c_detect.temporal import TemporalDetector

log = logging.getLogger("emts")


class DetectorMode(Protocol):
    """A Stage C mode (:func:`detector_stage`): ``[L, R, D]`` (3, H, W) -> detections in
    NETWORK px; the ``temporal`` and ``fused`` modes also take a whole Stages A-B result
    (``on_frame``). :class:`DetectionStage` runs one on a stream."""

    def __call__(self, channels: np.ndarray) -> list[Detection]: ...


DETECTOR_MODES = ("temporal", "plain", "fused")
DEFAULT_DETECTOR_MODE = "temporal"


def check_detector_mode(mode: str) -> str:
    if mode not in DETECTOR_MODES:
        raise BadInputError(f"detector mode {mode!r}: expected one of {', '.join(DETECTOR_MODES)}")
    return mode


def detector_stage(detector, mode: str = DEFAULT_DETECTOR_MODE, coarse_pass: bool = True):
    """Stage C for ``mode``: ``temporal`` (default) the network with its scores averaged over time
    in stabilized coordinates (:class:`emts.stages.c_detect.temporal.TemporalDetector`; with
    ``coarse_pass``, a model run at twice the size it was trained at runs at that size too, for
    people too tall for the finer pass), ``plain`` the network alone, frame by frame (the paper's),
    ``fused`` the network scoring compensated-difference blobs at 640x512
    (:class:`emts.stages.c_detect.fusion.FusedDetector`)."""
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
    ``backend``; ``options`` go to :class:`emts.stages.c_detect.detector.Detector` (``threshold``,
    ``network_size``). With ``fp32_fallback`` a variant shipped without that precision's file
    (the thermal model has no int8) runs in fp32, with a warning; else that is an error."""
    from emts.precision import model_path
    from emts.stages.c_detect.detector import Detector

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


@dataclass(frozen=True)
class Detections:
    """Stage C's word on one frame (NETWORK px, best first).

    Attributes:
        shown: the detections that reach ``threshold`` after the colour evidence (on colour
            frames, boxes fitted to the person's own pixels, scored up where they fit and
            move, down where they do not: :mod:`emts.stages.c_detect.boxfit`): Stage C's
            output, what lock acquisition chooses from and ``emts detect`` writes.
        decoded: everything the mode decoded (the temporal mode also decodes the peaks under
            ``threshold`` that the colour evidence may lift, and scores each by this frame's
            evidence alone: :attr:`emts.stages.c_detect.detector.Detection.sighting`).
        passed: the decoded detections that reach ``threshold`` as decoded.
        threshold: tau_s, the score a detection must reach.
        view: the frame's appearance view (:func:`emts.stages.appearance.appearance_view`).
    """

    shown: list[Detection]
    decoded: list[Detection]
    passed: list[Detection]
    threshold: float
    view: AppearanceView | None = None


class DetectionStage:
    """Stage C on a stream: the one entry every user of Stage C calls (the pipeline, the
    detect and channels jobs, the evaluations), so that what they report is what the
    pipeline tracks.

    Args:
        detector: a Stage C mode (:func:`detector_stage`, or a bare
            :class:`emts.stages.c_detect.detector.Detector`: the network frame by frame), or a
            :class:`emts.modality.DetectorChoice` (picked by :meth:`choose` on the first frame
            with content, and again after :meth:`reset`); None: no detections.
        box_fit: the colour evidence (None: the network's boxes and scores).
        threshold: tau_s (None: the model's own, ``Detector.threshold``).

    Example:
        >>> from emts.front_end import MotionFrontEnd          # doctest: +SKIP
        >>> stage = DetectionStage(shipped_stage("default"))   # doctest: +SKIP
        >>> front = MotionFrontEnd(network_size=stage.network_size)  # doctest: +SKIP
        >>> stage.step(front.step(frame), frame).shown         # doctest: +SKIP
    """

    def __init__(
        self,
        detector: DetectorMode | DetectorChoice | None = None,
        box_fit: BoxFitConfig | None = DEFAULT_BOX_FIT,
        threshold: float | None = None,
    ) -> None:
        self.box_fit = box_fit
        self._threshold = threshold
        self.choice = detector if isinstance(detector, DetectorChoice) else None
        self.model = None
        if self.choice is None:
            self.use(detector)

    def use(self, model) -> None:
        """Run ``model`` (a Stage C mode, or None) from the next frame on."""
        self.model = model
        look_ahead(model, self.box_fit)

    def choose(self, frame: np.ndarray) -> bool:
        """With a :class:`DetectorChoice` and no model yet, pick one for ``frame`` (a valid
        frame); True when one was picked now (False while the frames are uniform)."""
        if self.model is not None or self.choice is None:
            return False
        model = self.choice.stage_for(frame)
        if model is None:
            return False
        self.use(model)
        return True

    @property
    def chosen(self) -> str | None:
        """The shipped detector a choice picked (``default`` / ``thermal``), or None."""
        return self.choice.chosen if self.choice is not None and self.model else None

    @property
    def threshold(self) -> float:
        if self._threshold is not None:
            return self._threshold
        return getattr(self.model, "threshold", 0.0)

    @property
    def network_size(self) -> tuple[int, int]:
        """The NETWORK frame size Stage B must feed the model."""
        return network_size_of(self.model)

    def channel_config(self, override: ChannelConfig | None = None) -> ChannelConfig:
        """Stage B's parameters for the model (:func:`emts.front_end.stage_b_config`)."""
        return stage_b_config(self.model, override)

    def reset(self) -> None:
        """Forget the stream: a choice picks again; a stateful mode's memory is cleared."""
        if self.choice is not None:
            self.model = None
        elif hasattr(self.model, "reset"):
            self.model.reset()

    def step(
        self,
        front: FrontEndResult,
        frame: np.ndarray,
        view: AppearanceView | None = None,
        evidence: bool = True,
    ) -> Detections:
        """Stage C on one frame: ``front`` is Stages A-B's result for ``frame`` (the input
        frame, whose colour the evidence reads); ``view`` its appearance view (made here
        when not given); ``evidence`` False: ``shown`` without the colour evidence this frame
        (the network's boxes and scores that reach the threshold, as with ``box_fit`` None)."""
        model = self.model
        if hasattr(model, "on_frame"):  # modes "temporal", "fused": need A's output
            decoded = model.on_frame(front)
        else:
            decoded = model(front.channels) if model is not None else []
        threshold = self.threshold
        passed = [d for d in decoded if d.score >= threshold]
        view = appearance_view(frame, front) if view is None else view
        shown = fit_detections(
            decoded,
            view,
            front.geometry,
            self.box_fit if evidence else None,
            threshold,
            front.channels,
        )
        return Detections(shown, decoded, passed, threshold, view)
