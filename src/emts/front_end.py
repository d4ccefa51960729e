"""Stages A and B as one front end: any frame -> the working frame, the camera's motion and the
``[L, R, D]`` channels at the detector's size. The pipeline, the detect and channels jobs,
training and evaluation all feed their detectors through it, so that what a model sees is
what it was trained on.

Also here: which Stage B parameters (size, warp, the frames R spans) a given Stage C needs
(:func:`stage_b_config`, :func:`channel_key`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from emts.config import (
    NETWORK_SIZE,
    STAGE_A_SIZE,
    ChannelConfig,
    EgoMotionConfig,
)
from emts.geometry import Frame, FrameGeometry, check_network_size
from emts.preprocess import Preprocessor
from emts.stages.a_ego_motion import EgoMotion, EgoMotionEstimator
from emts.stages.b_channels import MotionChannels, network_content

log = logging.getLogger("emts")

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
        ms: milliseconds spent per stage: ``"A"`` (incl. gray/letterbox conversion), ``"B"``,
            and ``"C"`` where Stage C's networks ran ahead on this frame (``network``).
        network: Stage C's networks' outputs on ``channels``, run ahead with Stages A-B
            (:meth:`emts.pipeline.Pipeline.front_ahead`); None: Stage C runs them.
    """

    index: int
    geometry: FrameGeometry
    working: np.ndarray
    motion: EgoMotion
    channels: np.ndarray
    ms: dict[str, float] = field(default_factory=dict)
    size_changed: bool = False
    network: object | None = None

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
    size, the detector's input (:attr:`emts.stages.c_detect.detector.Detector.network_size`).

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
        self.network_size = check_network_size(network_size)  # BadInputError: one line, now
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
        size = check_network_size(network_size)
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
    ego_compensation: bool = True,
) -> np.ndarray:
    """(n, 3, H, W) Stage B channels of a clip's frames run through Stages A and B at
    ``network_size`` with Stage B's ``warp_at`` and ``residual_baseline`` (e.g. a stored clip
    set's frames for a detector of another size or warp: the sets cache the paper's 256x192,
    "network", R of the previous frame). ``ego_compensation=False``: Stage B differences
    the frames without Stage A's warp (the "w/o ego compensation" ablation)."""
    config = ChannelConfig(
        warp_at=warp_at, residual_baseline=residual_baseline, ego_compensation=ego_compensation
    )
    front = MotionFrontEnd(channel_config=config, network_size=network_size)
    return np.stack([front.step(frame).channels for frame in frames])


def _stage_a_mask(geometry: FrameGeometry) -> np.ndarray | None:
    """Stage A corner mask of the letterbox content (None when the input fills the frame)."""
    letterbox = geometry.input_to_working
    if letterbox.content == letterbox.size:
        return None
    mask = letterbox.content_mask(margin=_CONTENT_MARGIN)
    return cv2.resize(mask, STAGE_A_SIZE, interpolation=cv2.INTER_NEAREST)


def stage_b_of(detector) -> str:
    """Stage B's warp a Stage C runs with
    (:attr:`emts.stages.c_detect.detector.Detector.stage_b_warp`; the
    paper's for one that says none, and for no detector)."""
    return getattr(detector, "stage_b_warp", None) or "network"


def residual_baseline_of(detector) -> int:
    """The frames R spans for a Stage C
    (:attr:`emts.stages.c_detect.detector.Detector.residual_baseline`;
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
