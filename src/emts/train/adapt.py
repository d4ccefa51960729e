"""Adapt the detector to a user's own footage (``emts adapt``).

The user's frames become moving plates: their real ego-motion, parallax, clutter, compression
and lighting, with procedural walkers composited in (moving with the ground the camera sees,
as Stage A measured it, plus their own gait). Frames without a pasted walker are hard
negatives. Nothing in the footage is labelled, so the regions where a real person *might* be
-- any detection of the starting model at a low score, the strongest blobs of the
compensated frame difference -- are ignore regions: neither positives nor negatives. Replay
of the synthetic curriculum and the HIT-UAV Tier-2 stills (when given) keeps the detector from
forgetting what it knew; without any, a warning says so (and ``adapt.json``). The starting
model is an exported ONNX detector -- by default the shipped one that suits the footage (the
thermal model for footage without colour, as ``--model auto`` picks) -- rebuilt in torch with
its folded BatchNorms frozen, trained on channels of the paper's Stage B warp at the size it was
trained at (as every shipped model was trained), and exported with the starting model's runtime
metadata (run size, box scale, Stage B warp, residual reference).

A run is checkpointed (``checkpoint.pt``) every :data:`CHECKPOINT_EVERY` steps and when a signal
ends it; then ``model.onnx`` holds the steps done so far, marked partial in ``adapt.json``, and
the same command (``--resume``) continues to the same final step.
"""

from __future__ import annotations

import json
import logging
import math
import sys
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

log = logging.getLogger("emts")

IGNORE_GROWTH = 1.5  # ignore regions are the flagged boxes grown by this factor
TRACKED_ID = 900  # identities of pseudo-labelled persons within a sample (pasted: 0, 1, ...)
CHECKPOINT_EVERY = 25  # steps between checkpoints (a signal writes one at once)
# The default run: 300 steps of 8 clips x 4 frames, 0.46-1.4 s a step on a 2-core x86 box
# (idle to loaded by other jobs): 2.5-7.5 min, plus ~20 s of preparation per 1,000 frames.
DEFAULT_STEPS = 300
# What a run records of its options: another value is another run (its checkpoint is refused).
_NOT_THE_RUN = ("threads", "loader_workers")


@dataclass(frozen=True)
class AdaptConfig:
    """Fine-tuning recipe of ``emts adapt`` (defaults: the command's defaults)."""

    steps: int = DEFAULT_STEPS
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
    from emts.config import ChannelConfig
    from emts.preprocess import to_gray

    # (Stage B as the model runs at: the thermal model's working warp at 512x384)
    channels = ChannelConfig(warp_at=detector.stage_b_warp)
    front = MotionFrontEnd(channel_config=channels, network_size=detector.network_size)
    classical = CompensatedDifference(ks=(config.ignore_k,), max_detections=1000)
    grays, motions, ignore = [], [], []
    geometry = None
    previous = None
    bar = tqdm(frames, desc=f"prepare {name}", unit="frame", disable=None if progress else True)
    for frame in bar:
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

    def __init__(
        self,
        segments: list[FootageSegment],
        config: AdaptConfig,
        network_size: tuple[int, int] | None = None,
    ) -> None:
        self.segments = segments
        self.config = config
        # the channels' size: the model's training size (default: the size prepared at)
        self.network_size = tuple(network_size or segments[0].geometry.network_size)
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
        front = MotionFrontEnd(network_size=self.network_size)
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
            boxes_net.append(result.geometry.boxes(boxes, Frame.INPUT, Frame.NETWORK))
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
        if Path(path).exists() and not Path(path).is_file():  # a FIFO: reading may block
            raise BadInputError(f"--tracks {path}: not a regular file")
        lines = Path(path).read_text().splitlines()
    except OSError as error:
        raise BadInputError(f"--tracks {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise BadInputError(f"--tracks {path}: not text (an emts track --jsonl file)") from None
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


def pick_base_model(
    model: str | Path | None, footage: list[tuple[str, list[np.ndarray]]]
) -> tuple[Path, str]:
    """The starting model and why: ``model`` None (the default model), ``"auto"`` (the shipped
    model that suits the footage, told from its frames as ``emts track --model auto`` tells
    it: the thermal model for footage without colour) or a file."""
    from emts.modality import AUTO, NO_COLOUR, frame_modality
    from emts.precision import shipped_model
    from emts.stages.c_detect.detector import default_model_path

    if model is None:
        return default_model_path(), "the default model"
    if str(model) != AUTO:
        return Path(model), "--model"
    seen = {}
    for name, frames in footage:
        seen[name] = next((m for m in map(frame_modality, frames) if m is not None), None)
    kinds = {m for m in seen.values() if m is not None}
    if len(kinds) > 1:
        raise BadInputError(
            "the footage mixes colour and no-colour (thermal) video: adapt one kind at a time, "
            "or pick the model with --model default|thermal"
        )
    if kinds == {NO_COLOUR}:
        return shipped_model("detector", "fp32", variant="thermal"), "auto: footage without colour"
    return default_model_path(), "auto: colour footage" if kinds else "auto: uniform frames"


def look_for_replay(
    curriculum: str | Path | None, hituav: str | Path | None
) -> tuple[dict[str, Path], list[str]]:
    """The replay sets found ({source: folder}) and what was looked for in vain."""
    found: dict[str, Path] = {}
    missing: list[str] = []
    if curriculum is not None:
        for kind, folder in (("tier1", "tier1"), ("negative", "negatives")):
            path = Path(curriculum) / folder
            if (path / "manifest.json").is_file():
                found[kind] = path
            else:
                missing.append(str(path / "manifest.json"))
    if hituav is not None:
        if (Path(hituav) / "train.json").is_file():
            found["tier2"] = Path(hituav)
        else:
            missing.append(str(Path(hituav) / "train.json"))
    return found, missing


def _replay_sources(found: dict[str, Path], network_size: tuple[int, int]) -> dict[str, object]:
    from functools import partial

    sources: dict[str, object] = {}
    for kind, path in found.items():
        if kind == "tier2":
            sources[kind] = Tier2Stills(path, network_size=network_size)
        else:
            bar = partial(tqdm, disable=None)
            sources[kind] = StoredClips(path, kind, progress=bar, network_size=network_size)
    return sources


def _differences(saved, wanted, where: str = "") -> list[str]:
    """What differs between two run tags, as ``key saved -> wanted`` (a few)."""
    if isinstance(saved, dict) and isinstance(wanted, dict):
        out = []
        for key in sorted(set(saved) | set(wanted), key=str):
            out += _differences(saved.get(key), wanted.get(key), f"{where}{key}.")
        return out
    if saved != wanted:
        return [f"{where.rstrip('.')} {saved!r} -> {wanted!r}"]
    return []


def _resumable(checkpoint: Path, tag: dict, resume: bool) -> dict | None:
    """The training state of ``checkpoint`` when it continues this run (None: no checkpoint);
    bad input when it is another run's, or when ``resume`` finds none."""
    from emts.train.export import read_saved

    if not checkpoint.exists():
        if resume:
            raise BadInputError(f"--resume: {checkpoint} not found: nothing to resume")
        return None
    remedy = f"delete it to start over, or adapt into another --out than {checkpoint.parent}"
    state = read_saved(checkpoint, "adapt checkpoint", remedy).get("state")
    saved_tag = state.get("tag") if isinstance(state, dict) else None
    if differs := _differences(saved_tag, tag):
        shown = "; ".join(differs[:3]) + ("; ..." if len(differs) > 3 else "")
        raise BadInputError(
            f"{checkpoint} is another run's checkpoint ({shown}); run its command again to "
            f"resume it, or {remedy}"
        )
    return state


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
    resume: bool = False,
) -> dict:
    """Fine-tune ``base_model`` (None: the default model; ``"auto"``: the shipped model that
    suits the footage) on ``footage``; writes ``out/model.onnx``, ``model.pt``, ``adapt.json``
    (provenance), ``curves.png`` and ``checkpoint.pt``.

    A run that ``out`` holds a checkpoint of is continued (``resume``: one must be there). A
    signal ends the run between steps with all of those files written, ``adapt.json`` saying
    ``"partial": true``, and one line on stderr saying how to resume; the interrupt goes on up.
    """
    from emts.io import signals_held
    from emts.stages.c_detect.detector import Detector, fixed_size
    from emts.train.export import detector_from_onnx, read_saved
    from emts.train.loop import CHECKPOINT, run_phases

    started = time.perf_counter()
    out = Path(out)
    base, picked = pick_base_model(base_model, footage)
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    # OpenCV's thread pool must never start in this process: the data loader forks
    # workers, and a fork taken while that pool holds its lock deadlocks them.
    cv2.setNumThreads(1)
    detector = Detector(base, threads=config.threads, threshold=config.ignore_score)
    if detector.residual_baseline != 1:  # the replay sets hold eq. 2's R only
        raise BadInputError(
            f"{base.name} was trained on R over {detector.residual_baseline} frames; emts adapt "
            "fine-tunes models of eq. 2's R (over the previous frame) only"
        )
    if tracks and len(tracks) != len(footage):
        raise BadInputError(f"--tracks: {len(tracks)} files for {len(footage)} footage")
    # In torch at the size it was trained at, on channels of the paper's warp: so was every
    # shipped model trained (the thermal one too: only its runtime warps at 640x512).
    model = detector_from_onnx(base).to(memory_format=torch.channels_last)
    replay, missing = look_for_replay(curriculum, hituav)
    warning = None
    if not replay:
        warning = (
            f"no replay data found (looked for {', '.join(missing) or 'none: none given'}): the "
            "model learns from this footage alone and may forget what it detected elsewhere; "
            "check it on other footage before flying it (--curriculum, --hituav)"
        )
        log.warning(warning)
    tag = {
        "base_model": str(base.resolve()),
        "footage": [[str(name), len(frames)] for name, frames in footage],
        "first_frame": first_frame,
        "tracks": [str(t) for t in tracks or []],
        "replay": sorted(replay),
        "config": {k: v for k, v in asdict(config).items() if k not in _NOT_THE_RUN},
    }
    checkpoint = out / CHECKPOINT
    saved = _resumable(checkpoint, tag, resume)
    if saved is not None:
        done = config.steps if saved["phase"] >= 1 else saved["step"]
        say = f"emts adapt: resuming {checkpoint} at step {done} of {config.steps}"
        print(say, file=sys.stderr)
    segments = [prepare_segment(name, frames, detector, config) for name, frames in footage]
    for segment, path in zip(segments, tracks or [], strict=False):
        segment.tracked, unsure = read_tracks(path, first_frame, len(segment.frames))
        pairs = zip(segment.ignore, unsure, strict=True)
        segment.ignore = [np.concatenate([a, b]) for a, b in pairs]
    sources = {"footage": OwnFootage(segments, config, model.network_size)}
    sources.update(_replay_sources(replay, model.network_size))
    mixture = {k: v for k, v in config.mixture.items() if k in sources}
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    ignored = [float(np.mean([len(b) for b in s.ignore])) for s in segments]
    report = {
        "command": command,
        "base_model": str(base),
        "base_model_picked_by": picked,
        "footage": [
            {"name": s.name, "frames": len(s.frames), "input_size": list(s.geometry.input_size)}
            for s in segments
        ],
        "ignore_regions_per_frame": [round(v, 2) for v in ignored],
        "pseudo_labels": [
            0 if s.tracked is None else int(sum(len(b) for b in s.tracked)) for s in segments
        ],
        "tracks": [str(t) for t in tracks or []],
        "replay": [str(path) for path in replay.values()],
        "replay_missing": missing,
        "replay_warning": warning,
        "mixture": mixture,
        "trained_at": "{}x{}".format(*model.network_size),
        "config": asdict(config),
    }
    open_size = fixed_size(detector.session) is None
    out.mkdir(parents=True, exist_ok=True)
    try:
        state = run_phases(
            model,
            optimizer,
            sources,
            [("adapt", config.steps, mixture)],
            config.training(),
            out,
            checkpoint_every=CHECKPOINT_EVERY,
            freeze_bn=True,
            tag=tag,
        )
    except KeyboardInterrupt:
        with signals_held():  # a second signal must not cut the files short
            if not checkpoint.exists():
                say = "emts adapt: stopped before the first step; nothing to resume"
                print(say, file=sys.stderr)
                raise
            state = read_saved(checkpoint, "adapt checkpoint", "")["state"]
            report["seconds"] = round(time.perf_counter() - started, 1)
            _write_outputs(model, base, out, state, report, open_size, config.steps)
            again = command if " --resume" in command else f"{command} --resume"
            how = again if command else "adapt_detector(..., resume=True)"
            print(
                f"emts adapt: stopped at step {report['steps_done']} of {config.steps}; "
                f"{out / 'model.onnx'} holds the model so far (partial: see adapt.json) and "
                f"{checkpoint} the run; to finish it: {how}",
                file=sys.stderr,
            )
        raise
    report["seconds"] = round(time.perf_counter() - started, 1)
    return _write_outputs(model, base, out, state, report, open_size, config.steps)


def _write_outputs(
    model, base: Path, out: Path, state: dict, report: dict, open_size: bool, steps: int
) -> dict:
    """``model.pt``, ``model.onnx`` (the starting model's runtime metadata copied),
    ``curves.png`` and ``adapt.json`` of the steps in ``state``; returns the report."""
    from emts.train.export import copy_runtime_metadata, export_onnx
    from emts.train.loop import plot_curves

    done = steps if state["phase"] >= 1 else state["step"]
    model.eval()
    torch.save(
        {
            "model": model.state_dict(),
            "config": asdict(model.config),
            "network_size": tuple(model.network_size),
        },
        out / "model.pt",
    )
    export_onnx(model, out / "model.onnx", any_size=open_size)
    inherited = copy_runtime_metadata(base, out / "model.onnx", any_size=open_size)
    plot_curves(state["history"], out / "curves.png")
    report.update(
        partial=done < steps,
        steps_done=done,
        metadata_inherited=inherited,  # from the starting model, not refitted (box scale)
        train_seconds=round(state["seconds"], 1),
        final=state["history"][-1] if state["history"] else None,
    )
    (out / "adapt.json").write_text(json.dumps(report, indent=1) + "\n")
    return report
