"""Adapt the detector to a user's own footage (``emts adapt``).

The user's frames become moving plates: their real ego-motion, parallax, clutter, compression
and lighting, with procedural walkers composited in (moving with the ground the camera sees,
as Stage A measured it, plus their own gait). Frames without a pasted walker are hard
negatives. Nothing in the footage is labelled, so the regions where a real person *might* be
-- any detection of the starting model at a low score, the strongest blobs of the
compensated frame difference -- are ignore regions: neither positives nor negatives. Replay
of the synthetic curriculum and the HIT-UAV Tier-2 stills (when given) keeps the detector from
forgetting what it knew. The starting model is an exported ONNX detector (the shipped one by
default), rebuilt in torch with its folded BatchNorms frozen.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np
import torch
from tqdm import tqdm

from emts.errors import BadInputError
from emts.footage import CompensatedDifference
from emts.front_end import MotionFrontEnd
from emts.geometry import Frame, FrameGeometry
from emts.synth.actors import random_actor
from emts.synth.actors.base import FPS as CURRICULUM_FPS
from emts.synth.clips import composite_actors
from emts.synth.common import log_uniform
from emts.train.data import Sample, StoredClips, Tier2Stills

IGNORE_GROWTH = 1.5  # ignore regions are the flagged boxes grown by this factor
TRACKED_ID = 900  # identities of pseudo-labelled persons within a sample (pasted: 0, 1, ...)


@dataclass(frozen=True)
class AdaptConfig:
    """Fine-tuning recipe of ``emts adapt`` (defaults: the command's defaults)."""

    steps: int = 1500
    lr: float = 5e-4
    weight_decay: float = 1e-4
    batch_clips: int = 8
    frames: int = 4
    seed: int = 0
    threads: int = 2
    loader_workers: int = 1
    fps: float = 30.0  # footage frame rate: walkers advance CURRICULUM_FPS / fps steps a frame
    person_height: tuple[float, float] = (16.0, 110.0)  # pasted walkers, WORKING px (log-unif.)
    walkers: tuple[int, int] = (1, 3)  # pasted walkers per sample (inclusive)
    empty_share: float = 0.3  # footage samples without a walker: pure hard negatives
    ignore_score: float = 0.1  # starting-model detections from this score are ignore regions
    ignore_k: float = 5.0  # compensated-difference threshold, x the frame's median residual
    ignore_blobs: int = 10  # strongest person-sized residual blobs: ignore regions
    mixture: dict[str, float] = field(
        default_factory=lambda: {"footage": 0.5, "tier1": 0.2, "negative": 0.1, "tier2": 0.2}
    )

    def training(self):
        """The :class:`~emts.train.loop.TrainConfig` that drives the shared training loop."""
        from emts.train.loop import TrainConfig

        return TrainConfig(
            batch_clips=self.batch_clips,
            frames=self.frames,
            lr=self.lr,
            weight_decay=self.weight_decay,
            seed=self.seed,
            threads=self.threads,
            loader_workers=self.loader_workers,
        )


@dataclass
class FootageSegment:
    """One footage file (or frame range) ready for sampling, all in INPUT px."""

    name: str
    geometry: FrameGeometry
    frames: list[np.ndarray]  # gray uint8, input size
    motions: list[np.ndarray]  # 3x3, frame t-1 -> t (identity for t = 0)
    ignore: list[np.ndarray]  # (n, 4) boxes where a real person may be
    tracked: list[np.ndarray] | None = None  # (n, 4) pseudo-labels: verified tracked persons

    def positives(self, t: int) -> np.ndarray:
        return np.zeros((0, 4)) if self.tracked is None else self.tracked[t]


def _grow(boxes: np.ndarray, factor: float) -> np.ndarray:
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    centre = boxes[:, :2] + boxes[:, 2:] / 2
    size = boxes[:, 2:] * factor
    return np.concatenate([centre - size / 2, size], axis=1)


def prepare_segment(
    name: str, frames, detector, config: AdaptConfig, progress: bool = True
) -> FootageSegment:
    """Run Stages A-C of the starting model over ``frames`` (any supported frames): keep the
    gray frames, Stage A's motions and the ignore regions (see the module docstring)."""
    from emts.preprocess import to_gray

    front = MotionFrontEnd(network_size=detector.network_size)
    classical = CompensatedDifference(ks=(config.ignore_k,), max_detections=1000)
    grays, motions, ignore = [], [], []
    geometry = None
    previous = None
    for frame in tqdm(frames, desc=f"prepare {name}", unit="frame", disable=not progress):
        result = front.step(frame)
        if geometry is None:
            geometry = result.geometry
        elif result.size_changed:
            raise BadInputError(f"{name}: frame size changes mid-footage")
        gray = to_gray(np.asarray(frame))
        if gray.dtype != np.uint8:  # thermal uint16: the working frame's stretch, back to input
            x0, y0, x1, y1 = (int(round(v + 0.5)) for v in geometry.content_box)
            gray = cv2.resize(result.working[y0:y1, x0:x1], geometry.input_size)
        grays.append(gray)
        motion = np.eye(3)
        if result.index > 0:
            motion[:2] = geometry.motion(
                np.asarray(result.motion.matrix), Frame.WORKING, Frame.INPUT
            )
        motions.append(motion)
        detections = np.array([d.box for d in detector(result.channels)], float).reshape(-1, 4)
        content = result.geometry.input_to_working.content_mask()
        motion_working = np.asarray(result.motion.matrix)
        by_k = classical.detect(result.working, previous, motion_working, content)
        blobs, _ = by_k[config.ignore_k]  # best first
        # Person-sized blobs only: a blob larger than the tallest walker (a flower bed's
        # parallax, a shadow edge) is no person and stays a negative.
        fits = (blobs[:, 2:] <= config.person_height[1]).all(axis=1) & (blobs[:, 3] >= 4)
        blobs = blobs[fits][: config.ignore_blobs]
        flagged = np.concatenate(
            [
                geometry.boxes(detections, Frame.NETWORK, Frame.INPUT),
                geometry.boxes(blobs, Frame.WORKING, Frame.INPUT),
            ]
        )
        ignore.append(_grow(flagged, IGNORE_GROWTH))
        previous = result.working
    if geometry is None or len(grays) < config.frames + 1:
        raise BadInputError(
            f"{name}: {len(grays)} frames; adapting needs at least {config.frames + 1}"
        )
    return FootageSegment(name, geometry, grays, motions, ignore)


class OwnFootage:
    """Training source of footage samples (see the module docstring); ``sample`` follows the
    sources of :class:`~emts.train.data.MixtureStream`."""

    def __init__(self, segments: list[FootageSegment], config: AdaptConfig) -> None:
        self.segments = segments
        self.config = config
        lengths = np.array([len(s.frames) - config.frames for s in segments], float)
        self.weights = lengths / lengths.sum()
        self.substeps = max(1, round(CURRICULUM_FPS / config.fps))

    def _walkers(self, rng: np.random.Generator, segment: FootageSegment, clip_number: int):
        c = self.config
        if rng.random() < c.empty_share:
            return []
        scale = float(segment.geometry.input_to_working.matrix[0, 0])  # working px per input px
        width, height = segment.geometry.input_size
        pitch = math.radians(rng.uniform(30.0, 90.0))
        walkers = []
        for n in range(int(rng.integers(c.walkers[0], c.walkers[1] + 1))):
            position = rng.uniform([0.05 * width, 0.1 * height], [0.95 * width, 0.95 * height])
            size = log_uniform(rng, *c.person_height) / scale
            walkers.append(
                random_actor(rng, "person", position, size, pitch, clip_number * 1000 + n)
            )
        return walkers

    def sample(self, rng: np.random.Generator, frames: int, clip_number: int) -> Sample:
        segment = self.segments[int(rng.choice(len(self.segments), p=self.weights))]
        start = int(rng.integers(0, len(segment.frames) - frames))
        walkers = self._walkers(rng, segment, clip_number)
        pose = np.eye(3)
        quality = int(rng.integers(70, 96))
        front = MotionFrontEnd(network_size=segment.geometry.network_size)
        channels, boxes_net, identities_net, visible_net = [], [], [], []
        for k in range(frames + 1):
            t = start + k
            if k > 0:
                pose = segment.motions[t] @ pose
                for _ in range(self.substeps):
                    for walker in walkers:
                        walker.step()
            image = segment.frames[t].astype(np.float32)
            layers = composite_actors(image, walkers, pose)
            image = np.clip(image, 0, 255).astype(np.uint8)
            if layers:  # the pasted walkers share the footage's compression
                ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
                image = cv2.imdecode(jpeg, cv2.IMREAD_GRAYSCALE) if ok else image
            result = front.step(image)
            if k == 0:
                continue
            pasted = [s for s, _ in layers if s.kind == "person"]
            tracked, ignore = segment.positives(t), segment.ignore[t]
            boxes = np.concatenate(
                [np.array([s.box for s in pasted], float).reshape(-1, 4), tracked, ignore]
            )
            visible = np.repeat([1.0, 0.0], [len(pasted) + len(tracked), len(ignore)])
            identities = np.concatenate(
                [
                    [s.identity for s in pasted],
                    clip_number * 1000 + TRACKED_ID + np.arange(len(tracked)),
                    -np.ones(len(ignore)),
                ]
            ).astype(np.int64)
            channels.append(result.channels)
            boxes_net.append(segment.geometry.boxes(boxes, Frame.INPUT, Frame.NETWORK))
            identities_net.append(identities)
            visible_net.append(visible)
        return Sample(np.stack(channels), boxes_net, identities_net, visible_net, "footage")


def read_footage(
    paths: list[str], span: tuple[int, int] | None, fps: float | None
) -> list[tuple[str, list[np.ndarray]]]:
    """Frames of each footage path (video, image folder or glob), restricted to ``span``
    (inclusive 0-based frame numbers) when given."""
    from emts.io import open_source

    out = []
    for path in paths:
        with open_source(path, fps=fps) as source:
            frames = []
            for number, frame in enumerate(source):
                if span is not None and number < span[0]:
                    continue
                if span is not None and number > span[1]:
                    break
                frames.append(np.asarray(frame))
        if not frames:
            raise BadInputError(f"{path}: no frames" + (f" in {span[0]}:{span[1]}" if span else ""))
        out.append((path, frames))
    return out


def read_tracks(path: str | Path, first: int, count: int) -> tuple[list, list]:
    """Pseudo-labels from an ``emts track --jsonl`` file of the same footage.

    Returns per footage frame ``first .. first + count - 1`` (the JSON ``frame`` numbers):
    (positives, unsure) box arrays in input px. A positive is a target that is ``locked``,
    ``verified`` and measured on that frame; any other reported target (unverified,
    coasting, reacquiring) is unsure and becomes an ignore region.
    """
    positives = [np.zeros((0, 4)) for _ in range(count)]
    unsure = [np.zeros((0, 4)) for _ in range(count)]
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as error:
        raise BadInputError(f"--tracks {path}: {error.strerror or error}") from None
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            frame, target = int(line["frame"]), line.get("target")
            box = None if target is None else np.array(target["box"], float).reshape(1, 4)
        except (ValueError, KeyError, TypeError):
            raise BadInputError(
                f"--tracks {path}: line {number} is not an emts track JSON line"
            ) from None
        t = frame - first
        if box is None or not 0 <= t < count:
            continue
        sure = line.get("mode") == "locked" and target.get("verified") and target.get("measured_by")
        if sure:
            positives[t] = box
        else:
            unsure[t] = box
    return positives, unsure


def adapt_detector(
    footage: list[tuple[str, list[np.ndarray]]],
    out: str | Path,
    config: AdaptConfig,
    base_model: str | Path | None = None,
    curriculum: str | Path | None = None,
    hituav: str | Path | None = None,
    command: str = "",
    tracks: list[str | Path] | None = None,
    first_frame: int = 0,
) -> dict:
    """Fine-tune ``base_model`` (default: the shipped detector) on ``footage``; writes
    ``out/model.onnx``, ``model.pt``, ``adapt.json`` (provenance), ``curves.png``."""
    from emts.stages.c_detect.detector import Detector, default_model_path
    from emts.train.export import detector_from_onnx, export_onnx
    from emts.train.loop import plot_curves, run_phases

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(base_model) if base_model else default_model_path()
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    # OpenCV's thread pool must never start in this process: the data loader forks
    # workers, and a fork taken while that pool holds its lock deadlocks them.
    cv2.setNumThreads(1)
    started = time.perf_counter()
    detector = Detector(base, threads=config.threads, threshold=config.ignore_score)
    if detector.stage_b_warp != "network":  # the curriculum's sets cache the paper's warp
        raise BadInputError(
            f"{base.name} runs Stage B's {detector.stage_b_warp!r} warp; emts adapt fine-tunes "
            "models of the paper's warp only (e.g. the default model, not the thermal one)"
        )
    if detector.residual_baseline != 1:  # nor R over more frames
        raise BadInputError(
            f"{base.name} was trained on R over {detector.residual_baseline} frames; emts adapt "
            "fine-tunes models of eq. 2's R (over the previous frame) only"
        )
    segments = [prepare_segment(name, frames, detector, config) for name, frames in footage]
    if tracks:
        if len(tracks) != len(segments):
            raise BadInputError(f"--tracks: {len(tracks)} files for {len(segments)} footage")
        for segment, path in zip(segments, tracks, strict=True):
            segment.tracked, unsure = read_tracks(path, first_frame, len(segment.frames))
            segment.ignore = [
                np.concatenate([a, b]) for a, b in zip(segment.ignore, unsure, strict=True)
            ]
    sources: dict[str, object] = {"footage": OwnFootage(segments, config)}
    replay = []
    if curriculum is not None:
        for kind, folder in (("tier1", "tier1"), ("negative", "negatives")):
            path = Path(curriculum) / folder
            if (path / "manifest.json").is_file():
                sources[kind] = StoredClips(
                    path, kind, progress=tqdm, network_size=detector.network_size
                )
                replay.append(str(path))
    if hituav is not None and Path(hituav).is_dir():
        sources["tier2"] = Tier2Stills(hituav, network_size=detector.network_size)
        replay.append(str(hituav))
    mixture = {k: v for k, v in config.mixture.items() if k in sources}
    model = detector_from_onnx(base).to(memory_format=torch.channels_last)
    model.network_size = detector.network_size  # exported at the size it was trained at
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    state = run_phases(
        model,
        optimizer,
        sources,
        [("adapt", config.steps, mixture)],
        config.training(),
        out,
        freeze_bn=True,
    )
    model.eval()
    torch.save({"model": model.state_dict(), "config": asdict(model.config)}, out / "model.pt")
    export_onnx(model, out / "model.onnx")
    plot_curves(state["history"], out / "curves.png")
    ignored = [float(np.mean([len(b) for b in s.ignore])) for s in segments]
    report = {
        "command": command,
        "base_model": str(base),
        "footage": [
            {"name": s.name, "frames": len(s.frames), "input_size": list(s.geometry.input_size)}
            for s in segments
        ],
        "ignore_regions_per_frame": [round(v, 2) for v in ignored],
        "pseudo_labels": [
            0 if s.tracked is None else int(sum(len(b) for b in s.tracked)) for s in segments
        ],
        "tracks": [str(t) for t in tracks or []],
        "replay": replay,
        "mixture": mixture,
        "config": asdict(config),
        "seconds": round(time.perf_counter() - started, 1),
        "final": state["history"][-1] if state["history"] else None,
    }
    (out / "adapt.json").write_text(json.dumps(report, indent=1) + "\n")
    return report
