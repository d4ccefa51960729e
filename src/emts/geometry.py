"""Coordinate frames and the one place that converts between them.

EMTS works in four image frames (``Frame``):

* ``INPUT``   -- the caller's own pixels (any size). Everything the CLI and API output is here.
* ``WORKING`` -- 640x512, the input letterboxed with its aspect ratio kept (§3.1).
* ``STAGE_A`` -- 320x256, half of WORKING, where Stage A tracks corners (§3.2).
* ``NETWORK`` -- the detector's input, where Stage B and the detector run (§3.3). The paper's
  256x192 is WORKING scaled by 0.375 into 240x192 and padded by 8 columns on each side
  (exactly one stride-8 cell); a detector trained at another size (e.g. 384x288: 360x288 plus
  12 columns a side) brings its own NETWORK frame (:func:`network_letterbox`).

All points use OpenCV's convention: the centre of pixel ``(i, j)`` is at ``x = i, y = j``
(what ``cv2.warpAffine`` and ``cv2.calcOpticalFlowPyrLK`` use). Boxes are ``[x, y, w, h]``
with ``(x, y)`` the top-left *edge*, so pixel ``i`` spans ``[i - 0.5, i + 0.5]`` in point
coordinates and a box covering pixels 0..9 is ``[0, 0, 10, 10]`` in any frame.

Every frame-to-frame map is a 3x3 homogeneous matrix ``T`` (scale and offset only). A motion
``M`` (2x3, frame t-1 -> frame t) expressed in one frame is carried to another by conjugation,
``T @ lift(M) @ inv(T)``.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

import cv2
import numpy as np

from emts.config import NETWORK_SIZE, STAGE_A_SIZE, WORKING_SIZE
from emts.errors import BadInputError


class Frame(enum.Enum):
    """An image coordinate frame; see the module docstring."""

    INPUT = "input"
    WORKING = "working"
    STAGE_A = "stage_a"
    NETWORK = "network"


_FEW_BOXES = 8  # FrameGeometry.boxes maps up to this many boxes in Python floats


def lift(affine: np.ndarray) -> np.ndarray:
    """Return the 3x3 homogeneous lift of a 2x3 affine matrix."""
    affine = np.asarray(affine, dtype=np.float64)
    assert affine.shape == (2, 3), affine.shape
    lifted = np.empty((3, 3))  # (np.vstack: 4x slower, and this runs many times a frame)
    lifted[:2] = affine
    lifted[2] = (0.0, 0.0, 1.0)
    return lifted


def _resize_matrix(scale_x: float, scale_y: float, pad_x: float, pad_y: float) -> np.ndarray:
    """Map of ``cv2.resize`` by (scale_x, scale_y) followed by padding, in pixel-centre coords.

    cv2.resize samples destination pixel j at source ``(j + 0.5) / s - 0.5``, so
    ``x_dst = s * x_src + (s - 1) / 2``.
    """
    return np.array(
        [
            [scale_x, 0.0, (scale_x - 1.0) / 2.0 + pad_x],
            [0.0, scale_y, (scale_y - 1.0) / 2.0 + pad_y],
            [0.0, 0.0, 1.0],
        ]
    )


@dataclass(frozen=True)
class Letterbox:
    """Resize by ``scale`` (kept aspect ratio) to ``content`` size, then pad to ``size``."""

    source: tuple[int, int]  # (w, h) of the image being letterboxed
    size: tuple[int, int]  # (w, h) of the result
    content: tuple[int, int]  # (w, h) of the resized image inside the result
    pad: tuple[int, int]  # (left, top) padding in result pixels

    @classmethod
    def fit(cls, source: tuple[int, int], size: tuple[int, int]) -> Letterbox:
        src_w, src_h = source
        dst_w, dst_h = size
        scale = min(dst_w / src_w, dst_h / src_h)
        content_w = min(dst_w, max(1, round(src_w * scale)))
        content_h = min(dst_h, max(1, round(src_h * scale)))
        pad = ((dst_w - content_w) // 2, (dst_h - content_h) // 2)
        return cls(source, size, (content_w, content_h), pad)

    @property
    def matrix(self) -> np.ndarray:
        """3x3 map from source pixel coordinates to result pixel coordinates."""
        return _resize_matrix(
            self.content[0] / self.source[0],
            self.content[1] / self.source[1],
            self.pad[0],
            self.pad[1],
        )

    def apply(self, image: np.ndarray) -> np.ndarray:
        """Resize ``image`` (h, w[, c]) and pad with replicated borders.

        Replicated borders keep Shi-Tomasi from finding static corners on an artificial
        edge; callers that need the content area use :attr:`content_mask`.
        """
        if image.shape[1] != self.source[0] or image.shape[0] != self.source[1]:
            raise BadInputError(
                f"frame is {image.shape[1]}x{image.shape[0]}, expected "
                f"{self.source[0]}x{self.source[1]}"
            )
        if self.source == self.size:
            return image
        shrinking = self.content[0] < self.source[0]
        interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
        resized = cv2.resize(image, self.content, interpolation=interpolation)
        if self.content == self.size:
            return resized
        left, top = self.pad
        right = self.size[0] - self.content[0] - left
        bottom = self.size[1] - self.content[1] - top
        return cv2.copyMakeBorder(resized, top, bottom, left, right, cv2.BORDER_REPLICATE)

    @property
    def content_box(self) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)``: the image's own pixels in the result (the padding outside)."""
        (left, top), (width, height) = self.pad, self.content
        return left, top, left + width, top + height

    def content_mask(self, margin: int = 0) -> np.ndarray:
        """uint8 mask (255 inside the content, shrunk by ``margin`` px) of the result's size."""
        mask = np.zeros((self.size[1], self.size[0]), np.uint8)
        x0, y0, x1, y1 = self.content_box
        x0, y0, x1, y1 = x0 + margin, y0 + margin, x1 - margin, y1 - margin
        mask[max(y0, 0) : max(y1, 0), max(x0, 0) : max(x1, 0)] = 255
        return mask


# The detector's cells are 8 network px, and its stride-16 features are upsampled 2x onto them:
# an odd number of cells across or down does not add up (onnxruntime fails mid-run).
NETWORK_SIZE_MULTIPLE = 16


def check_network_size(size: tuple[int, int]) -> tuple[int, int]:
    """``size`` (w, h) as ints if the detector and Stage B can run at it, else BadInputError.

    The rule: width and height positive multiples of :data:`NETWORK_SIZE_MULTIPLE` (16), the
    frame at least 5:4 wide (the working frame is scaled to its height and padded left and
    right), and smaller than the 640x512 working frame, which Stage B shrinks into it (at most
    640 wide and 496 high): 32x16 to 640x496, e.g. 256x192, 384x288, 512x384.
    """
    width, height = int(size[0]), int(size[1])
    step = NETWORK_SIZE_MULTIPLE
    if (
        width <= 0
        or height <= 0
        or width % step
        or height % step
        or width * WORKING_SIZE[1] < height * WORKING_SIZE[0]
        or width > WORKING_SIZE[0]
        or height >= WORKING_SIZE[1]
    ):
        largest = (WORKING_SIZE[0], WORKING_SIZE[1] - step)
        raise BadInputError(
            f"network size {width}x{height}: expected multiples of {step}, at least 5:4 wide, "
            "at most {}x{} (e.g. 256x192, 384x288, 512x384)".format(*largest)
        )
    return width, height


@functools.lru_cache(maxsize=8)
def network_letterbox(size: tuple[int, int] = NETWORK_SIZE) -> Letterbox:
    """WORKING -> NETWORK for a detector input of ``size`` (w, h): the 640x512 working frame
    scaled to the input's height, padded left and right. ``size`` must pass
    :func:`check_network_size` (BadInputError)."""
    return Letterbox.fit(WORKING_SIZE, check_network_size(size))


# Fixed maps between the internal frames (they do not depend on the input size).
WORKING_TO_STAGE_A = Letterbox.fit(WORKING_SIZE, STAGE_A_SIZE)
WORKING_TO_NETWORK = network_letterbox(NETWORK_SIZE)  # the paper's 256x192


class FrameGeometry:
    """Converts points, boxes and motions between the frames of one input size.

    Args:
        input_size: ``(width, height)`` of the caller's frames.
        network_size: ``(width, height)`` of the NETWORK frame (the detector's input).

    Example:
        >>> g = FrameGeometry((1280, 720))
        >>> g.points([[640, 360]], Frame.INPUT, Frame.WORKING).round(2).tolist()
        [[319.75, 255.75]]
    """

    def __init__(
        self, input_size: tuple[int, int], network_size: tuple[int, int] = NETWORK_SIZE
    ) -> None:
        width, height = int(input_size[0]), int(input_size[1])
        if width < 16 or height < 16:
            raise BadInputError(f"frame is {width}x{height}; EMTS needs at least 16x16 pixels")
        self.input_size = (width, height)
        self.input_to_working = Letterbox.fit(self.input_size, WORKING_SIZE)
        self.network_size = (int(network_size[0]), int(network_size[1]))
        self.working_to_network = network_letterbox(self.network_size)
        to_working = {
            Frame.INPUT: self.input_to_working.matrix,
            Frame.WORKING: np.eye(3),
            Frame.STAGE_A: np.linalg.inv(WORKING_TO_STAGE_A.matrix),
            Frame.NETWORK: np.linalg.inv(self.working_to_network.matrix),
        }
        self._to_working = to_working
        self._from_working = {frame: np.linalg.inv(m) for frame, m in to_working.items()}
        # every src -> dst map, computed once (many are asked for on every frame)
        self._matrices = {
            (src, dst): self._from_working[dst] @ self._to_working[src]
            for src in to_working
            for dst in to_working
        }
        # the maps without rotation or shear (all of them: letterboxes and scalings) as
        # (scale x, scale y, shift x, shift y) floats, for :meth:`boxes`' few-box path
        self._axis_maps = {
            key: (float(m[0, 0]), float(m[1, 1]), float(m[0, 2]), float(m[1, 2]))
            for key, m in self._matrices.items()
            if m[0, 1] == 0.0 and m[1, 0] == 0.0
        }
        box = self.boxes([[0, 0, width, height]], Frame.INPUT, Frame.WORKING)[0]
        # The image content inside WORKING as (x0, y0, x1, y1) point coordinates.
        self.content_box = (
            box[0] - 0.5,
            box[1] - 0.5,
            box[0] + box[2] - 0.5,
            box[1] + box[3] - 0.5,
        )

    def matrix(self, src: Frame, dst: Frame) -> np.ndarray:
        """3x3 map taking point coordinates in ``src`` to ``dst``."""
        return self._matrices[src, dst].copy()

    def points(self, points: np.ndarray, src: Frame, dst: Frame) -> np.ndarray:
        """Map an (n, 2) array of points from ``src`` to ``dst``."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        m = self._matrices[src, dst]
        return pts @ m[:2, :2].T + m[:2, 2]

    def boxes(self, boxes: np.ndarray, src: Frame, dst: Frame) -> np.ndarray:
        """Map an (n, 4) array of ``[x, y, w, h]`` boxes (top-left edge) from ``src`` to ``dst``."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        axis_map = self._axis_maps.get((src, dst))
        if axis_map is not None and len(b) <= _FEW_BOXES:
            # A few boxes (the track's, a frame's detections: ~6 calls a frame) in Python
            # floats: a tenth of the numpy path's time on such tiny arrays, and the same
            # numbers -- without rotation the product below is x * scale + 0 exactly.
            sx, sy, tx, ty = axis_map
            out = []
            for x, y, w, h in b.tolist():
                left, top = (x - 0.5) * sx + tx + 0.5, (y - 0.5) * sy + ty + 0.5
                right, bottom = (x + w - 0.5) * sx + tx + 0.5, (y + h - 0.5) * sy + ty + 0.5
                out.append((left, top, right - left, bottom - top))
            return np.array(out, dtype=np.float64).reshape(-1, 4)
        corners = np.concatenate([b[:, :2] - 0.5, b[:, :2] + b[:, 2:] - 0.5], axis=0)
        mapped = self.points(corners, src, dst)
        n = len(b)
        top_left, bottom_right = mapped[:n] + 0.5, mapped[n:] + 0.5
        return np.concatenate([top_left, bottom_right - top_left], axis=1)

    def motion(self, affine: np.ndarray, src: Frame, dst: Frame) -> np.ndarray:
        """Express a 2x3 motion (frame t-1 -> frame t, both in ``src``) in ``dst``."""
        return (self._matrices[src, dst] @ lift(affine) @ self._matrices[dst, src])[:2]

    def homography(self, h: np.ndarray, src: Frame, dst: Frame) -> np.ndarray:
        """Express a 3x3 homography (frame t-1 -> frame t, both in ``src``) in ``dst``,
        scaled so that its last element is 1."""
        mapped = self._matrices[src, dst] @ np.asarray(h, np.float64) @ self._matrices[dst, src]
        return mapped / mapped[2, 2]

    def to_working(self, image: np.ndarray) -> np.ndarray:
        """Letterbox an input-sized image into the 640x512 working frame."""
        return self.input_to_working.apply(image)


# The geometry of frames that already are 640x512 (the curriculum's, the benchmarks'), where
# INPUT and WORKING coincide.
WORKING_GEOMETRY = FrameGeometry(WORKING_SIZE)


@functools.lru_cache(maxsize=8)
def working_geometry(network_size: tuple[int, int] = NETWORK_SIZE) -> FrameGeometry:
    """:data:`WORKING_GEOMETRY` for a detector input of ``network_size``."""
    return FrameGeometry(WORKING_SIZE, tuple(network_size))


def box_iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one ``[x, y, w, h]`` box with each of ``boxes`` (n, 4), any one frame's px."""
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[0] + box[2], boxes[:, 0] + boxes[:, 2])
    y1 = np.minimum(box[1] + box[3], boxes[:, 1] + boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    return inter / (box[2] * box[3] + boxes[:, 2] * boxes[:, 3] - inter + 1e-12)
