"""Stage E: does the tracked thing move like a human? (§3.6)

Per frame, the track's ROI in the Stage-B pair (warped previous frame, current frame) is
resampled to 24x48 and Farneback flow is computed between them -- flow that is already
ego-compensated, since the first image is the warped previous frame. The ROI is cut into a
2x4 grid (head to legs); each cell gives its mean flow magnitude and a magnitude-weighted
4-bin orientation histogram: 40 numbers per frame. A 16-frame window of them goes to a small
1-D CNN (onnxruntime) that returns P(human motion). At run time (:class:`Verifier`) a track's
box wider than ``VerifierConfig.roi_max_aspect`` times its height -- the ROI's own shape -- is
first narrowed about its centre: a loose detector box would fill half the ROI with ground.

Where the pair comes from is the model's (its ONNX metadata ``emts_verifier_input``):
``"network"``, the paper's, cuts it from Stage B's channels (previous = L - D); ``"working"``
(the shipped model) from the 640x512 working frames, frame t-1 sampled through Stage A's
motion -- 2.5x the pixels on a small person (:class:`FrameView`).
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import cv2
import numpy as np

from emts.config import VerifierConfig
from emts.errors import BadInputError
from emts.geometry import Frame, FrameGeometry, lift
from emts.stages.c_detect.detector import check_output_values, load_session, model_metadata

DESCRIPTOR_SIZE = 40
DEFAULT_MODEL = "verifier.onnx"
_FARNEBACK = dict(
    pyr_scale=0.5, levels=2, winsize=7, iterations=3, poly_n=5, poly_sigma=1.1, flags=0
)


def _roi_affine(box: np.ndarray, config: VerifierConfig) -> np.ndarray:
    """2x3 map from the box's frame to the ``roi_size`` ROI (the box grown by ``roi_margin``)."""
    x, y, w, h = (float(v) for v in box)
    grow_w, grow_h = w * config.roi_margin, h * config.roi_margin
    src = np.float32(
        [[x - grow_w, y - grow_h], [x + w + grow_w, y - grow_h], [x - grow_w, y + h + grow_h]]
    )
    rw, rh = config.roi_size
    dst = np.float32([[0, 0], [rw, 0], [0, rh]])
    return cv2.getAffineTransform(src - 0.5, dst - 0.5)


def _crop(image: np.ndarray, affine: np.ndarray, config: VerifierConfig) -> np.ndarray:
    return cv2.warpAffine(
        image, affine, config.roi_size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )


def roi_pair(
    channels: np.ndarray, box: np.ndarray, config: VerifierConfig | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(warped previous, current) ROI crops, uint8, resampled to ``roi_size``, from Stage B's
    channels (the paper's Stage E input).

    Args:
        channels: the frame's (3, H, W) ``[L, R, D]``; the warped previous frame is L - D.
        box: ``[x, y, w, h]`` in NETWORK px.
    """
    c = config or VerifierConfig()
    affine = _roi_affine(box, c)
    current = channels[0]
    previous = channels[0] - channels[2]
    crops = [_crop(image, affine, c) for image in (previous, current)]
    # (np.minimum / np.maximum: np.clip's wrapper costs more than the two ufuncs here)
    return tuple(
        np.minimum(np.maximum(crop * 255.0 + 0.5, 0), 255).astype(np.uint8) for crop in crops
    )  # type: ignore[return-value]


def roi_pair_working(
    previous: np.ndarray,
    current: np.ndarray,
    motion: np.ndarray,
    box: np.ndarray,
    config: VerifierConfig | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(previous, current) ROI crops, uint8, from the 640x512 working frames: the previous
    frame sampled through the camera motion, so the pair is ego-compensated like Stage B's.

    Args:
        previous: the working frame t-1 (uint8 gray 640x512).
        current: the working frame t.
        motion: Stage A's 2x3 estimate, frame t-1 -> t, WORKING px.
        box: ``[x, y, w, h]`` in WORKING px (frame t).
    """
    c = config or VerifierConfig()
    affine = _roi_affine(box, c)
    return (
        _crop(previous, (lift(affine) @ lift(motion))[:2], c),
        _crop(current, affine, c),
    )


RESOLUTIONS = ("network", "working")
RESOLUTION_METADATA = "emts_verifier_input"  # ONNX metadata: which frames the model reads


@dataclass(frozen=True)
class FrameView:
    """What Stage E may look at on one frame.

    Attributes:
        channels: Stage B's (3, H, W) ``[L, R, D]`` at the network size.
        working: the 640x512 uint8 working frame t (needed by a ``"working"`` verifier).
        previous: working frame t-1 (None at a stream's start: no motion seen).
        motion: Stage A's 2x3 estimate t-1 -> t, WORKING px.
        geometry: the frame's geometry (NETWORK <-> WORKING).
    """

    channels: np.ndarray
    working: np.ndarray | None = None
    previous: np.ndarray | None = None
    motion: np.ndarray | None = None
    geometry: FrameGeometry | None = None

    def roi_pair(
        self, box: np.ndarray, resolution: str = "network", config: VerifierConfig | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ROI pair of ``box`` (NETWORK px) at Stage E's input ``resolution``."""
        if resolution == "network":
            return roi_pair(self.channels, box, config)
        if self.working is None or self.geometry is None:
            raise ValueError("a working-resolution verifier needs the working frames")
        box = self.geometry.boxes([box], Frame.NETWORK, Frame.WORKING)[0]
        if self.previous is None or self.motion is None:
            return roi_pair_working(self.working, self.working, np.eye(2, 3), box, config)
        return roi_pair_working(self.previous, self.working, self.motion, box, config)


def narrowed(box: np.ndarray, max_aspect: float | None) -> np.ndarray:
    """``box`` (``[x, y, w, h]``) no wider than ``max_aspect`` times its height, narrowed
    about its centre (None: as it is)."""
    x, y, w, h = (float(v) for v in box)
    if max_aspect is None or w <= max_aspect * h:
        return box
    return np.array([x + (w - max_aspect * h) / 2, y, max_aspect * h, h])


def describe(
    previous: np.ndarray, current: np.ndarray, config: VerifierConfig | None = None
) -> np.ndarray:
    """The 40-D motion descriptor of one ROI pair (float32)."""
    c = config or VerifierConfig()
    flow = cv2.calcOpticalFlowFarneback(previous, current, None, **_FARNEBACK)
    magnitude, angle = cv2.cartToPolar(flow[..., 0], flow[..., 1])
    bins = (angle / (2 * np.pi) * c.orientation_bins).astype(int) % c.orientation_bins
    columns, rows = c.grid
    cells, size = _cell_index(magnitude.shape, rows, columns)
    m = magnitude[: cells.shape[0], : cells.shape[1]].ravel()
    b = bins[: cells.shape[0], : cells.shape[1]].ravel()
    count, k = rows * columns, c.orientation_bins
    out = np.empty((count, 1 + k), np.float32)
    # per cell (head to legs, row-major): mean magnitude, then the magnitude-weighted
    # orientation histogram over the cell's pixels -- every cell in one pass
    histogram = np.bincount(cells.ravel() * k + b, weights=m, minlength=count * k)
    out[:, 0] = np.bincount(cells.ravel(), weights=m, minlength=count) / size
    out[:, 1:] = histogram.reshape(count, k) / size
    return out.reshape(-1)


@functools.cache
def _cell_index(shape: tuple[int, int], rows: int, columns: int) -> tuple[np.ndarray, int]:
    """(cell number of every pixel of the cells' area, pixels per cell) for a ``rows`` x
    ``columns`` grid over an image of ``shape`` (rows of pixels beyond the grid left out)."""
    rh, rw = shape[0] // rows, shape[1] // columns
    r, k = np.divmod(np.arange(rows * columns), columns)
    cells = np.repeat(np.repeat((r * columns + k).reshape(rows, columns), rh, 0), rw, 1)
    cells.setflags(write=False)
    return cells, rh * rw


def ground_travel(boxes, motions) -> float:
    """How far a track went over the ground across its ``boxes`` (``[x, y, w, h]``, one a
    frame), in its mean box heights: its first centre carried along with the scene by the
    camera ``motions`` (2x3 in the boxes' px; ``motions[i]`` takes frame i-1 to frame i, so
    ``motions[0]`` is not used; None: no motion known that frame) to the last frame, against
    its last centre. Stage E's training calls a person under
    :data:`emts.train.verifier.STILL_TRAVEL` still; the pipeline's auto-locks must pass
    :attr:`emts.config.AcquisitionConfig.autolock_min_travel`."""
    first, last = (
        np.asarray(b[:2], float) + np.asarray(b[2:], float) / 2 for b in (boxes[0], boxes[-1])
    )
    for m in list(motions)[1:]:
        if m is not None:
            first = m[:, :2] @ first + m[:, 2]
    return float(np.hypot(*(last - first)) / max(np.mean([b[3] for b in boxes]), 1e-6))


def default_model_path() -> Path:
    return Path(str(resources.files("emts") / "models" / DEFAULT_MODEL))


class Verifier:
    """Keeps the last 16 descriptors of the locked track and classifies them on demand.

    Args:
        model: ONNX verifier (default: the shipped one).
        config: Stage E parameters.
        threads: onnxruntime intra-op threads.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        config: VerifierConfig | None = None,
        threads: int = 1,
    ) -> None:
        self.config = config or VerifierConfig()
        path = Path(model) if model is not None else default_model_path()
        self.session = load_session(path, "verifier", threads)
        inputs, outputs = self.session.get_inputs(), self.session.get_outputs()
        shape = list(inputs[0].shape) if len(inputs) == 1 else []
        if len(shape) != 3 or shape[1] != DESCRIPTOR_SIZE or len(outputs) != 1:
            raise BadInputError(
                f"{path} is not an EMTS verifier (input {shape}, {len(outputs)} outputs; expected "
                f"one (batch, {DESCRIPTOR_SIZE}, frames) input and one output); pass a verifier "
                ".onnx"
            )
        self.input_name = inputs[0].name
        self._check_scores(path)
        self.resolution = model_metadata(self.session, RESOLUTION_METADATA) or "network"
        if self.resolution not in RESOLUTIONS:
            raise BadInputError(
                f"{path}: unknown Stage E input {self.resolution!r} in its metadata "
                f"(expected one of {', '.join(RESOLUTIONS)})"
            )
        self.window: deque[np.ndarray] = deque(maxlen=self.config.window)
        self.fps = self.config.reference_fps

    def _check_scores(self, path: Path) -> None:
        """Refuse a model that does not give one score per window, before it runs a frame:
        one dry run on two zero windows (a fraction of a millisecond)."""
        windows = np.zeros((2, DESCRIPTOR_SIZE, self.config.window), np.float32)
        try:
            scores = self.session.run(None, {self.input_name: windows})[0]
            shape = np.shape(scores)
        except Exception as error:  # onnxruntime / LiteRT raise their own exception types
            reason = str(error).strip().splitlines()[-1] if str(error).strip() else "unknown"
            raise BadInputError(
                f"{path} is not a working EMTS verifier: it fails on {self.config.window}-frame "
                f"windows ({reason}); pass a verifier .onnx"
            ) from None
        if shape[:1] != (2,) or int(np.prod(shape)) != 2:
            raise BadInputError(
                f"{path} is not an EMTS verifier: for 2 windows it gives an output of shape "
                f"{shape}; expected one score per window, (2, 1); pass a verifier .onnx"
            )
        where = f"for {self.config.window}-frame zero windows"
        check_output_values([scores], path, where, "verifier")

    def reset(self) -> None:
        self.window.clear()

    def observe(self, view: FrameView | np.ndarray, box: np.ndarray) -> None:
        """Add this frame's descriptor of the track's ROI (box in NETWORK px); ``view`` is the
        frame (:class:`FrameView`), or Stage B's channels alone for a ``"network"`` model.

        Flow is measured per frame; at ``fps`` other than the 30 fps the model was trained at,
        its magnitudes are rescaled to px per 1/30 s (the descriptor is linear in them), so a
        walker at 10 fps does not look three times faster than a walker.
        """
        if not isinstance(view, FrameView):
            view = FrameView(view)
        descriptor = self.describe(view, box)
        self.window.append(descriptor * np.float32(self.fps / self.config.reference_fps))

    def describe(self, view: FrameView, box: np.ndarray) -> np.ndarray:
        """The descriptor of a track's ``box`` (NETWORK px) on ``view``'s frame as Stage E
        reads it: at the model's resolution, the box narrowed to ``config.roi_max_aspect``
        (NETWORK px are WORKING px scaled alike in x and y: the same shape in both); flow in
        px a frame (:meth:`observe` rescales it to the model's frame rate)."""
        c = self.config
        return describe(*view.roi_pair(narrowed(box, c.roi_max_aspect), self.resolution, c), c)

    @property
    def ready(self) -> bool:
        return len(self.window) == self.config.window

    def probability(self) -> float | None:
        """P(human motion) of the current window, or None until 16 frames are in."""
        if not self.ready:
            return None
        return float(self.classify(np.stack(self.window, axis=1)[None])[0])

    def classify(self, windows: np.ndarray) -> np.ndarray:
        """P(human) for (B, 40, 16) descriptor windows."""
        logits = self.session.run(None, {self.input_name: windows.astype(np.float32)})[0]
        return 0.5 * (1.0 + np.tanh(0.5 * logits.reshape(-1)))  # the logistic, overflow-free


class VerificationSchedule:
    """Stage E on the multi-rate schedule of §3.7 for the one locked track.

    Observes the track's ROI every frame and classifies every ``config.every``-th frame once
    the 16-frame window is full. A verdict computed at frame t reaches Stage D with frame t+1
    (:meth:`verdict_for_tracker`).

    Args:
        verifier: the model (anything with ``observe``, ``ready``, ``probability``, ``reset``);
            None disables Stage E (every verdict is None, nothing is ever verified).
        config: Stage E parameters.
    """

    def __init__(self, verifier: Verifier | None, config: VerifierConfig | None = None) -> None:
        self.verifier = verifier
        self.config = config or VerifierConfig()
        self.reset()

    def reset(self) -> None:
        """Forget the track: window, schedule, verdicts."""
        if self.verifier is not None:
            self.verifier.reset()
        self._since_classified = 0
        self._pending_verdict: bool | None = None
        self.p_human: float | None = None  # last probability for this track
        self.classified: float | None = None  # probability computed on the last step, if any
        self.verified = False  # the verifier accepted this track at its last classification
        # the track's boxes over the window (NETWORK px) and the camera motion into each
        # frame as Stage A gives it (WORKING px, with the frame's geometry; None: none known):
        # how far it went over the ground (:func:`ground_travel`, at classifications only)
        self._boxes: deque[np.ndarray] = deque(maxlen=self.config.window)
        self._motions: deque[tuple | None] = deque(maxlen=self.config.window)
        self.travel: float | None = None  # at the last classification (see travel_now)

    def verdict_for_tracker(self) -> bool | None:
        """The verdict from the previous frame's classification (once), else None."""
        verdict, self._pending_verdict = self._pending_verdict, None
        return verdict

    def step(
        self,
        view: FrameView,
        box: np.ndarray | None,
        restart: bool,
        min_travel: float | None = None,
    ) -> float | None:
        """Observe this frame's track ROI (``box`` in NETWORK px; None: no track).

        Args:
            restart: the track was (re-)locked this frame: start a new window.
            min_travel: a classification passes only where the track also covered at least
                this many of its heights over the ground in the window (:meth:`travel_now`):
                a still track is vetoed whatever P(human) (the pipeline's auto-locks:
                :attr:`emts.config.AcquisitionConfig.autolock_min_travel`). None: P(human)
                alone decides.

        Returns:
            P(human) if the track was classified this frame, else None.
        """
        self.classified = None
        if restart or box is None:
            self.reset()
        if self.verifier is None or box is None:
            return None
        self.verifier.observe(view, box)
        self._boxes.append(np.array(box, float))
        known = view.motion is not None and view.geometry is not None
        self._motions.append((view.motion, view.geometry) if known else None)
        self._since_classified += 1
        if not self.verifier.ready or self._since_classified < self.config.every:
            return None
        self._since_classified = 0
        p = self.verifier.probability()
        self.p_human = self.classified = p
        self.travel = self.travel_now()
        still = min_travel is not None and self.travel is not None and self.travel < min_travel
        self.verified = p is not None and p >= self.config.threshold and not still
        self._pending_verdict = None if p is None else self.verified
        return p

    def travel_now(self) -> float | None:
        """Ground the track covered over the observed window (:func:`ground_travel` of the
        tracker's boxes). None before two frames are in."""
        if len(self._boxes) < 2:
            return None
        # mapped to NETWORK px here, not on every frame (the first frame's is never used)
        motions = [None] + [
            None if m is None else m[1].motion(m[0], Frame.WORKING, Frame.NETWORK)
            for m in list(self._motions)[1:]
        ]
        return ground_travel(self._boxes, motions)
