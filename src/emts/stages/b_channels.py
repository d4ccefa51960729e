"""Stage B: ego-motion-normalized input channels (§3.3, eq. 2).

At the network resolution (the paper's 256x192 unless the detector brings another, see
:func:`emts.geometry.network_letterbox`) the previous frame is warped by ``M_t`` (bilinear, border
replicate) into the current frame's coordinates, and three float32 channels are formed:

* ``L = I_t`` -- luminance, in [0, 1];
* ``R = G_5x5 * |I_t - warped|`` -- blurred absolute residual, in [0, 1];
* ``D = I_t - warped`` -- signed residual, in [-1, 1].

With ``ChannelConfig(residual_baseline=n)`` (n > 1; no shipped model) R is the blurred
residual of ``I_t`` and the frame n back instead, warped by the product of the last n motions;
D stays as above.

Under exact registration of a static scene R and D vanish except on independently moving
things. In the padding columns on each side (8 at 256x192, see :mod:`emts.geometry`) R and D
are 0. The stack has shape (3, H, W) -- (3, 192, 256) at the paper's size -- channel order
``[L, R, D]``.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import cv2
import numpy as np

from emts.config import NETWORK_SIZE, WORKING_SIZE, ChannelConfig
from emts.errors import BadInputError
from emts.geometry import Frame, lift, network_letterbox
from emts.stages.a_ego_motion import EgoMotion

CHANNEL_NAMES = ("L", "R", "D")
CHANNEL_RANGES = {"L": (0.0, 1.0), "R": (0.0, 1.0), "D": (-1.0, 1.0)}


def _area_weights(block_in: int, block_out: int) -> np.ndarray:
    """(block_out, block_in) float32 weights of an area (box) resize of ``block_in`` pixels
    to ``block_out``: each output pixel averages the input span it covers, fractional
    pixels weighted by their overlap (what ``cv2.INTER_AREA`` computes when shrinking)."""
    scale = block_in / block_out
    weights = np.zeros((block_out, block_in), np.float64)
    for i in range(block_out):
        start, stop = i * scale, (i + 1) * scale
        for j in range(int(start), min(block_in, int(np.ceil(stop)))):
            weights[i, j] = max(0.0, min(stop, j + 1) - max(start, j)) / scale
    return weights.astype(np.float32)


class _AreaShrink:
    """WORKING -> NETWORK content resize as two small matrix products, ~3x faster than
    ``cv2.resize(INTER_AREA)`` at 640x512 -> 240x192, whose generic (non-integer scale) path
    dominated Stage B. The scale 8/3 repeats every 8 input / 3 output pixels, so one 3x8 weight
    block per axis does it; rounded, the result equals OpenCV's (tested)."""

    def __init__(self, source: tuple[int, int], content: tuple[int, int]) -> None:
        ratio_x = Fraction(source[0], content[0])
        ratio_y = Fraction(source[1], content[1])
        assert ratio_x == ratio_y and ratio_x > 1, (source, content)
        self.block_in, self.block_out = ratio_x.numerator, ratio_x.denominator
        assert source[0] % self.block_in == 0 and source[1] % self.block_in == 0, source
        self.source, self.content = source, content
        weights = _area_weights(self.block_in, self.block_out)
        self._rows = weights  # (out, in): applied to groups of rows
        self._columns = np.ascontiguousarray(weights.T)  # (in, out): applied to column groups

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """uint8 (h, w) -> float32 (h', w') area-resized, not rounded.

        Rows first, then columns, each as a batch of small products: every product stays
        under OpenBLAS's threading threshold, so no BLAS worker threads wake up to compete
        with the detector's (one large product did, and Stage B's median rose tenfold).
        """
        width, height = self.source
        grouped_rows = image.reshape(height // self.block_in, self.block_in, width)
        rows = np.matmul(self._rows, grouped_rows.astype(np.float32))  # (h/8, 3, w)
        grouped_columns = rows.reshape(self.content[1], width // self.block_in, self.block_in)
        return np.matmul(grouped_columns, self._columns).reshape(self.content[1], self.content[0])


class _Layout:
    """WORKING -> NETWORK for one network size: the letterbox, its area shrink and the first
    and one-past-last image columns (the rest is padding)."""

    def __init__(self, size: tuple[int, int]) -> None:
        letterbox = network_letterbox(size)
        assert letterbox.pad[1] == 0, "network_image pads columns only"
        self.shrink = _AreaShrink(letterbox.source, letterbox.content)
        self.pad_left = letterbox.pad[0]
        self.pad_right = letterbox.pad[0] + letterbox.content[0]
        self.to_network = letterbox.matrix
        self.from_network = np.linalg.inv(letterbox.matrix)


@functools.lru_cache(maxsize=8)
def _layout(size: tuple[int, int] = NETWORK_SIZE) -> _Layout:
    return _Layout((int(size[0]), int(size[1])))


def _layout_of(array: np.ndarray) -> _Layout:
    """The layout of a network-sized array (..., H, W)."""
    return _layout((array.shape[-1], array.shape[-2]))


def network_image(
    frame: np.ndarray, out: np.ndarray | None = None, size: tuple[int, int] = NETWORK_SIZE
) -> np.ndarray:
    """640x512 uint8 working frame -> (h, w) = ``size`` float32 in [0, 1] (letterboxed, see
    geometry; the paper's 256x192 by default).

    Equals ``network_letterbox(size).apply(frame) / 255`` (area resize rounded to uint8,
    padding columns replicated), without the uint8 and padded intermediates. ``out``: an
    (h, w) float32 array to write into (its shape then gives the size).
    """
    if out is None:
        out = np.empty((size[1], size[0]), np.float32)
    layout = _layout_of(out)
    content = out[:, layout.pad_left : layout.pad_right]
    np.rint(layout.shrink(frame), out=content)
    content *= np.float32(1.0 / 255.0)
    out[:, : layout.pad_left] = content[:, :1]
    out[:, layout.pad_right :] = content[:, -1:]
    return out


def residual_from_difference(difference: np.ndarray, blur: int = 5) -> np.ndarray:
    """R from D: ``G_blur * |D|`` with zero padding columns (eq. 2), float32."""
    residual = cv2.GaussianBlur(np.abs(difference.astype(np.float32, copy=False)), (blur, blur), 0)
    layout = _layout_of(residual)
    residual[:, : layout.pad_left] = 0.0
    residual[:, layout.pad_right :] = 0.0
    return residual


# Residual-level normalization at the detector's input (issue 8). R and D are absolute
# gray-level residuals, so their size follows the scene's contrast, texture and frame rate,
# not only its motion: on the real RGB clip uav123-person12 (10 fps, sunlit paving) the 90th
# percentile of R over a frame is ~0.043, 4.5x the ~0.0095 of the thermal and synthetic
# frames the detector learns from (median over Tier-1, negatives, bench and HIT-UAV val
# pseudo-clips), and the network scores the walking person there 0-0.25. Frames whose level
# exceeds the reference are scaled down to it (L about its mean, R and D by the same gain);
# quieter frames pass unchanged, so the training distribution is left as it was.
# A model records its own in its metadata (``emts export --residual-reference``;
# :attr:`emts.stages.c_detect.detector.Detector.residual_reference`); one without gets this.
RESIDUAL_REFERENCE = 0.0095  # p90 of R the detector is fed at most (median of training frames)
# The same for Stage B's ``ChannelConfig(warp_at="working")``, which leaves less texture in R:
# the sets' median level fell 0.0108 -> 0.0076 (contrast-2.6 sets), so 0.0095 x 0.70.
WORKING_WARP_RESIDUAL_REFERENCE = 0.0067


def default_reference_for(warp_at: str) -> float:
    """The residual reference of a model that records none, fed Stage B's ``warp_at``."""
    return WORKING_WARP_RESIDUAL_REFERENCE if warp_at == "working" else RESIDUAL_REFERENCE


RESIDUAL_PERCENTILE = 90
RESIDUAL_GAIN_FLOOR = 0.1  # never scale a frame down by more than 10x


def _sample_step(height: int) -> int:
    """The sampling step of :func:`_sample_grid`: every other row and column below 384 rows
    (the paper's 192), every (2 x height // 192)-th from there -- about the paper's ~12k
    samples at any size: at 512x384 the p90 of R on every other pixel took 0.5 of the
    normalization's 0.6 ms, and every 4th gives levels within 0.8 % of it (p5-p95 over 150
    HIT-UAV val pseudo-clip frames)."""
    return 2 * (height // 192) if height >= 384 else 2


def _sample_grid(channels: np.ndarray) -> tuple[tuple[slice, slice], np.ndarray]:
    """(a grid of the image of a (3, H, W) stack as slices of one channel, its rows with any
    R): every :func:`_sample_step`-th row and column, padding columns left out; the rows
    drop the letterbox rows of a 16:9 input, whose R is exactly 0 (masked by Stage B; image
    rows never are once there is any residual). ``channel[grid][rows]``: its samples."""
    layout = _layout_of(channels)
    step = _sample_step(channels.shape[-2])
    grid = (slice(None, None, step), slice(layout.pad_left, layout.pad_right, step))
    return grid, channels[1][grid].any(axis=1)


def _level(residual: np.ndarray) -> float:
    if residual.size == 0:
        return 0.0
    flat = residual.ravel()
    k = int(round(RESIDUAL_PERCENTILE / 100 * (flat.size - 1)))
    return float(np.partition(flat, k)[k])


def _gain(level: float, reference: float, floor: float) -> float:
    # (a frame normalized once stays as it is: its level is the reference up to rounding)
    return 1.0 if level <= reference * (1 + 1e-5) else max(floor, reference / level)


def residual_level(channels: np.ndarray) -> float:
    """The 90th percentile of R over the image (a grid of it, :func:`_sample_step`; padding columns
    and all-zero letterbox rows left out) of one (3, H, W) ``[L, R, D]`` stack; 0 when R is 0
    (a stream's first frame)."""
    grid, rows = _sample_grid(channels)
    return _level(channels[1][grid][rows])


def residual_gain(
    channels: np.ndarray,
    reference: float = RESIDUAL_REFERENCE,
    floor: float = RESIDUAL_GAIN_FLOOR,
) -> float:
    """The gain :func:`normalize_residual_level` applies to a (3, H, W) stack: 1 when its
    :func:`residual_level` is at most ``reference`` (or ``reference`` <= 0: off), else
    ``reference / level``, at least ``floor``."""
    return 1.0 if reference <= 0 else _gain(residual_level(channels), reference, floor)


def normalize_residual_level(
    channels: np.ndarray,
    reference: float = RESIDUAL_REFERENCE,
    floor: float = RESIDUAL_GAIN_FLOOR,
) -> np.ndarray:
    """``[L, R, D]`` with the frame's residual level brought down to ``reference``.

    With g = :func:`residual_gain`: ``L <- m + g (L - m)`` (m the image's mean of L),
    ``R <- g R``, ``D <- g D`` -- the channels of the same scene at g times its contrast, so
    the previous frame ``L - D`` is scaled alike. ``channels``: one (3, H, W) stack or a
    (N, 3, H, W) batch (each frame its own gain). Returns ``channels`` itself when no frame
    needs scaling, else a new float32 array.
    """
    if reference <= 0:
        return channels
    if channels.ndim == 4:
        frames = [normalize_residual_level(c, reference, floor) for c in channels]
        if all(f is c for f, c in zip(frames, channels, strict=True)):
            return channels
        return np.stack(frames)
    grid, rows = _sample_grid(channels)
    gain = _gain(_level(channels[1][grid][rows]), reference, floor)
    if gain >= 1.0:  # (most frames: L's samples are needed only below)
        return channels
    light = channels[0][grid][rows]
    out = np.empty(channels.shape, np.float32)
    g = np.float32(gain)
    np.multiply(channels[0], g, out=out[0])
    out[0] += (1 - g) * np.float32(light.mean())
    np.multiply(channels[1:], g, out=out[1:])
    return out


def network_content(geometry) -> np.ndarray | None:
    """Stage B's content mask for letterboxed input (None when the input fills the frame): the
    replicated rows above and below a 16:9 image move with the camera and would light up R
    and D (measured on uav123-person12: the shipped detector's FP/frame 1.27 -> 0.73)."""
    letterbox = geometry.input_to_working
    if letterbox.content == letterbox.size:
        return None
    return content_mask(geometry)


def halved_channels(
    channels: np.ndarray, content: np.ndarray | None = None, residual_baseline: int = 1
) -> np.ndarray:
    """Stage B's ``[L, R, D]`` at half the size of ``channels`` (3, H, W), H and W even: L and
    D area-averaged over 2x2 blocks, R rebuilt from the halved D as Stage B builds it (eq. 2),
    R and D zeroed outside ``content`` (the halved size's :func:`content_mask`; None: only the
    padding columns). With ``residual_baseline`` > 1 R is no function of D (it spans more
    frames): R area-averaged then blurred 3x3 stands for it (against Stage B run at the half
    size with R over 3 frames, working warp, 60 bench frames: correlation 0.995, mean error 7 %
    of R's mean; rebuilt from D it would be R over one frame, 0.75 / 50 %). What Stage C's
    coarse pass (:mod:`emts.stages.c_detect.temporal`) feeds a model at the size it was trained at,
    from the
    channels of the size it runs at: the letterbox of a network size and of its half align
    exactly (their padding columns halve too)."""
    height, width = channels.shape[-2:]
    if channels.ndim != 3 or height % 2 or width % 2:
        raise BadInputError(
            f"halved_channels: expected (3, H, W) with H, W even, got {channels.shape}"
        )
    size = (width // 2, height // 2)
    out = np.empty((3, size[1], size[0]), np.float32)
    cv2.resize(channels[0], size, dst=out[0], interpolation=cv2.INTER_AREA)
    cv2.resize(channels[2], size, dst=out[2], interpolation=cv2.INTER_AREA)
    if residual_baseline == 1:
        out[1] = residual_from_difference(out[2])
    else:
        cv2.resize(channels[1], size, dst=out[1], interpolation=cv2.INTER_AREA)
        cv2.GaussianBlur(out[1], (3, 3), 0, dst=out[1])
    if content is not None:
        np.copyto(out[1:], 0.0, where=~content)  # (13x faster than out[1:, ~content] = 0)
    return out


def content_mask(geometry) -> np.ndarray:
    """bool (H, W) mask of the network pixels that hold image for an input geometry
    (:class:`emts.geometry.FrameGeometry`, at its network size): a 16:9 input leaves
    replicated rows above and below its content, which move with the camera and light up R
    and D unless masked."""
    to_network = geometry.matrix(Frame.WORKING, Frame.NETWORK)
    inside = cv2.warpAffine(
        geometry.input_to_working.content_mask(),
        to_network[:2],
        geometry.network_size,
        flags=cv2.INTER_NEAREST,
    )
    # the 5x5 blur of R reaches 2 px beyond the content
    return cv2.erode(inside, np.ones((5, 5), np.uint8)) > 0


def motion_in_network(
    motion_working: np.ndarray, size: tuple[int, int] = NETWORK_SIZE
) -> np.ndarray:
    """Express a WORKING-frame 2x3 motion in the coordinates of a NETWORK frame of ``size``."""
    layout = _layout(size)
    return (layout.to_network @ lift(motion_working) @ layout.from_network)[:2]


WARP_AT = ("working", "network")  # ChannelConfig.warp_at
WORKING_BOX = 3  # working px: the box filter of warp_at="working" (the shrink's 8/3 footprint)
_SAMPLING = {"flags": cv2.INTER_LINEAR, "borderMode": cv2.BORDER_REPLICATE}  # its resampling


class MotionChannels:
    """Forms ``[L, R, D]`` for each frame from the previous frame and Stage A's motion.

    Args:
        config: Stage B parameters; ``ChannelConfig(ego_compensation=False)`` uses the identity
            warp whatever the motion (the paper's "w/o ego compensation" ablation).
        network_size: (w, h) of the stack, the detector's input (the paper's 256x192).

    Example:
        >>> import numpy as np
        >>> stage_b = MotionChannels()
        >>> frame = np.full((512, 640), 128, np.uint8)
        >>> stage_b.update(frame, EgoMotion()).shape
        (3, 192, 256)
    """

    def __init__(
        self, config: ChannelConfig | None = None, network_size: tuple[int, int] = NETWORK_SIZE
    ) -> None:
        self.config = config or ChannelConfig()
        if self.config.warp_at not in WARP_AT:
            raise ValueError(
                f"ChannelConfig.warp_at must be one of {WARP_AT}, got {self.config.warp_at!r}"
            )
        self.network_size = (int(network_size[0]), int(network_size[1]))
        self._layout = _layout(self.network_size)
        if int(self.config.residual_baseline) < 1:
            raise ValueError(
                f"ChannelConfig.residual_baseline must be >= 1, got {self.config.residual_baseline}"
            )
        self._previous: np.ndarray | None = None
        self._spare: np.ndarray | None = None  # warp_at="working": the buffer to fill next
        # residual_baseline n > 1: up to n-1 kept images before the previous one, oldest
        # first, and for each its map (3x3, WORKING px) onto the previous frame
        self._older: list[np.ndarray] = []
        self._older_maps: list[np.ndarray | None] = []

    def reset(self) -> None:
        """Forget the previous frames; the next R and D are zero."""
        self._previous = None
        self._spare = None
        self._older.clear()
        self._older_maps.clear()

    def _step(self, motion: EgoMotion) -> np.ndarray | None:
        """The 3x3 WORKING-px map of the previous frame onto this one; None: no ego
        compensation (the identity)."""
        if not self.config.ego_compensation:
            return None
        if motion.homography is not None:
            return np.asarray(motion.homography, np.float64)
        return lift(motion.matrix)

    def _oldest(
        self, previous: np.ndarray, step: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``residual_baseline`` > 1: the kept image R compares this frame with (the oldest
        of the last n) and its map onto this frame (None: the identity); moves the history
        on by this frame."""
        older, maps = self._older, self._older_maps
        if older:
            image, first = older[0], maps[0]
            matrix = None if step is None else step if first is None else step @ first
        else:
            image, matrix = previous, step
        if step is not None:
            maps[:] = [step if m is None else step @ m for m in maps]
        older.append(previous)
        maps.append(step)
        if len(older) >= self.config.residual_baseline:
            older.pop(0)
            maps.pop(0)
        return image, matrix

    def update(
        self, frame: np.ndarray, motion: EgoMotion, content: np.ndarray | None = None
    ) -> np.ndarray:
        """Return the (3, H, W) float32 ``[L, R, D]`` stack for ``frame`` (H, W of
        ``network_size``).

        Args:
            frame: 640x512 uint8 gray working frame.
            motion: Stage A's estimate of the motion from the previous frame to ``frame``:
                the previous frame is warped by its ``homography`` where Stage A has one,
                else by its similarity ``matrix``.
            content: optional bool (H, W) mask of the letterbox content
                (:func:`content_mask`); R and D are zeroed outside it. None: only the
                padding columns on each side are zeroed.
        """
        if frame.dtype != np.uint8 or frame.shape != (WORKING_SIZE[1], WORKING_SIZE[0]):
            raise BadInputError(
                f"Stage B expects a {WORKING_SIZE[0]}x{WORKING_SIZE[1]} uint8 gray frame, "
                f"got shape {frame.shape} dtype {frame.dtype}"
            )
        size = self.network_size
        current = network_image(frame, size=size)  # the next frame's previous: not the stack's
        if self.config.warp_at == "working":
            return self._update_working(frame, current, motion, content)
        previous, stack = self._new_stack(current, current)
        if previous is None:
            return stack
        if not self.config.ego_compensation:
            warped = previous
        elif motion.homography is not None:
            layout = self._layout
            warped = cv2.warpPerspective(
                previous,
                layout.to_network @ motion.homography @ layout.from_network,
                size,
                flags=cv2.INTER_LINEAR,
                borderMode=cv2.BORDER_REPLICATE,
            )
        else:
            warped = cv2.warpAffine(
                previous,
                motion_in_network(motion.matrix, size),
                size,
                flags=cv2.INTER_LINEAR,
                borderMode=cv2.BORDER_REPLICATE,
            )
        longer = None
        if self.config.residual_baseline > 1:
            image, matrix = self._oldest(previous, self._step(motion))
            layout = self._layout
            if matrix is not None:
                image = cv2.warpPerspective(
                    image,
                    layout.to_network @ matrix @ layout.from_network,
                    size,
                    flags=cv2.INTER_LINEAR,
                    borderMode=cv2.BORDER_REPLICATE,
                )
            longer = np.subtract(current, image)
        return self._finish(stack, current, warped, content, longer)

    def _update_working(
        self,
        frame: np.ndarray,
        current: np.ndarray,
        motion: EgoMotion,
        content: np.ndarray | None,
    ) -> np.ndarray:
        """``warp_at="working"``: D and R from the working frames, each box-filtered over
        ``WORKING_BOX`` px (about the area shrink's footprint) and sampled at the network
        pixels' centres -- the current frame through the letterbox, the previous one through
        the camera motion first. Both are resampled alike, on the 640x512 grid, so a
        sub-pixel motion leaves far less of the ground's texture in R than a warp of the
        previous network image does. L is the area shrink (``current``) as before."""
        size, layout = self.network_size, self._layout
        # two 640x512 float buffers, this frame's and the previous one's, reused: a fresh
        # 1.3 MB array a frame costs page faults on every frame
        box = self._spare if self._spare is not None else np.empty(frame.shape, np.float32)
        # (with residual_baseline > 1 the previous frame joins the history: none to reuse)
        self._spare = self._previous if self.config.residual_baseline == 1 else None
        cv2.boxFilter(
            frame,
            cv2.CV_32F,
            (WORKING_BOX, WORKING_BOX),
            dst=box,
            borderType=cv2.BORDER_REPLICATE,
        )
        box *= np.float32(1.0 / 255.0)
        previous, stack = self._new_stack(current, box)
        if previous is None:
            return stack
        to_network = layout.to_network
        # the two samplings land in R's and D's rows of the stack (overwritten by _finish)
        flags = _SAMPLING
        sampled = cv2.warpAffine(box, to_network[:2], size, dst=stack[1], **flags)
        if not self.config.ego_compensation:
            warped = cv2.warpAffine(previous, to_network[:2], size, dst=stack[2], **flags)
        elif motion.homography is not None:
            matrix = to_network @ np.asarray(motion.homography)
            warped = cv2.warpPerspective(previous, matrix, size, dst=stack[2], **flags)
        else:
            matrix = (to_network @ lift(motion.matrix))[:2]
            warped = cv2.warpAffine(previous, matrix, size, dst=stack[2], **flags)
        longer = None
        if self.config.residual_baseline > 1:
            image, matrix = self._oldest(previous, self._step(motion))
            matrix = to_network if matrix is None else to_network @ matrix
            longer = cv2.warpPerspective(image, matrix, size, **flags)
            longer -= sampled  # (minus R's difference: the sign goes in |.|)
        return self._finish(stack, sampled, warped, content, longer)

    def _new_stack(
        self, light: np.ndarray, kept: np.ndarray
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """(the previous frame's kept image, this frame's stack with L = ``light``); ``kept``
        is kept for the next frame. Without a previous frame R and D are zero."""
        previous, self._previous = self._previous, kept
        size = self.network_size
        stack = np.empty((3, size[1], size[0]), np.float32)
        stack[0] = light
        if previous is None:
            stack[1:] = 0.0
        return previous, stack

    def _finish(self, stack, current, warped, content, longer=None) -> np.ndarray:
        """D = current - warped (eq. 2), R its blurred magnitude, both zeroed in the padding
        columns and outside ``content``. ``longer`` (``residual_baseline`` > 1): the difference
        of this frame and the oldest one compared (either sign), of which R is the blurred
        magnitude instead."""
        np.subtract(current, warped, out=stack[2])  # eq. 2: D = I_t - warped
        # The padding columns hold no image: no motion there (else the replicated edge
        # column, shifted by the warp, paints a stripe the detector could learn as a cue).
        stack[2, :, : self._layout.pad_left] = 0.0
        stack[2, :, self._layout.pad_right :] = 0.0
        if longer is None:
            stack[1] = residual_from_difference(stack[2], self.config.residual_blur)  # eq. 2: R
        else:
            longer[:, : self._layout.pad_left] = 0.0
            longer[:, self._layout.pad_right :] = 0.0
            stack[1] = residual_from_difference(longer, self.config.residual_blur)
        if content is not None:
            # (a boolean index assignment here took 0.2 ms a frame; copyto 0.015)
            np.copyto(stack[1:], 0.0, where=~content)
        return stack
