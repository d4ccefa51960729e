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
