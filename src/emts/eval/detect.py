"""Detector evaluation protocols (§6.2, §6.5) and the classical baseline.

* :func:`evaluate_bench` -- the held-out synthetic bench: frames 5-18 of every clip (the first
  four let the motion channels settle, as in the paper); the network frame by frame (the
  paper's protocol), or Stage C's temporal mode streamed over each clip as the pipeline runs it
  (:class:`StreamDetect`).
* :func:`evaluate_hituav` -- real HIT-UAV val stills, each made a 4-frame pseudo-clip
  (§6.5) and run through the deployed Stage A/B; the last frame is scored. Variant
  ``"persons"`` moves only the persons (the paper's protocol); ``"vehicles"`` also drives the
  image's cars, bicycles and other vehicles as unlabeled rigid movers -- the honest variant,
  since in the first everything that moves is a person.
* :class:`ClassicalDetector` -- compensated differencing: threshold R, connected components,
  box, score from residual strength.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.eval.metrics import ImageResult, by_height, coco_ap
from emts.front_end import (
    MotionFrontEnd,
    cached_by_sets,
    channel_key,
    channels_at,
    key_config,
    network_size_of,
    residual_baseline_of,
    stage_b_config,
)
from emts.geometry import WORKING_GEOMETRY, Frame, working_geometry
from emts.modality import AUTO
from emts.stages.c_detect.detector import Detector
from emts.stages.c_detect.stage import DetectionStage
from emts.stages.c_detect.temporal import TemporalDetector
from emts.synth.plates import read_hituav
from emts.synth.store import ClipSet
from emts.synth.tier2 import pseudo_clip

GEOMETRY = WORKING_GEOMETRY
BENCH_FRAMES = range(4, 18)  # frames 5-18 (1-based), §6.2
MIN_VISIBLE = 0.3  # less visible persons are ignore regions
EVAL_THRESHOLD = 0.01  # keep low-score detections for the PR curve

# channels -> boxes (the paper's 256x192 NETWORK px), scores. A DetectFn with a
# ``network_size`` attribute is fed Stage B's channels at that size instead of 256x192.
DetectFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def paper_boxes(detections, network_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(boxes in the paper's 256x192 NETWORK px, scores) of detections made at
    ``network_size``."""
    boxes = np.array([d.box for d in detections], float).reshape(-1, 4)
    if len(boxes) and tuple(network_size) != NETWORK_SIZE:
        working = working_geometry(network_size).boxes(boxes, Frame.NETWORK, Frame.WORKING)
        boxes = GEOMETRY.boxes(working, Frame.WORKING, Frame.NETWORK)
    return boxes, np.array([d.score for d in detections], float)


class NetworkDetect:
    """The detector as a :data:`DetectFn` (threshold lowered to :data:`EVAL_THRESHOLD`): fed
    channels at its own network size, its boxes are returned in the paper's 256x192 NETWORK
    px, so that truths, height bins and other detectors share one frame."""

    def __init__(self, detector: Detector) -> None:
        detector.threshold = EVAL_THRESHOLD
        self.detector = detector
        self.network_size = detector.network_size
        self.stage_b_warp = detector.stage_b_warp
        self.residual_baseline = residual_baseline_of(detector)

    def __call__(self, channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return paper_boxes(self.detector(channels), self.network_size)


class StreamDetect:
    """Stage C's temporal mode as the pipeline runs it
    (:class:`emts.stages.c_detect.temporal.TemporalDetector`,
    with its coarse pass where the model has one, ``coarse_pass``): each clip streamed through
    fresh Stages A-B at the detector's size and warp, the score memory reset at each clip, the
    threshold lowered to :data:`EVAL_THRESHOLD`; boxes in the paper's 256x192 NETWORK px."""

    def __init__(self, detector: Detector, coarse_pass: bool = True) -> None:
        detector.threshold = EVAL_THRESHOLD
        # Stage C's one entry, without the colour evidence (the bench's frames are gray)
        self.stage = DetectionStage(
            TemporalDetector(detector, coarse=AUTO if coarse_pass else None), box_fit=None
        )
        self.network_size = detector.network_size
        self.stage_b_warp = detector.stage_b_warp
        self.residual_baseline = residual_baseline_of(detector)

    def clip(self, frames: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(boxes, scores) of every frame of one clip (640x512 gray frames)."""
        front = MotionFrontEnd(channel_config=stage_b_config(self), network_size=self.network_size)
        self.stage.reset()
        # every decoded peak (score or sighting over the lowered threshold): the PR curves
        # sweep the threshold themselves
        return [
            paper_boxes(self.stage.step(front.step(frame), frame).decoded, self.network_size)
            for frame in frames
        ]


class ClassicalDetector:
    """Compensated differencing baseline: R > threshold -> blobs -> boxes (NETWORK px)."""

    def __init__(self, threshold: float = 0.03, min_area: int = 3) -> None:
        self.threshold = threshold
        self.min_area = min_area

    def __call__(self, channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        residual = channels[1]
        mask = (residual > self.threshold).astype(np.uint8)
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
        count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
        boxes, scores = [], []
        for k in range(1, count):
            x, y, w, h, area = stats[k]
            if area < self.min_area:
                continue
            boxes.append([x, y, w, h])
            scores.append(float(residual[labels == k].max()))
        return np.array(boxes, float).reshape(-1, 4), np.array(scores)


def ground_truth(persons: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """A bench frame's labelled ``persons`` as (boxes in the paper's NETWORK px, ignore
    flags: persons less than :data:`MIN_VISIBLE` visible)."""
    boxes = np.array([p["box"] for p in persons], float).reshape(-1, 4)
    boxes = GEOMETRY.boxes(boxes, Frame.INPUT, Frame.NETWORK) if len(boxes) else boxes
    ignore = np.array([p.get("visible", 1.0) < MIN_VISIBLE for p in persons], bool)
    return boxes, ignore


def evaluate_bench(
    detect: DetectFn | StreamDetect, folder: str | Path, clips: int | None = None
) -> list[ImageResult]:
    """Frames 5-18 of each bench clip: ``detect`` fed each frame's channels (the sets' cached
    ones where it runs at 256x192 on the paper's warp, else Stages A-B again at its size and
    warp), or a :class:`StreamDetect` fed the clip as a stream."""
    clip_set = ClipSet(folder)
    indices = clip_set.indices[:clips] if clips else clip_set.indices
    results = []
    size, config = network_size_of(detect), stage_b_config(detect)
    cached = cached_by_sets(size, config)
    for index in tqdm(indices, desc="eval bench", unit="clip", disable=None):
        clip = clip_set.load(index)
        if len(clip.frames) <= max(BENCH_FRAMES):
            raise BadInputError(
                f"{folder}: clip {index} has {len(clip.frames)} frames; the bench scores frames "
                f"{min(BENCH_FRAMES) + 1}-{max(BENCH_FRAMES) + 1} (generate it with emts synth "
                "bench)"
            )
        if isinstance(detect, StreamDetect):
            found = detect.clip(clip.frames)
        else:
            channels = (
                clip.channels
                if cached
                else channels_at(clip.frames, size, config.warp_at, config.residual_baseline)
            )
            found = {t: detect(channels[t]) for t in BENCH_FRAMES}
        for t in BENCH_FRAMES:
            gt, ignore = ground_truth(clip.labels["frames"][t]["persons"])
            boxes, scores = found[t]
            results.append(ImageResult(gt, ignore, boxes, scores))
    return results


def hituav_clips(root: str | Path, split: str, variant: str, seed: int = 0, sizes=(NETWORK_SIZE,)):
    """Yield (file name, {channel key: channels of the last frame}, person boxes in the
    paper's NETWORK px); ``sizes``: network sizes or channel keys
    (:func:`emts.front_end.channel_key`)."""
    root = Path(root)
    for number, (name, entry) in enumerate(read_hituav(root, split)):
        still = cv2.imread(str(root / split / name), cv2.IMREAD_GRAYSCALE)
        rng = np.random.default_rng([seed, number])
        vehicles = entry["vehicles"] if variant == "vehicles" else []
        clip = pseudo_clip(
            still, entry["persons"], rng, frames=4, vehicle_boxes=vehicles, zoom=False
        )
        configs = {tuple(key): key_config(key) for key in sizes}
        channels = {
            key: channels_at(clip.frames, key[:2], c.warp_at, c.residual_baseline)[-1]
            for key, c in configs.items()
        }
        gt = clip.person_boxes[-1]
        gt = GEOMETRY.boxes(gt, Frame.INPUT, Frame.NETWORK) if len(gt) else gt.reshape(-1, 4)
        yield name, channels, gt


def evaluate_hituav(
    detects: dict[str, DetectFn], root, split: str, variant: str
) -> dict[str, list[ImageResult]]:
    results: dict[str, list[ImageResult]] = {name: [] for name in detects}
    sizes = list(dict.fromkeys(channel_key(d) for d in detects.values()))
    for _, channels, gt in tqdm(
        list(hituav_clips(root, split, variant, sizes=sizes)),
        desc=f"eval hituav {variant}",
        disable=None,
    ):
        for name, detect in detects.items():
            boxes, scores = detect(channels[channel_key(detect)])
            results[name].append(ImageResult(gt, np.zeros(len(gt), bool), boxes, scores))
    return results


def summarize(results: list[ImageResult]) -> dict:
    ap = coco_ap(results)
    return {
        "images": len(results),
        "persons": int(sum((~r.gt_ignore).sum() for r in results)),
        "AP@0.25": round(ap["AP@0.25"], 4),
        "AP@0.5": round(ap["AP@0.5"], 4),
        "by_height_at_0.3": by_height(results, 0.3),
        "_precision": ap["precision"],
    }


def plot_pr(curves: dict[str, dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recall = np.linspace(0, 1, 101)
    fig, ax = plt.subplots(figsize=(6, 5))
    for name, summary in curves.items():
        for thr, style in ((0.25, "-"), (0.5, "--")):
            ax.plot(
                recall,
                summary["_precision"][thr],
                style,
                label=f"{name} IoU {thr} (AP {summary[f'AP@{thr:g}']:.3f})",
            )
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: Path, title: str, sections: dict[str, dict[str, dict]], command: str) -> None:
    """Markdown + JSON + one PR plot per section under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", f"Command: `{command}`", ""]
    data = {}
    for section, curves in sections.items():
        slug = re.sub(r"[^a-z0-9]+", "_", section.lower()).strip("_")
        plot_pr(curves, out / f"pr_{slug}.png", section)
        lines += [
            f"## {section}",
            "",
            "| detector | images | persons | AP@0.25 | AP@0.5 |",
            "|---|---|---|---|---|",
        ]
        for name, s in curves.items():
            ap = f"{s['AP@0.25']:.3f} | {s['AP@0.5']:.3f}"
            lines.append(f"| {name} | {s['images']} | {s['persons']} | {ap} |")
        lines += ["", f"![PR curves](pr_{slug}.png)", ""]
        for name, s in curves.items():
            lines += [
                f"Recall at score 0.3 and localization by height (network px), {name}:",
                "",
                "| height | persons | recall | median centre error px | IoU>=0.5 share |",
                "|---|---|---|---|---|",
            ]
            for label, row in s["by_height_at_0.3"].items():
                cells = [row["recall"], row["median_centre_error_px"], row["iou50_share"]]
                text = " | ".join("-" if v is None else str(v) for v in cells)
                lines.append(f"| {label} | {row['persons']} | {text} |")
            lines.append("")
        data[section] = {
            name: {k: v for k, v in s.items() if not k.startswith("_")}
            for name, s in curves.items()
        }
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "metrics.json").write_text(json.dumps(data, indent=1) + "\n")
