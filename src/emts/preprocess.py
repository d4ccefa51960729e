"""Bring any caller frame to the 640x512 uint8 gray working frame (§3.1).

Accepted frames: ``uint8`` or ``uint16`` (radiometric/thermal), shaped ``(h, w)``,
``(h, w, 1)``, ``(h, w, 3)`` (BGR, as OpenCV reads it) or ``(h, w, 4)`` (BGRA).
Anything else raises :class:`~emts.errors.BadInputError`.
"""

from __future__ import annotations

import cv2
import numpy as np

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.geometry import FrameGeometry

# uint16 (thermal) frames: raw levels between the 1st and 99th percentiles of the first frame
# are stretched to 0..255. The range then follows the scene slowly, each end moving at most
# 0.5 % of the span per frame (about one output gray level): a per-frame stretch would be an
# automatic-gain flicker (a hot car enters, the whole background dims) that Stage B reads as
# motion everywhere.
_THERMAL_LOW_PERCENTILE = 1.0
_THERMAL_HIGH_PERCENTILE = 99.0
_THERMAL_MAX_RANGE_STEP = 0.005  # fraction of the span each end may move per frame
_THERMAL_SAMPLE_STRIDE = 4  # percentiles from every 4th pixel in each direction


def validate_frame(frame: object) -> np.ndarray:
    """Return ``frame`` as an ndarray if it is a usable image, else raise BadInputError."""
    if not isinstance(frame, np.ndarray):
        raise BadInputError(f"frame must be a numpy array, got {type(frame).__name__}")
    if frame.dtype not in (np.uint8, np.uint16):
        raise BadInputError(
            f"frame dtype {frame.dtype} is not supported; pass uint8 or uint16 "
            "(for floats in [0, 1]: (frame * 255).astype(np.uint8))"
        )
    if frame.ndim == 3 and frame.shape[2] in (1, 3, 4):
        pass
    elif frame.ndim != 2:
        raise BadInputError(
            f"frame shape {frame.shape} is not an image; expected (h, w), (h, w, 1), "
            "(h, w, 3) or (h, w, 4)"
        )
    if frame.size == 0:
        raise BadInputError(f"frame is empty (shape {frame.shape})")
    return frame


def to_gray(frame: np.ndarray) -> np.ndarray:
    """Gray image of the frame's own dtype (BGR/BGRA weights as OpenCV's)."""
    if frame.ndim == 2:
        return frame
    channels = frame.shape[2]
    if channels == 1:
        return frame[:, :, 0]
    code = cv2.COLOR_BGR2GRAY if channels == 3 else cv2.COLOR_BGRA2GRAY
    return cv2.cvtColor(frame, code)


class Preprocessor:
    """Validates frames, converts them to gray uint8 and letterboxes them to 640x512.

    Keeps two pieces of state: the input geometry (rebuilt when the frame size changes) and
    the smoothed gray range of uint16 input. Each call returns
    ``(working, geometry, size_changed)``; ``network_size`` is the NETWORK frame of the
    geometries it builds (the detector's input size).
    """

    def __init__(self, network_size: tuple[int, int] = NETWORK_SIZE) -> None:
        self.network_size = network_size
        self.geometry: FrameGeometry | None = None
        self._thermal_range: tuple[float, float] | None = None

    def reset(self) -> None:
        self.geometry = None
        self._thermal_range = None

    def __call__(self, frame: object) -> tuple[np.ndarray, FrameGeometry, bool]:
        """Validate and convert one frame.

        Returns:
            ``(working, geometry, size_changed)``: the 640x512 uint8 gray working frame, the
            geometry of this frame's input size, and whether that size differs from the
            previous frame's (False on the first frame).
        """
        image = validate_frame(frame)
        gray = to_gray(image)
        if gray.dtype == np.uint16:
            gray = self._stretch_uint16(gray)
        size = (gray.shape[1], gray.shape[0])
        changed = self.geometry is not None and self.geometry.input_size != size
        if self.geometry is None or changed:
            self.geometry = FrameGeometry(size, self.network_size)
        return self.geometry.to_working(np.ascontiguousarray(gray)), self.geometry, changed

    def _stretch_uint16(self, gray: np.ndarray) -> np.ndarray:
        sample = gray[::_THERMAL_SAMPLE_STRIDE, ::_THERMAL_SAMPLE_STRIDE]
        low, high = np.percentile(sample, [_THERMAL_LOW_PERCENTILE, _THERMAL_HIGH_PERCENTILE])
        if self._thermal_range is None:
            self._thermal_range = (float(low), float(high))
        else:
            old_low, old_high = self._thermal_range
            step = _THERMAL_MAX_RANGE_STEP * max(old_high - old_low, 1.0)
            self._thermal_range = (
                old_low + float(np.clip(low - old_low, -step, step)),
                old_high + float(np.clip(high - old_high, -step, step)),
            )
        low, high = self._thermal_range
        span = max(high - low, 1.0)
        scaled = (gray.astype(np.float32) - np.float32(low)) * np.float32(255.0 / span)
        return np.clip(scaled, 0, 255).astype(np.uint8)
