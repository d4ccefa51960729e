"""Which shipped detector suits the camera, told from its frames (``--model auto``, the default).

A thermal camera's frames carry no colour: radiometric ``uint16`` frames, single-channel
frames, or 8-bit video whose three channels are equal (a white-hot or black-hot palette). A
codec leaves those channels within a few levels of each other (2-3 after MJPEG, MPEG-4 part 2
and XVID round trips of HIT-UAV stills here); a colour camera's do not (uav123-person12, a
sunlit plaza: half of its pixels spread over 15 levels, 99 % under 36-58). Frames without
colour go to the thermal model (``detector.thermal.onnx``, trained for thermal's small people,
run at 512x384), colour frames to the default model. A thermal video in a colour palette
(ironbow and the like) looks like colour here: pass ``--model thermal`` for it (a rainbow
palette is not monotonic in brightness: record white- or black-hot). A monochrome
visible-light camera does best left to ``auto``, on the thermal model (person12 in gray, the
protocols of ``benchmarks/peers_track.py``: docs/guides/thermal.md).

The choice is made once, on the first frame that has content (a uniform frame -- a black
leader, a lens cap -- tells nothing), and again after :meth:`emts.pipeline.Pipeline.reset`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from emts.preprocess import to_gray, validate_frame

log = logging.getLogger("emts")

COLOUR = "colour"
NO_COLOUR = "no colour"

# The model names ``--model`` takes besides a file.
AUTO = "auto"
DEFAULT = "default"
THERMAL = "thermal"
MODEL_CHOICES = (AUTO, DEFAULT, THERMAL)
VARIANT_FOR = {COLOUR: DEFAULT, NO_COLOUR: THERMAL}

# A pixel's colour spread: the largest minus the smallest of its B, G, R levels. A frame has
# colour when its 99th percentile exceeds this (codecs: <= 3 on gray content; colour cameras:
# 36-58 on person12, and a gray overcast scene still has its signs, cars and clothes).
COLOUR_SPREAD = 8
COLOUR_PERCENTILE = 99.0
# A frame whose gray levels' standard deviation is below this (of the dtype's full range
# scaled to 8 bits) is uniform: it decides nothing.
MIN_CONTENT_STD = 2.0
_SAMPLE_STRIDE = 4  # every 4th pixel in each direction


def frame_modality(frame: np.ndarray) -> str | None:
    """:data:`COLOUR`, :data:`NO_COLOUR`, or None for a uniform frame (cannot tell).

    Raises:
        BadInputError: not a usable frame (as :func:`emts.preprocess.validate_frame`).
    """
    image = validate_frame(frame)[::_SAMPLE_STRIDE, ::_SAMPLE_STRIDE]
    gray = to_gray(np.ascontiguousarray(image)).astype(np.float32)
    if image.dtype == np.uint16:
        gray /= 257.0
    if float(gray.std()) < MIN_CONTENT_STD:
        return None
    if image.dtype == np.uint16 or image.ndim == 2 or image.shape[2] == 1:
        return NO_COLOUR
    bgr = image[:, :, :3]
    spread = bgr.max(axis=2).astype(np.int16) - bgr.min(axis=2)
    colourful = float(np.percentile(spread, COLOUR_PERCENTILE)) > COLOUR_SPREAD
    return COLOUR if colourful else NO_COLOUR


class DetectorChoice:
    """Stage C picked from the input: ``make(variant)`` builds the stage for ``default`` or
    ``thermal`` (once each, when first needed); :meth:`stage_for` picks by the frame.

    A :class:`emts.pipeline.Pipeline` given one runs without detections until a frame with
    content arrives, then with the chosen stage (logged, and in :attr:`chosen`)."""

    def __init__(self, make: Callable[[str], object]) -> None:
        self.make = make
        self.chosen: str | None = None
        self._stages: dict[str, object] = {}

    def stage_for(self, frame: np.ndarray):
        """The stage for ``frame``'s modality (reset, ready for a new stream), or None for a
        uniform frame."""
        modality = frame_modality(frame)
        if modality is None:
            return None
        variant = VARIANT_FOR[modality]
        if variant not in self._stages:
            self._stages[variant] = self.make(variant)
        stage = self._stages[variant]
        if hasattr(stage, "reset"):
            stage.reset()
        if variant != self.chosen:
            log.info("input has %s: detector %s", modality, variant)
        self.chosen = variant
        return stage
