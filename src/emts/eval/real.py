"""The real-footage development suite (issue 8): ``emts eval real``.

Real footage is the judge. Three sets of real frames, every detector on the same frames:

* **uav123-person12**, frames 1-201: a real RGB drone follow clip (one person walking across a
  sunlit plaza, 640x360). Every frame goes through Stages A-C as a user's video would (frame
  1 has no motion channels yet; it is counted). Recall of the person at tau_s (a detection
  with IoU >= 0.25 to the label), false positives per frame at tau_s (detections whose centre
  is farther than the person's height from the label's centre), AP@0.25 and AP@0.5.
* **HIT-UAV val**, real thermal stills as 4-frame pseudo-clips (last frame scored): each
  person cut out, the hole inpainted, walking 0.5-1.5 px/frame at 640x512 in a random
  direction; the camera drifts at up to 4 px/frame. Variant ``persons``: only persons move;
  ``vehicles``: the image's vehicles also drive (0.5-3 px/frame) as unlabeled movers.
* Detectors: every model given (``--model NAME=PATH``, the shipped one always), each also in
  the channel ablation (``L only``: R = D = 0; ``motion only``: L flattened to its mean), and
  the classical compensated-difference baseline of the issue, with its threshold multiplier
  swept (:class:`CompensatedDifference`).

Everything is matched in WORKING pixels (640x512); AP is pycocotools' (:func:`coco_ap`).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.config import NETWORK_SIZE, WORKING_SIZE, ChannelConfig
from emts.errors import BadInputError
from emts.eval.metrics import ImageResult, _iou, coco_ap, match
from emts.front_end import MotionFrontEnd, channel_key, key_config
from emts.geometry import Frame, FrameGeometry
from emts.modality import DEFAULT, VARIANT_FOR, frame_modality
from emts.stages.b_channels import MotionChannels, content_mask, network_content
from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT, MotionCheck, with_evidence
from emts.stages.c_detect.detector import Detector
from emts.stages.c_detect.fusion import (
    FusionConfig,
    blob_features,
    compensated_residual,
    fusion_config,
)
from emts.stages.c_detect.stage import shipped_detector
from emts.stages.c_detect.temporal import TemporalDetector
from emts.stages.d_track.tracker import AppearanceView
from emts.synth.camera import REFERENCE_WIDTH, CameraMotionConfig
from emts.synth.plates import read_hituav
from emts.synth.tier2 import pseudo_clip

TAU_S = 0.3  # §6: the detection threshold a user runs at
MATCH_IOU = 0.25
EVAL_THRESHOLD = 0.01  # keep low scores for the PR curves
PERSON12_FRAMES = 201  # frames 1-201 are labelled
K_SWEEP = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0, 24.0)
HEIGHT_BINS = ((0, 12), (12, 20), (20, 32), (32, 1e9))  # WORKING px (640x512), the bins
HEIGHT_LABELS = ("<12", "12-20", "20-32", ">=32")
# the nearest other labelled person's centre, in this person's heights: people in a group
# (half of HIT-UAV val's persons are under 1.5 heights from another), a little apart, alone
SPACING_EDGES = (1.5, 3.0)
SPACING_LABELS = ("<1.5h", "1.5-3h", ">=3h or alone")
PERSON_SPEED = (0.5, 1.5)  # px/frame at 640x512
VEHICLE_SPEED = (0.5, 3.0)
CAMERA_DRIFT = 4.0  # px/frame at 640x512
HITUAV_VARIANTS = {"persons": "only persons move", "vehicles": "persons and vehicles move"}
SHEET_TILES = 16

Boxes = tuple[np.ndarray, np.ndarray]  # (n, 4) WORKING px, (n,) scores


# --------------------------------------------------------------------------------------------
# Frames


@dataclass
class EvalFrame:
    """One scored frame: Stage B's channels, the working frames and the truth (WORKING px)."""

    name: str
    channels: np.ndarray  # (3, H, W) float32 at the geometry's network size
    working: np.ndarray  # uint8 640x512, frame t
    previous: np.ndarray | None  # uint8 640x512, frame t-1 (None on a stream's first frame)
    motion: np.ndarray  # 2x3 Stage A estimate, WORKING, t-1 -> t
    valid: np.ndarray  # uint8 640x512 mask of the letterbox content
    geometry: FrameGeometry
    gt: np.ndarray  # (m, 4) person boxes, WORKING px
    # Stage B at further network sizes (detectors trained at another size), same Stage A
    more_channels: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    motion_known: bool = True  # Stage A estimated M_t (not the identity of a first frame)
    # a clip's earlier frames with a known motion, oldest first, for Stage C's temporal mode:
    # ({network size: channels}, M_t WORKING); None: the frame continues the previous one's
    # stream (uav123-person12)
    history: list[tuple[dict[tuple[int, int], np.ndarray], np.ndarray]] | None = None
    # the colour input frame, where there is one (Stage C's box fit: emts.stages.c_detect.boxfit)
    colour: AppearanceView | None = None
    # the key (emts.front_end.channel_key) of ``channels``: None, the geometry's network size
    key: tuple | None = None

    def channels_at(self, key: tuple) -> np.ndarray:
        """Stage B's channels of ``key``: a network size (w, h) with the paper's warp, or
        (w, h, warp) (:func:`emts.front_end.channel_key`)."""
        key = tuple(key)
        if key == (self.key or self.geometry.network_size):
            return self.channels
        return self.more_channels[key]

    def geometry_at(self, size: tuple) -> FrameGeometry:
        """The frame's geometry with a NETWORK frame of ``size`` (a channel key's first two)."""
        size = tuple(size[:2])
        if size == self.geometry.network_size:
            return self.geometry
        return _geometry(self.geometry.input_size, size)

    @classmethod
    def of(
        cls,
        name: str,
        result,
        previous: np.ndarray | None,
        gt: np.ndarray,
        more: MoreSizes | None = None,
        key: tuple | None = None,
    ) -> EvalFrame:
        """The frame of a :class:`emts.front_end.FrontEndResult` (Stages A and B's output,
        channels of ``key``); ``more`` adds Stage B at further network sizes and warps."""
        return cls(
            name=name,
            channels=result.channels,
            working=result.working,
            previous=previous,
            motion=np.asarray(result.motion.matrix),
            valid=result.geometry.input_to_working.content_mask(),
            geometry=result.geometry,
            gt=gt,
            more_channels=more(result) if more is not None else {},
            motion_known=result.motion.method != "identity",
            key=key,
        )


class MoreSizes:
    """Stage B at further network sizes and warps (channel keys, :func:`_front_end`), on one
    stream's Stage A results (so that detectors trained at different sizes are compared on
    the same camera-motion estimates)."""

    def __init__(self, keys) -> None:
        self.stages = {
            tuple(key): MotionChannels(_stage_b(key), network_size=key[:2]) for key in keys
        }

    def __call__(self, result) -> dict[tuple, np.ndarray]:
        out = {}
        for key, stage in self.stages.items():
            content = network_content(_geometry(result.geometry.input_size, key[:2]))
            out[key] = stage.update(result.working, result.motion, content)
        return out


def _stage_b(key: tuple) -> ChannelConfig:
    """Stage B's parameters of a channel key (:func:`emts.front_end.key_config`)."""
    return key_config(key)


def _front_end(key: tuple) -> MotionFrontEnd:
    """Stages A and B making the channels of ``key`` (:func:`emts.front_end.channel_key`)."""
    return MotionFrontEnd(channel_config=_stage_b(key), network_size=key[:2])


@functools.lru_cache(maxsize=16)
def _geometry(input_size: tuple[int, int], network_size: tuple[int, int]) -> FrameGeometry:
    return FrameGeometry(input_size, network_size)


def _sizes(network_sizes) -> tuple[tuple, list[tuple]]:
    """(the first, the others) of a list of network sizes or channel keys (default: the
    paper's size)."""
    sizes = list(dict.fromkeys(tuple(s) for s in network_sizes or [NETWORK_SIZE]))
    return sizes[0], sizes[1:]


def person12_frames(
    root: str | Path, frames: int = PERSON12_FRAMES, network_sizes=None
) -> Iterator[EvalFrame]:
    """Frames 1..``frames`` of uav123-person12 through Stages A-B, with their labels
    (Stage B at every size of ``network_sizes``; default: the paper's)."""
    root = Path(root)
    labels_path = root / "groundtruth_rect.txt"
    if not labels_path.is_file():
        raise BadInputError(
            f"{root}: no groundtruth_rect.txt (expected the uav123-person12 folder)"
        )
    try:
        labels = np.loadtxt(labels_path, delimiter=",", ndmin=2)[:frames]
    except ValueError as error:
        raise BadInputError(f"{labels_path}: unreadable labels ({error})") from None
    if labels.shape[1] != 4 or len(labels) < frames:
        raise BadInputError(f"{labels_path}: expected {frames} lines of x,y,w,h")
    first, others = _sizes(network_sizes)
    front = _front_end(first)
    more = MoreSizes(others) if others else None
    previous = None
    for i in range(frames):
        path = root / "frames" / f"{i + 1:06d}.jpg"
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise BadInputError(f"{path}: missing or unreadable")
        result = front.step(image)
        gt = result.geometry.boxes(labels[i : i + 1], Frame.INPUT, Frame.WORKING)
        frame = EvalFrame.of(f"{i + 1:06d}", result, previous, gt, more, first)
        frame.colour = AppearanceView(image, result.geometry.matrix(Frame.WORKING, Frame.INPUT))
        yield frame
        previous = result.working


def eval_camera() -> CameraMotionConfig:
    """Constant drift (set per clip, up to CAMERA_DRIFT px/frame at 640 px), no gusts."""
    return CameraMotionConfig(
        max_drift=CAMERA_DRIFT * REFERENCE_WIDTH / WORKING_SIZE[0], smoothness=1.0, gust_rate=0.0
    )


def hituav_frames(
    root: str | Path,
    split: str,
    variant: str,
    seed: int = 0,
    images: int | None = None,
    network_sizes=None,
) -> Iterator[EvalFrame]:
    """HIT-UAV stills of ``split`` as 4-frame pseudo-clips; the last frame of each (Stage B at
    every size of ``network_sizes``; default: the paper's)."""
    if variant not in HITUAV_VARIANTS:
        raise BadInputError(f"unknown HIT-UAV variant {variant!r}")
    root = Path(root)
    entries = read_hituav(root, split)[:images]
    camera = eval_camera()
    first, others = _sizes(network_sizes)
    for number, (name, entry) in enumerate(entries):
        still = cv2.imread(str(root / split / name), cv2.IMREAD_GRAYSCALE)
        if still is None:
            raise BadInputError(f"{root / split / name}: missing or unreadable")
        rng = np.random.default_rng([seed, number])
        clip = pseudo_clip(
            still,
            entry["persons"],
            rng,
            frames=4,
            vehicle_boxes=entry["vehicles"] if variant == "vehicles" else [],
            zoom=False,
            person_speed=PERSON_SPEED,
            vehicle_speed=VEHICLE_SPEED,
            random_heading=True,
            camera=camera,
            drift=CAMERA_DRIFT,
        )
        front = _front_end(first)
        more = MoreSizes(others) if others else None
        results = [front.step(frame) for frame in clip.frames]
        history = []
        for result in results[:-1]:
            channels = {first: result.channels, **(more(result) if more is not None else {})}
            if result.motion.method != "identity":
                history.append((channels, np.asarray(result.motion.matrix)))
        last = results[-1]
        gt = last.geometry.boxes(clip.person_boxes[-1], Frame.INPUT, Frame.WORKING)
        frame = EvalFrame.of(name, last, results[-2].working, gt.reshape(-1, 4), more, first)
        frame.history = history
        yield frame


# --------------------------------------------------------------------------------------------
# Detectors


class CompensatedDifference:
    """The issue's classical baseline, at full 640x512 working resolution.

    Stage A's motion (corners + LK + RANSAC similarity at half resolution) warps the previous
    frame onto the current one; residual = Gauss5x5(|I_t - warped|); threshold T = k x the
    frame's median residual; morphological close 5x5; connected components; box = blob;
    score = m / (m + T) with m the blob's mean residual. Pixels the warp brings in from
    outside the previous frame and the letterbox padding are excluded (they hold no image).
    One call returns the detections for every k in ``ks``.
    """

    def __init__(self, ks: tuple[float, ...] = K_SWEEP, max_detections: int = 100) -> None:
        self.ks = tuple(ks)
        self.max_detections = max_detections
        self._kernel = np.ones((5, 5), np.uint8)

    def residual(self, frame: EvalFrame) -> tuple[np.ndarray, np.ndarray]:
        """(residual float32, valid bool) at WORKING resolution."""
        size = WORKING_SIZE
        if frame.previous is None:
            return np.zeros((size[1], size[0]), np.float32), np.zeros((size[1], size[0]), bool)
        current = frame.working.astype(np.float32)
        warped = cv2.warpAffine(
            frame.previous.astype(np.float32),
            frame.motion,
            size,
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )
        inside = cv2.warpAffine(frame.valid, frame.motion, size, flags=cv2.INTER_NEAREST)
        valid = cv2.erode(np.minimum(inside, frame.valid), self._kernel) > 0
        residual = cv2.GaussianBlur(np.abs(current - warped), (5, 5), 0)
        return residual, valid

    def __call__(self, frame: EvalFrame) -> dict[float, Boxes]:
        residual, valid = self.residual(frame)
        out: dict[float, Boxes] = {}
        median = float(np.median(residual[valid])) if valid.any() else 0.0
        for k in self.ks:
            threshold = max(k * median, 1e-3)
            mask = ((residual > threshold) & valid).astype(np.uint8)
            mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, self._kernel)
            count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
            if count <= 1:
                out[k] = (np.zeros((0, 4)), np.zeros(0))
                continue
            sums = np.bincount(labels.ravel(), weights=residual.ravel(), minlength=count)
            mean = sums[1:] / np.maximum(stats[1:, cv2.CC_STAT_AREA], 1)
            scores = mean / (mean + threshold)
            boxes = stats[1:, :4].astype(float)
            order = np.argsort(-scores)[: self.max_detections]
            out[k] = (boxes[order], scores[order])
        return out


ChannelFn = Callable[[np.ndarray, EvalFrame], np.ndarray]
RAW_LEVEL = "residual level not normalized"
# the pipeline's boxes as the network gives them (emts.stages.c_detect.boxfit)
UNFITTED = "boxes not fitted"
# Stage C's temporal mode (emts.stages.c_detect.temporal), the pipeline's default
TEMPORAL = "temporal scores"
ABLATIONS: dict[str, ChannelFn] = {
    "full": lambda c, f: c,
    "L only": lambda c, f: np.concatenate([c[:1], np.zeros_like(c[1:])]),
    "motion only": lambda c, f: np.concatenate([np.full_like(c[:1], c[0].mean()), c[1:]]),
}


def temporal_boxes(stage: TemporalDetector, frame: EvalFrame) -> Boxes:
    """Detections of Stage C's temporal mode on ``frame`` (WORKING px): a frame with a
    ``history`` starts a new clip (the memory is reset and fed the clip's earlier frames),
    one without continues the stream of the frame before."""
    key = channel_key(stage)
    geometry = frame.geometry_at(key)
    if frame.history is not None:
        stage.reset()
        for channels, matrix in frame.history:
            stage.detect_working(channels[key], matrix, geometry)
    motion = frame.motion if frame.motion_known else None
    detections = stage.detect_working(frame.channels_at(key), motion, geometry)
    boxes = np.array([d.box for d in detections], float).reshape(-1, 4)
    if len(boxes):
        boxes = geometry.boxes(boxes, Frame.NETWORK, Frame.WORKING)
    return boxes, np.array([d.score for d in detections], float)


def pipeline_boxes(
    boxes: np.ndarray, scores: np.ndarray, frame: EvalFrame, config=DEFAULT_BOX_FIT
) -> Boxes:
    """What the pipeline makes of Stage C's ``boxes`` (WORKING px) on a colour frame: the
    colour evidence (:func:`emts.stages.c_detect.boxfit.with_evidence` at tau_s: the best boxes
    from tau_s -
    its bonus fitted to the person's own pixels, scored up where they fit and move, down
    where they do not move); every other
    box (only the PR curves see those) as it is."""
    if frame.colour is None or not len(boxes):
        return boxes, scores
    motion = MotionCheck(frame.channels, frame.geometry)
    return with_evidence(frame.colour, boxes, scores, config, TAU_S, motion)


def padding_masked(channels: np.ndarray, frame: EvalFrame) -> np.ndarray:
    """R and D zeroed outside the letterbox content (Stage B zeroes only the 8 side columns of
    the network frame; the replicated top/bottom rows of a 16:9 input move with the camera)."""
    inside = content_mask(frame.geometry_at((channels.shape[-1], channels.shape[-2])))
    out = channels.copy()
    out[1:, ~inside] = 0.0
    return out


FUSED_NAME = "fused"  # Stage C mode fused on the shipped model
FIT_EVERY = 5  # fit_fusion: every 5th HIT-UAV train still
FIT_L2 = 1e-3


def fused_boxes(
    frame: EvalFrame, heads: list[np.ndarray], config: FusionConfig
) -> tuple[Boxes, np.ndarray]:
    """Stage C's ``fused`` mode on one frame (:mod:`emts.stages.c_detect.fusion`): (boxes WORKING
    px, scores)
    of the best ``max_detections`` blobs, and their features."""
    if frame.previous is None:
        return (np.zeros((0, 4)), np.zeros(0)), np.zeros((0, len(config.weights)))
    residual, valid = compensated_residual(frame.working, frame.previous, frame.motion, frame.valid)
    boxes, features, _ = blob_features(residual, valid, config.k, heads)
    scores = 1 / (1 + np.exp(-(features @ np.asarray(config.weights) + config.bias)))
    order = np.argsort(-scores)[: config.max_detections]
    return (boxes[order], scores[order]), features[order]


def fit_fusion(
    hituav: str | Path,
    split: str = "train",
    k: float = 4.0,
    seed: int = 0,
    every: int = FIT_EVERY,
    network_size: tuple[int, int] | None = None,
) -> FusionConfig:
    """Fit the fused mode's logistic blend on HIT-UAV ``split`` pseudo-clips (both variants,
    every ``every``-th still): a blob is positive when it overlaps a person at IoU >= 0.25.
    Newton steps on standardized features with an L2 of ``FIT_L2``. ``network_size``: the
    shipped network run at that size (default: its own)."""
    detector = Detector(threshold=EVAL_THRESHOLD, network_size=network_size)
    sizes = [detector.network_size]
    xs, ys = [], []
    for variant in HITUAV_VARIANTS:
        for i, frame in enumerate(hituav_frames(hituav, split, variant, seed, None, sizes)):
            if i % every:
                continue
            if frame.previous is None:
                continue
            heads = [h[0] for h in detector.raw(frame.channels, FusionConfig.residual_reference)]
            residual, valid = compensated_residual(
                frame.working, frame.previous, frame.motion, frame.valid
            )
            boxes, features, _ = blob_features(residual, valid, k, heads)  # every blob
            if not len(boxes):
                continue
            positive = np.zeros(len(boxes))
            for g in frame.gt:
                positive = np.maximum(positive, _iou(g, boxes) >= MATCH_IOU)
            xs.append(features)
            ys.append(positive)
    x, y = np.vstack(xs), np.concatenate(ys)
    mean, std = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    for _ in range(30):
        p = 1 / (1 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + FIT_L2 * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + FIT_L2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    weights = w[:-1] / std
    bias = float(w[-1] - (mean * weights).sum())
    return FusionConfig(
        k=k, weights=tuple(round(float(v), 3) for v in weights), bias=round(bias, 3)
    )


def fit_box_scale(
    model: str | Path,
    hituav: str | Path,
    network_sizes: list[tuple[int, int]],
    split: str = "train",
    seed: int = 0,
    images: int | None = None,
) -> dict[str, float]:
    """``{"WxH": factor}``: per network size, the median over HIT-UAV ``split`` pseudo-clips
    (persons moving) of truth size / box size (geometric mean of width and height) of the
    detections at tau_s that match a person at IoU >= 0.25. A network run larger than it was
    trained at draws its boxes too small (the shipped one at 512x384: by 0.87, on thermal
    stills and on the RGB clip alike); the factor is what ``emts export --fit-box-scale``
    records for :class:`emts.stages.c_detect.detector.Detector`."""
    scales = {}
    for size in network_sizes:
        detector = Detector(model, threshold=TAU_S, network_size=size)
        detector.box_scale = 1.0  # fit on the raw boxes, whatever the model records already
        ratios = []
        frames = hituav_frames(hituav, split, "persons", seed, images, [channel_key(detector)])
        label = "box scale at {}x{}".format(*size)
        for frame in tqdm(frames, desc=label, unit="still", disable=None):
            boxes, _ = network_boxes(detector, frame, frame.channels)
            if not len(boxes):
                continue
            for truth in frame.gt:
                overlap = _iou(truth, boxes)
                best = int(np.argmax(overlap))
                if overlap[best] >= MATCH_IOU:
                    area = truth[2] * truth[3] / (boxes[best, 2] * boxes[best, 3])
                    ratios.append(0.5 * np.log(area))  # log of the geometric-mean size ratio
        if not ratios:
            raise BadInputError(f"box scale at {size[0]}x{size[1]}: no matched person to fit on")
        scales["{}x{}".format(*size)] = round(float(np.exp(np.median(ratios))), 3)
    return scales


def _letterboxed(frame: EvalFrame) -> bool:
    letterbox = frame.geometry.input_to_working
    return letterbox.content != letterbox.size


def network_boxes(
    detector: Detector,
    frame: EvalFrame,
    channels: np.ndarray,
    residual_reference: float | None = None,
) -> Boxes:
    """Detections of ``detector`` on ``channels`` (residual level normalized to
    ``residual_reference``, by default the detector's own), mapped to WORKING px."""
    detections = detector(channels, residual_reference)
    boxes = np.array([d.box for d in detections], float).reshape(-1, 4)
    if len(boxes):
        geometry = frame.geometry_at(detector.network_size)
        boxes = geometry.boxes(boxes, Frame.NETWORK, Frame.WORKING)
    return boxes, np.array([d.score for d in detections], float)


# --------------------------------------------------------------------------------------------
# Metrics


def _centres(boxes: np.ndarray) -> np.ndarray:
    return boxes[:, :2] + boxes[:, 2:] / 2


def person_metrics(results: list[ImageResult], tau: float = TAU_S) -> dict:
    """One labelled person per frame: recall, FP/frame (centre farther than the person's
    height from the label's centre), AP. ``results`` gt holds exactly one box per frame."""
    found, false_positives = 0, 0
    for image in results:
        gt = image.gt_boxes[0]
        keep = image.scores >= tau
        boxes = image.boxes[keep]
        if len(boxes) and (_iou(gt, boxes) >= MATCH_IOU).any():
            found += 1
        distance = np.hypot(*(_centres(boxes) - _centres(gt[None])).T) if len(boxes) else []
        false_positives += int(np.sum(np.asarray(distance) > gt[3]))
    ap = coco_ap(results)
    frames = len(results)
    return {
        "frames": frames,
        f"recall@{tau:g}": round(found / frames, 4) if frames else None,
        f"fp_per_frame@{tau:g}": round(false_positives / frames, 4) if frames else None,
        "AP@0.25": round(ap["AP@0.25"], 4),
        "AP@0.5": round(ap["AP@0.5"], 4),
        "_precision": ap["precision"],
    }


def spacings(boxes: np.ndarray) -> np.ndarray:
    """Each box's distance to the nearest other box's centre, in its own heights (inf where
    it is alone)."""
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    centres = _centres(boxes)
    distance = np.hypot(*(centres[:, None] - centres[None]).transpose(2, 0, 1))
    np.fill_diagonal(distance, np.inf)
    nearest = distance.min(axis=1) if len(boxes) > 1 else np.full(len(boxes), np.inf)
    return nearest / np.maximum(boxes[:, 3], 1e-6)


def recall_by_spacing(
    results: list[ImageResult],
    tau: float = TAU_S,
    edges: tuple[float, ...] = SPACING_EDGES,
    labels: tuple[str, ...] = SPACING_LABELS,
) -> dict:
    """Recall at ``tau`` (IoU 0.25, one-to-one) of the labelled persons binned by
    :func:`spacings` at ``edges`` (in the person's heights; ``labels``: one more than edges)."""
    counts = {label: [0, 0] for label in labels}
    for image in results:
        matched = {g for g, _, _ in match(image, tau, MATCH_IOU)}
        for g, spacing in enumerate(spacings(image.gt_boxes)):
            label = labels[int(np.searchsorted(edges, spacing, side="right"))]
            counts[label][0] += 1
            counts[label][1] += g in matched
    return {
        label: {"persons": n, "recall": round(k / n, 4) if n else None}
        for label, (n, k) in counts.items()
    }


def multi_person_metrics(results: list[ImageResult], tau: float = TAU_S) -> dict:
    """AP, recall and FP/image at tau (IoU 0.25, one-to-one), recall by height (WORKING px)
    and by the nearest other person's distance (:func:`spacings`, :data:`SPACING_EDGES`),
    and the width ratio of matched boxes (detection / truth, p10-p50-p90)."""
    ap = coco_ap(results)
    persons = found = false_positives = 0
    by_bin = {label: [0, 0] for label in HEIGHT_LABELS}
    ratios = []
    for image in results:
        matches = match(image, tau, MATCH_IOU)
        matched = {g: d for g, d, _ in matches}
        persons += len(image.gt_boxes)
        found += len(matches)
        false_positives += int((image.scores >= tau).sum()) - len(matches)
        for g, box in enumerate(image.gt_boxes):
            label = next(
                lab
                for (lo, hi), lab in zip(HEIGHT_BINS, HEIGHT_LABELS, strict=True)
                if lo <= box[3] < hi
            )
            by_bin[label][0] += 1
            if g in matched:
                by_bin[label][1] += 1
                ratios.append(image.boxes[matched[g]][2] / max(box[2], 1e-6))
    images = len(results)
    widths = np.percentile(ratios, [10, 50, 90]).round(2).tolist() if ratios else None
    return {
        "images": images,
        "persons": persons,
        "AP@0.25": round(ap["AP@0.25"], 4),
        "AP@0.5": round(ap["AP@0.5"], 4),
        f"recall@{tau:g}": round(found / persons, 4) if persons else None,
        f"fp_per_image@{tau:g}": round(false_positives / images, 4) if images else None,
        "recall_by_height": {
            label: {"persons": n, "recall": round(k / n, 4) if n else None}
            for label, (n, k) in by_bin.items()
        },
        "recall_by_spacing": recall_by_spacing(results, tau),
        "width_ratio_p10_p50_p90": widths,
        "_precision": ap["precision"],
    }


# --------------------------------------------------------------------------------------------
# Running a dataset


@dataclass
class DatasetRun:
    """Detections of every detector on one dataset, and what the sheets need."""

    frames: list[EvalFrame] = field(default_factory=list)
    detections: dict[str, list[Boxes]] = field(default_factory=dict)

    def results(self, name: str) -> list[ImageResult]:
        return [
            ImageResult(f.gt, np.zeros(len(f.gt), bool), boxes, scores)
            for f, (boxes, scores) in zip(self.frames, self.detections[name], strict=True)
        ]


def classical_name(k: float) -> str:
    return f"classical k={k:g}"


def auto_detector(first_image: str | Path) -> tuple[str, Detector]:
    """(variant, detector): the shipped detector ``--model auto`` runs on a set whose frames
    are read like ``first_image`` (:mod:`emts.modality`), at its own run size."""
    image = cv2.imread(str(first_image), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise BadInputError(f"{first_image}: missing or unreadable")
    variant = VARIANT_FOR.get(frame_modality(image), DEFAULT)
    return variant, shipped_detector(variant, threshold=EVAL_THRESHOLD)


AUTO_PREFIX = "--model auto"


def auto_name(variant: str) -> str:
    return f"{AUTO_PREFIX}: {variant} ({TEMPORAL})"


def run_dataset(
    frames: Iterator[EvalFrame],
    detectors: dict[str, Detector],
    desc: str,
    total: int | None = None,
    classical: CompensatedDifference | None = None,
    fusion: FusionConfig | None = None,
    auto: tuple[str, Detector] | None = None,
) -> DatasetRun:
    """Run every detector (each in every ablation), the classical sweep and, with ``fusion``,
    Stage C's ``fused`` mode on the shipped model (:data:`FUSED_NAME`) on each frame; with
    ``auto`` (:func:`auto_detector`), what the pipeline runs by default on these frames."""
    run = DatasetRun()
    temporal = {model: TemporalDetector(detector) for model, detector in detectors.items()}
    auto_stage = None if auto is None else (auto_name(auto[0]), TemporalDetector(auto[1]))
    for frame in tqdm(frames, desc=desc, total=total, unit="frame", disable=None):
        if auto_stage is not None:
            name, stage = auto_stage
            boxes, scores = temporal_boxes(stage, frame)
            run.detections.setdefault(name, []).append(pipeline_boxes(boxes, scores, frame))
            if frame.colour is not None:
                run.detections.setdefault(f"{name} ({UNFITTED})", []).append((boxes, scores))
        for model, detector in detectors.items():
            boxes = temporal_boxes(temporal[model], frame)
            run.detections.setdefault(f"{model} ({TEMPORAL})", []).append(boxes)
            ablations = dict(ABLATIONS)
            if _letterboxed(frame):
                ablations["padding masked"] = padding_masked
            channels = frame.channels_at(channel_key(detector))
            for ablation, transform in ablations.items():
                key = model if ablation == "full" else f"{model} ({ablation})"
                boxes = network_boxes(detector, frame, transform(channels, frame))
                run.detections.setdefault(key, []).append(boxes)
            # the same model fed Stage B's channels without residual-level normalization
            boxes = network_boxes(detector, frame, channels, residual_reference=0.0)
            run.detections.setdefault(f"{model} ({RAW_LEVEL})", []).append(boxes)
        if classical is not None:
            for k, boxes in classical(frame).items():
                run.detections.setdefault(classical_name(k), []).append(boxes)
        if fusion is not None:
            shipped = detectors["shipped"]
            channels = frame.channels_at(channel_key(shipped))
            heads = [h[0] for h in shipped.raw(channels, fusion.residual_reference)]
            boxes, _ = fused_boxes(frame, heads, fusion)
            run.detections.setdefault(FUSED_NAME, []).append(boxes)
        frame.previous = None  # only the classical baseline and the fused mode need it
        frame.colour = None  # only the pipeline's box fit
        frame.history = None  # only the temporal mode
        run.frames.append(frame)
    return run


# --------------------------------------------------------------------------------------------
# Contact sheets


def _tile(frame: EvalFrame, centre: np.ndarray, boxes: list, caption: str, size=64, zoom=2):
    """A crop of the working frame (L) beside the R channel around ``centre``; ``boxes`` are
    ``(box WORKING px, BGR colour)``."""
    x0, y0 = centre - size / 2
    to_tile = np.array([[zoom, 0, -zoom * x0], [0, zoom, -zoom * y0], [0, 0, 1.0]])
    out = (size * zoom, size * zoom)
    gray = cv2.warpAffine(frame.working, to_tile[:2], out, borderValue=0)
    left = cv2.cvtColor(gray, cv2.COLOR_GRAY2BGR)
    if frame.channels.size:
        from_network = to_tile @ frame.geometry.matrix(Frame.NETWORK, Frame.WORKING)
        residual = cv2.warpAffine(frame.channels[1], from_network[:2], out, borderValue=0)
        right = cv2.applyColorMap(np.clip(residual * 255 * 6, 0, 255).astype(np.uint8), 2)
    else:
        right = np.zeros_like(left)
    for box, colour in boxes:
        x, y, w, h = (np.array(box, float) - [x0, y0, 0, 0]) * zoom
        cv2.rectangle(left, (int(x), int(y)), (int(x + w), int(y + h)), colour, 1)
        cv2.rectangle(right, (int(x), int(y)), (int(x + w), int(y + h)), colour, 1)
    tile = np.hstack([left, right])
    cv2.putText(tile, caption, (2, 11), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (255, 255, 255), 1)
    return tile


def save_sheet(tiles: list[np.ndarray], path: Path, columns: int = 4) -> bool:
    """``tiles`` (equal BGR images) in rows of ``columns`` as a 64-colour PNG at ``path``;
    False (nothing written) without tiles."""
    if not tiles:
        return False
    blank = np.zeros_like(tiles[0])
    tiles = tiles + [blank] * (-len(tiles) % columns)
    rows = [np.hstack(tiles[i : i + columns]) for i in range(0, len(tiles), columns)]
    from PIL import Image  # matplotlib's dependency; a 64-colour palette keeps sheets small

    rgb = cv2.cvtColor(np.vstack(rows), cv2.COLOR_BGR2RGB)
    Image.fromarray(rgb).quantize(64).save(path, optimize=True)
    return True


GREEN, RED, YELLOW = (0, 200, 0), (0, 0, 255), (0, 220, 255)


def contact_sheets(run: DatasetRun, name: str, out: Path, slug: str, tau: float = TAU_S) -> list:
    """Worst false positives (highest-scoring unmatched detections at tau) and misses
    (truths without a match at tau; largest first) as PNG contact sheets. Returns the files."""
    fps, misses = [], []
    for index, (frame, (boxes, scores)) in enumerate(
        zip(run.frames, run.detections[name], strict=True)
    ):
        image = ImageResult(frame.gt, np.zeros(len(frame.gt), bool), boxes, scores)
        matches = match(image, tau, MATCH_IOU)
        matched_det = {d for _, d, _ in matches}
        matched_gt = {g for g, _, _ in matches}
        for d in np.nonzero(scores >= tau)[0]:
            if d in matched_det:
                continue
            if len(frame.gt) == 1:  # one labelled person: near the person is not an FP
                gap = np.hypot(*(_centres(boxes[d : d + 1]) - _centres(frame.gt))[0])
                if gap <= frame.gt[0, 3]:
                    continue
            fps.append((float(scores[d]), index, d))
        for g in range(len(frame.gt)):
            if g not in matched_gt:
                best = _iou(frame.gt[g], boxes) >= MATCH_IOU if len(boxes) else np.zeros(0, bool)
                score = float(scores[best].max()) if best.any() else 0.0
                misses.append((float(frame.gt[g, 3]), index, g, score))
    fps.sort(key=lambda item: -item[0])
    misses.sort(key=lambda item: -item[0])
    if len(misses) > SHEET_TILES and all(len(f.gt) == 1 for f in run.frames):
        # one person per frame: misses spread over the clip rather than the largest ones
        picks = np.linspace(0, len(misses) - 1, SHEET_TILES).round().astype(int)
        misses = sorted((misses[i] for i in picks), key=lambda m: m[1])
    written = []
    tiles = []
    for score, index, d in fps[:SHEET_TILES]:
        frame = run.frames[index]
        boxes = run.detections[name][index][0]
        drawn = [(b, GREEN) for b in frame.gt] + [(boxes[d], RED)]
        tiles.append(
            _tile(frame, _centres(boxes[d : d + 1])[0], drawn, f"{frame.name} s{score:.2f}")
        )
    if save_sheet(tiles, out / f"fp_{slug}.png"):
        written.append(f"fp_{slug}.png")
    tiles = []
    for _, index, g, score in misses[:SHEET_TILES]:
        frame = run.frames[index]
        boxes, scores = run.detections[name][index]
        centre = _centres(frame.gt[g : g + 1])[0]
        near = [
            (b, RED if s >= tau else YELLOW)
            for b, s in zip(boxes, scores, strict=True)
            if s >= 0.1 and np.abs(_centres(b[None])[0] - centre).max() < 40
        ]
        caption = f"{frame.name} best {score:.2f}"
        tiles.append(_tile(frame, centre, [(frame.gt[g], GREEN), *near], caption))
    if save_sheet(tiles, out / f"miss_{slug}.png"):
        written.append(f"miss_{slug}.png")
    return written


# --------------------------------------------------------------------------------------------
# The suite


def _best_classical(section: dict) -> str:
    names = [n for n in section if n.startswith("classical")]
    return max(names, key=lambda n: (section[n]["AP@0.25"], section[n]["AP@0.5"]))


def evaluate_real(
    models: dict[str, str | Path | None],
    out: str | Path,
    person12: str | Path,
    hituav: str | Path,
    split: str = "val",
    seed: int = 0,
    hituav_images: int | None = None,
    ks: tuple[float, ...] = K_SWEEP,
    command: str = "emts eval real",
    seeds: int = 1,
) -> dict:
    """Run the suite; write ``report.md``, ``metrics.json``, PR curves and contact sheets.

    ``seeds`` > 1 pools the HIT-UAV pseudo-clips of seeds ``seed .. seed + seeds - 1`` into one
    evaluation (AP@0.25 moves by 0.02-0.03 from one seed to another with 290 stills).
    """
    if seeds < 1:
        raise BadInputError("seeds must be at least 1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    detectors = {}
    for name, path in models.items():
        path, size = path if isinstance(path, tuple) else (path, None)
        detector = Detector(path, threshold=EVAL_THRESHOLD, network_size=size)
        detectors[name] = detector
    classical = CompensatedDifference(ks)
    sections: dict[str, dict] = {}
    sheets: dict[str, list] = {}

    auto = auto_detector(Path(person12) / "frames" / "000001.jpg")
    sizes = [channel_key(detectors["shipped"]), *(channel_key(d) for d in detectors.values())]
    run = run_dataset(
        person12_frames(person12, network_sizes=[*sizes, channel_key(auto[1])]),
        detectors,
        "eval real: person12",
        total=PERSON12_FRAMES,
        classical=classical,
        fusion=fusion_config(detectors["shipped"].network_size),
        auto=auto,
    )
    section = {name: person_metrics(run.results(name)) for name in run.detections}
    sections["uav123-person12 frames 1-201 (RGB, 640x360)"] = section
    for name in detectors:
        sheets[f"person12, {name}"] = contact_sheets(run, name, out, f"person12_{_slug(name)}")
    del run

    root = Path(hituav)
    entries = read_hituav(root, split)[:hituav_images]
    total = len(entries)
    auto = auto_detector(root / split / entries[0][0]) if entries else None
    if auto is not None:
        sizes = [*sizes, channel_key(auto[1])]
    pooled = f"{total} stills" + (f" x seeds {seed}-{seed + seeds - 1}" if seeds > 1 else "")
    for variant, title in HITUAV_VARIANTS.items():
        frames = itertools.chain.from_iterable(
            hituav_frames(root, split, variant, s, hituav_images, sizes)
            for s in range(seed, seed + seeds)
        )
        run = run_dataset(
            frames,
            detectors,
            f"eval real: hituav {variant}",
            total=total * seeds,
            classical=classical,
            fusion=fusion_config(detectors["shipped"].network_size),
            auto=auto,
        )
        section = {name: multi_person_metrics(run.results(name)) for name in run.detections}
        sections[f"HIT-UAV {split} ({pooled}), {title}"] = section
        for name in detectors:
            slug = f"hituav_{variant}_{_slug(name)}"
            sheets[f"HIT-UAV {variant}, {name}"] = contact_sheets(run, name, out, slug)
        del run

    write_real_report(out, sections, sheets, list(detectors), command)
    return {
        title: {name: _public(s) for name, s in section.items()}
        for title, section in sections.items()
    }


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


def _public(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if not k.startswith("_")}


def _plot_pr(section: dict, names: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recall = np.linspace(0, 1, 101)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, thr in zip(axes, (0.25, 0.5), strict=True):
        for name in names:
            s = section[name]
            ax.plot(recall, s["_precision"][thr], label=f"{name} ({s[f'AP@{thr:g}']:.3f})")
        ax.set_xlabel("recall")
        ax.set_title(f"IoU {thr}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("precision")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _recalls(bins: dict) -> str:
    """``{label: {"recall": r}}`` as "r1 / r2 / ..." ("-" where a bin is empty)."""
    return " / ".join("-" if v["recall"] is None else f"{v['recall']:.2f}" for v in bins.values())


def write_real_report(
    out: Path, sections: dict, sheets: dict, models: list[str], command: str
) -> None:
    lines = [
        "# Real-footage suite",
        "",
        f"Command: `{command}`",
        "",
        f"Detections at tau_s = {TAU_S} unless AP; a match needs IoU >= {MATCH_IOU}. fp32 models. "
        "Ablations: `L only` = R and D zeroed, `motion only` = L flattened to its mean, "
        "`padding masked` (letterboxed input only) = R and D zeroed outside the letterbox "
        "content (the pipeline does this since), `residual level not normalized` = Stage B's "
        "channels fed as they are, without the detector's residual-level normalization "
        "(`emts.stages.b_channels.normalize_residual_level`, on in every other row). `temporal "
        "scores` = Stage C's temporal mode, the pipeline's default "
        "(`emts.stages.c_detect.temporal`: peaks "
        "scored by a heatmap memory carried by the camera motion; person12 as one stream, "
        "each HIT-UAV pseudo-clip's frames 2-3 fed before frame 4 is scored); every other "
        "row is the network frame by frame. `--model auto: V` = what the pipeline runs by "
        "default on the set's frames (`emts.modality`: the thermal model at its 512x384 for "
        "frames without colour, the default model for colour), in the temporal mode, with "
        "the colour evidence on colour frames (`emts.stages.c_detect.boxfit`: the best boxes "
        "from tau_s - "
        "0.1 fitted to the person's own pixels -- trimmed to the person where those merged "
        "with shade or a bed above or below -- and scored 0.1 higher where they fit and "
        "move, 0.1 lower where they do not move: Stage B's R in the box under 2x the "
        "frame's residual level); "
        "`boxes not fitted` = the same detections as the network boxes and scores them. "
        "`classical k=K` = compensated differencing at 640x512 with threshold K "
        "x the frame's median residual; the best K (by AP@0.25) is marked.",
        "",
    ]
    data = {}
    for title, section in sections.items():
        best = _best_classical(section)
        slug = _slug(title)[:40]
        curve_names = [*models, *(n for n in section if n.startswith(AUTO_PREFIX)), best]
        _plot_pr(section, curve_names, out / f"pr_{slug}.png", title)
        person12 = "fp_per_frame@0.3" in next(iter(section.values()))
        lines += [f"## {title}", ""]
        if person12:
            lines += [
                "| detector | recall@0.3 | FP/frame@0.3 | AP@0.25 | AP@0.5 |",
                "|---|---|---|---|---|",
            ]
        else:
            lines += [
                "| detector | AP@0.25 | AP@0.5 | recall@0.3 | FP/image@0.3 | recall <12 / 12-20 / "
                "20-32 / >=32 px | recall, nearest other person < 1.5 / 1.5-3 / >= 3 heights "
                "away or alone | width ratio p10/p50/p90 |",
                "|---|---|---|---|---|---|---|---|",
            ]
        for name, s in section.items():
            if name.startswith("classical") and name != best:
                continue
            label = f"{name} (best)" if name == best else name
            if person12:
                cells = [s["recall@0.3"], s["fp_per_frame@0.3"], s["AP@0.25"], s["AP@0.5"]]
            else:
                widths = s["width_ratio_p10_p50_p90"]
                cells = [
                    s["AP@0.25"],
                    s["AP@0.5"],
                    s["recall@0.3"],
                    s["fp_per_image@0.3"],
                    _recalls(s["recall_by_height"]),
                    _recalls(s["recall_by_spacing"]),
                    "-" if widths is None else "/".join(f"{w:g}" for w in widths),
                ]
            lines.append(f"| {label} | " + " | ".join(str(c) for c in cells) + " |")
        sweep = [n for n in section if n.startswith("classical")]
        lines += [
            "",
            "Classical threshold sweep (AP@0.25 / AP@0.5): "
            + ", ".join(
                f"k={n.split('=')[1]}: {section[n]['AP@0.25']:.3f} / {section[n]['AP@0.5']:.3f}"
                for n in sweep
            ),
            "",
            f"![PR curves](pr_{slug}.png)",
            "",
        ]
        data[title] = {name: _public(s) for name, s in section.items()}
    lines += ["## Contact sheets", ""]
    lines += [
        "Left: the working frame; right: R (x6). Green: the label; red: a detection at "
        "tau_s; yellow: below tau_s. FP sheets: the highest-scoring false positives; miss "
        "sheets: unmatched persons (largest first; person12: spread over the clip), captioned "
        "with the best score of a detection that would have matched.",
        "",
    ]
    for label, files in sheets.items():
        links = ", ".join(f"[{f}]({f})" for f in files) or "none"
        lines.append(f"* {label}: {links}")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "metrics.json").write_text(json.dumps(data, indent=1) + "\n")


def parse_models(specs: list[str] | None, name: str = "model") -> dict[str, str | None]:
    """``["NAME=PATH[@WxH]" | "PATH[@WxH]", ...]`` -> {name: path or (path, size)}; the
    shipped model comes first. ``@WxH`` runs the model at that network size (a model with an
    open input size, e.g. ``src/emts/models/detector.onnx@512x384``). ``name``: what an error
    message calls a spec (the command line passes its flag)."""
    models: dict = {"shipped": None}
    for spec in specs or []:
        label, _, path = spec.rpartition("=") if "=" in spec else ("", "", spec)
        label = label or Path(path).stem
        path, _, size_text = path.partition("@")
        if size_text:
            try:
                width, height = (int(v) for v in size_text.lower().split("x"))
            except ValueError:
                raise BadInputError(f"{name} {spec}: expected @WxH, e.g. @512x384") from None
            path = (path, (width, height))
        if not Path(path[0] if isinstance(path, tuple) else path).is_file():
            raise BadInputError(f"{name} {spec}: {path} not found")
        if label in models:
            raise BadInputError(f"{name} {spec}: the name {label!r} is taken")
        models[label] = path
    return models
