"""Stage C as the pipeline and every job run it: the runtime modes (``temporal``, ``plain``,
``fused``) around a detector network, and the shipped detectors."""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np

from emts.errors import BadInputError
from emts.modality import AUTO, DEFAULT, MODEL_CHOICES, DetectorChoice
from emts.stages.c_detect.detector import Detection
from emts.stages.c_detect.fusion import FusedDetector
from emts.stages.c_detect.temporal import TemporalDetector

log = logging.getLogger("emts")


class DetectorStage(Protocol):
    """Stage C: ``[L, R, D]`` (3, H, W) -> detections in NETWORK px."""

    def __call__(self, channels: np.ndarray) -> list[Detection]: ...


DETECTOR_MODES = ("temporal", "plain", "fused")
DEFAULT_DETECTOR_MODE = "temporal"


def check_detector_mode(mode: str) -> str:
    if mode not in DETECTOR_MODES:
        raise BadInputError(f"detector mode {mode!r}: expected one of {', '.join(DETECTOR_MODES)}")
    return mode


def detector_stage(detector, mode: str = DEFAULT_DETECTOR_MODE, coarse_pass: bool = True):
    """Stage C for ``mode``: ``temporal`` (default) the network with its scores averaged
    over time in stabilized coordinates (:class:`emts.stages.c_detect.temporal.TemporalDetector`;
    with
    ``coarse_pass``, a model run at twice the size it was trained at runs at that size too,
    for people too tall for the finer pass), ``plain`` the network alone, frame by frame (the
    paper's), ``fused`` the network scoring compensated-difference blobs at 640x512
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
