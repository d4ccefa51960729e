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
  swept (:class:`emts.footage.CompensatedDifference`).

Everything is matched in WORKING pixels (640x512); AP is pycocotools'. The frames are read by
:mod:`emts.eval.real_frames`, scored by :mod:`emts.eval.real_metrics` and reported by
:mod:`emts.eval.real_report`; here: every detector on a frame, the fits of the fused mode and
of the box scale, running a dataset, the contact sheets and the suite.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.errors import BadInputError
from emts.eval.metrics import ImageResult, _iou, match
from emts.eval.real_frames import (
    HITUAV_VARIANTS,
    PERSON12_FRAMES,
    EvalFrame,
    hituav_frames,
    person12_frames,
)
from emts.eval.real_metrics import (
    MATCH_IOU,
    TAU_S,
    box_centres,
    multi_person_metrics,
    person_metrics,
)
from emts.eval.real_report import AUTO_PREFIX, public_metrics, slugify, write_real_report
from emts.footage import K_SWEEP, Boxes, CompensatedDifference
from emts.front_end import channel_key
from emts.geometry import Frame
from emts.modality import DEFAULT, VARIANT_FOR, frame_modality
from emts.stages.b_channels import content_mask
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
from emts.synth.plates import read_hituav

EVAL_THRESHOLD = 0.01  # keep low scores for the PR curves
SHEET_TILES = 16


# --------------------------------------------------------------------------------------------
# Detectors

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
    px, scores) of the best ``max_detections`` blobs, and their features."""
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
                gap = np.hypot(*(box_centres(boxes[d : d + 1]) - box_centres(frame.gt))[0])
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
            _tile(frame, box_centres(boxes[d : d + 1])[0], drawn, f"{frame.name} s{score:.2f}")
        )
    if save_sheet(tiles, out / f"fp_{slug}.png"):
        written.append(f"fp_{slug}.png")
    tiles = []
    for _, index, g, score in misses[:SHEET_TILES]:
        frame = run.frames[index]
        boxes, scores = run.detections[name][index]
        centre = box_centres(frame.gt[g : g + 1])[0]
        near = [
            (b, RED if s >= tau else YELLOW)
            for b, s in zip(boxes, scores, strict=True)
            if s >= 0.1 and np.abs(box_centres(b[None])[0] - centre).max() < 40
        ]
        caption = f"{frame.name} best {score:.2f}"
        tiles.append(_tile(frame, centre, [(frame.gt[g], GREEN), *near], caption))
    if save_sheet(tiles, out / f"miss_{slug}.png"):
        written.append(f"miss_{slug}.png")
    return written


# --------------------------------------------------------------------------------------------
# The suite


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
        sheets[f"person12, {name}"] = contact_sheets(run, name, out, f"person12_{slugify(name)}")
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
            slug = f"hituav_{variant}_{slugify(name)}"
            sheets[f"HIT-UAV {variant}, {name}"] = contact_sheets(run, name, out, slug)
        del run

    write_real_report(out, sections, sheets, list(detectors), command)
    return {
        title: {name: public_metrics(s) for name, s in section.items()}
        for title, section in sections.items()
    }


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
