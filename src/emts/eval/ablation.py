"""The paper's single-factor ablation study (`tab:archablation`, `tab:thesisablation`, §6;
issue 57): what each variant changes, how one run of it is trained, and how every row is
scored under one protocol. :mod:`emts.eval.ablation_sweep` runs them as Ray tasks and
:mod:`emts.eval.ablation_report` writes the table.

**Variants** (:data:`VARIANTS`). Each is trained from scratch by
:func:`emts.train.loop.train_detector` with the shipped recipe (``TrainConfig()``, which is
``src/emts/models/detector.json``'s ``config``) and one factor changed. Our reference is the
deployed, *stateless* detector -- the paper's "w/o TSM" row -- whereas the paper's table is
relative to a TSM reference; each variant therefore names the row it differs from in exactly
one factor (``base``), and the deltas are taken against that row:

* ``reference``: the shipped recipe.
* ``pure-appearance``: R and D zeroed in every training sample and at evaluation; stateless,
  so each frame is seen alone: single-frame luminance (the paper's "w/o TSM + w/o motion").
* ``luminance-only``: R and D zeroed, bidirectional TSM kept (the network still sees
  luminance over time through its shifts): the paper's "w/o motion channels", one factor from
  ``tsm-bidirectional``, as the paper's row is one factor from its TSM reference.
* ``no-ego``: Stage B without Stage A's warp (``ChannelConfig(ego_compensation=False)``), in
  training (the sets' frames and Tier 2 run through Stages A and B again) and at evaluation.
* ``no-tier2``: no HIT-UAV still ever: both phases on the Tier-1 / negative mixture at phase
  2's 0.5 : 0.3 ratio, the same step counts.
* ``no-tier2-pretrain``: the paper's "w/o Tier-2 pretrain stage": phase 1 dropped, phase 2 as
  it is (its 20 % Tier-2 share kept).
* ``tsm-bidirectional`` / ``tsm-causal``: the temporal shift (`eq:tsm` / `eq:causaltsm`)
  trained *from scratch* with the same recipe (4-frame windows, as every recipe's batches
  are); both are streamed through the causal cached form at evaluation (the bidirectional
  one "converted", the paper's TSM reference).

**Scoring** (:func:`score`), the same for every row, in float (the deployed int8 row aside):
the held-out synthetic bench (frames 5-18 of each clip, AP@0.25 / AP@0.5, as ``emts eval
detect``); HIT-UAV val stills as 4-frame pseudo-clips, last frame scored, pseudo-clip seeds
0-2 pooled, persons-only and with vehicles moving (as ``emts eval real --seeds 3``); and
uav123-person12 frames 1-201 streamed through Stages A-B (as ``emts eval real``). Stateless
detectors see each scored frame alone; streaming TSM detectors are fed every frame of a clip
from its first motion frame with zero caches. Each row sees the channels it was trained on
(R and D zeroed; uncompensated Stage B).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError

# A run's folder: DIR/runs/<row>/<seed folder>/ (see :class:`RunSpec`).
RESULT = "result.json"
TRAINING = "training.json"
MODEL = "model.onnx"
SCORE_SETS = ("bench", "hituav", "person12")
HITUAV_SEEDS = 3  # pseudo-clip seeds pooled, as the shipped model's provenance is measured
EVAL_THRESHOLD = 0.01  # keep low scores for the PR curves (as emts eval detect / real)
NO_TIER2_MIXTURE = {"tier1": 0.625, "negative": 0.375}  # phase 2's 0.5 : 0.3 without Tier 2

# The paper's tab:archablation (three seeds, mean ± std; AP@0.5 single numbers) and
# tab:thesisablation: {row: (bench AP25 mean, std, bench AP50, VisDrone AP25 mean, std)}.
PAPER_ROWS: dict[str, tuple] = {
    "Full w/ TSM (reference)": (0.578, 0.021, 0.191, 0.315, 0.031),
    "w/o motion channels (lum. only)": (0.552, 0.018, 0.201, 0.051, 0.008),
    "w/o ego compensation": (0.584, 0.024, 0.252, 0.045, 0.007),
    "w/o TSM (stateless)": (0.688, 0.014, 0.406, 0.415, 0.022),
    "TSM causal-from-scratch": (0.611, 0.023, 0.219, 0.334, 0.028),
    "w/o TSM + w/o motion (pure app.)": (0.601, 0.019, 0.321, 0.076, 0.011),
    "w/o Tier-2 pretrain stage": (0.556, 0.026, 0.145, 0.315, 0.029),
    "EMTS-Det (int8, deployed)": (0.694, None, 0.434, 0.444, None),
    "Classical diff+blob": (0.120, None, 0.050, None, None),
}


@dataclass(frozen=True)
class Variant:
    """One row of the study: what it changes against ``base`` (the row it differs from in
    one factor) and the paper's row it reproduces (with the paper's own base row)."""

    name: str
    what: str
    base: str = "reference"
    paper_row: str | None = None
    paper_base: str | None = None
    tsm: str = "none"
    motion_channels: bool = True
    ego_compensation: bool = True
    tier2: str = "both"  # "both" phases, "no-pretrain" (phase 1 dropped), "none"
    trained: bool = True  # False: a shipped model or a baseline, scored only

    @property
    def streaming(self) -> bool:
        return self.tsm != "none"

    def train_config(self, seed: int, threads: int = 2, steps: int | None = None):
        """The shipped recipe with this variant's factor changed; ``steps``: a total step
        budget instead of the recipe's (tests and smoke runs only: not the study)."""
        from emts.train.loop import TrainConfig
        from emts.train.model import DetectorConfig

        if not self.trained:
            raise ValueError(f"{self.name} is not trained")
        config = TrainConfig(seed=seed, threads=threads)
        changes: dict = {
            "model": DetectorConfig(tsm=self.tsm),
            "motion_channels": self.motion_channels,
            "ego_compensation": self.ego_compensation,
        }
        if self.tier2 == "no-pretrain":
            changes["phase1_epochs"] = 0
        elif self.tier2 == "none":
            changes["phase1_mixture"] = dict(NO_TIER2_MIXTURE)
            changes["mixture"] = dict(NO_TIER2_MIXTURE)
        config = replace(config, **changes)
        return config if steps is None else with_step_budget(config, steps)


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(
            "reference",
            "the shipped recipe: stateless, [L, R, D], both phases",
            base="reference",
            paper_row="w/o TSM (stateless)",
        ),
        Variant(
            "luminance-only",
            "R and D zeroed (training and evaluation), bidirectional TSM kept",
            base="tsm-bidirectional",
            paper_row="w/o motion channels (lum. only)",
            paper_base="Full w/ TSM (reference)",
            tsm="bidirectional",
            motion_channels=False,
        ),
        Variant(
            "pure-appearance",
            "R and D zeroed (training and evaluation), stateless: single-frame luminance",
            paper_row="w/o TSM + w/o motion (pure app.)",
            paper_base="w/o TSM (stateless)",
            motion_channels=False,
        ),
        Variant(
            "no-ego",
            "Stage B without Stage A's warp (training and evaluation)",
            paper_row="w/o ego compensation",
            paper_base="Full w/ TSM (reference)",
            ego_compensation=False,
        ),
        Variant(
            "no-tier2",
            "no HIT-UAV still: both phases on Tier 1 + negatives (0.625 : 0.375)",
            tier2="none",
        ),
        Variant(
            "no-tier2-pretrain",
            "phase 1 (Tier-2 pretraining) dropped; phase 2 unchanged",
            paper_row="w/o Tier-2 pretrain stage",
            paper_base="Full w/ TSM (reference)",
            tier2="no-pretrain",
        ),
        Variant(
            "tsm-bidirectional",
            "bidirectional TSM from scratch, streamed causally at evaluation (converted)",
            paper_row="Full w/ TSM (reference)",
            paper_base="w/o TSM (stateless)",
            tsm="bidirectional",
        ),
        Variant(
            "tsm-causal",
            "causal TSM from scratch (eq:causaltsm from the first step)",
            paper_row="TSM causal-from-scratch",
            paper_base="w/o TSM (stateless)",
            tsm="causal",
        ),
    )
}
# tab:thesisablation's rows we can score honestly: scored once (no training, no seeds)
THESIS_ROWS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(
            "deployed-int8",
            "the shipped int8 detector (detector.int8.onnx), scored with the same protocol",
            base="reference",
            paper_row="EMTS-Det (int8, deployed)",
            trained=False,
        ),
        Variant(
            "classical",
            "compensated differencing + blobs on Stage B's R (emts.eval.detect."
            "ClassicalDetector, threshold 0.03)",
            base="reference",
            paper_row="Classical diff+blob",
            trained=False,
        ),
    )
}
ROWS: dict[str, Variant] = {**VARIANTS, **THESIS_ROWS}


def with_step_budget(config, steps: int):
    """``config`` with ``steps`` training steps in all, shared between its phases in the
    recipe's proportion (each phase with steps keeps at least one)."""
    if steps < 1:
        raise BadInputError("--steps must be at least 1")
    counts = [n for _, n, _ in config.phases()]
    total = sum(counts)
    first = 0 if counts[0] == 0 else max(1, round(steps * counts[0] / total))
    second = max(1, steps - first) if counts[1] else 0
    clips = config.batch_clips
    return replace(
        config,
        phase1_epochs=1 if first else 0,
        phase1_clips=first * clips,
        phase2_epochs=1 if second else 0,
        phase2_clips=second * clips,
    )


# --------------------------------------------------------------------------------------------
# What a run depends on


@dataclass(frozen=True)
class DataPaths:
    """The training sets and the scoring data (absolute paths: a Ray worker reads them)."""

    tier1: str
    negatives: str
    hituav: str
    bench: str
    person12: str

    def check(self, rows: list[Variant]) -> None:
        """One line for the first path the requested rows need and do not find."""
        clip_sets = {"bench": self.bench}
        if any(r.trained for r in rows):
            clip_sets = {"tier1": self.tier1, "negatives": self.negatives, **clip_sets}
        for name, folder in clip_sets.items():
            if not (Path(folder) / "manifest.json").is_file():
                raise BadInputError(f"--{name} {folder}: not a clip set; make it with emts synth")
        if not (Path(self.person12) / "groundtruth_rect.txt").is_file():
            raise BadInputError(f"--person12 {self.person12}: no groundtruth_rect.txt")
        for split in ("train", "val"):
            if not (Path(self.hituav) / f"{split}.json").is_file():
                raise BadInputError(f"--hituav {self.hituav}: no {split}.json (HIT-UAV folder)")

    def hashes(self) -> dict[str, str]:
        """sha256 (first 16 hex digits) of each data set's content: for a clip set its
        manifest without the generation's timing and byte count, and every clip's label file
        (a set generated again with the same command hashes the same on any machine); for
        HIT-UAV and person12 their label files."""
        out = {name: clip_set_hash(Path(getattr(self, name))) for name in CLIP_SETS}
        files = {
            "hituav_train": Path(self.hituav) / "train.json",
            "hituav_val": Path(self.hituav) / "val.json",
            "person12": Path(self.person12) / "groundtruth_rect.txt",
        }
        for name, path in files.items():
            try:
                out[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            except OSError:
                out[name] = None
        return {name: out[name] for name in DATA_ORDER}


# The clip sets a run depends on, and the order of a result's ``data`` entries.
CLIP_SETS = ("tier1", "negatives", "bench")
DATA_ORDER = ("tier1", "negatives", "hituav_train", "hituav_val", "bench", "person12")
# A manifest's entries that differ between two generations of the same set.
UNHASHED_MANIFEST_KEYS = ("seconds", "frames_per_second", "bytes")


def clip_set_hash(folder: Path) -> str | None:
    """sha256 (16 hex digits) of a clip set's content: its manifest less
    :data:`UNHASHED_MANIFEST_KEYS`, then each ``clips/*.json`` in name order (the labels,
    camera motion and scene of every clip); None when the folder holds no manifest."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    for key in UNHASHED_MANIFEST_KEYS:
        manifest.pop(key, None)
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode())
    for label in sorted((folder / "clips").glob("*.json")):
        digest.update(label.name.encode())
        digest.update(label.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Protocol:
    """Scoring limits; the defaults are the study's. Anything else is a smoke run (its
    results say ``study: false``)."""

    bench_clips: int | None = None
    hituav_images: int | None = None
    person12_frames: int = 201
    hituav_seeds: int = HITUAV_SEEDS

    @property
    def is_study(self) -> bool:
        return self == Protocol()


@dataclass(frozen=True)
class RunSpec:
    """One run: a row, a training seed (None for a row scored once), its folder."""

    row: str
    seed: int | None
    folder: str
    steps: int | None = None  # a step budget override (not the study)
    threads: int = 2
    protocol: Protocol = field(default_factory=Protocol)

    @property
    def variant(self) -> Variant:
        return ROWS[self.row]

    @property
    def label(self) -> str:
        return self.row if self.seed is None else f"{self.row} seed {self.seed}"

    @property
    def is_study(self) -> bool:
        return self.steps is None and self.protocol.is_study


def seed_folder(seed: int | None) -> str:
    return "once" if seed is None else f"seed{seed}"


def code_version() -> dict:
    """The git revision of the code that runs (and whether it had uncommitted changes), or
    the package version where there is no git checkout."""
    import emts

    root = Path(emts.__file__).resolve().parents[2]
    version = {"emts": emts.__version__}
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if head.returncode == 0:
            version["git"] = head.stdout.strip()
            status = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            version["dirty"] = bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def write_json(path: Path, value: dict) -> None:
    """Write ``value`` whole or not at all."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    os.replace(part, path)


def read_json(path: Path) -> dict | None:
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# --------------------------------------------------------------------------------------------
# Training


def train_run(spec: RunSpec, data: DataPaths, device: str = "cpu") -> dict:
    """Train ``spec``'s row from scratch (resuming ``train/checkpoint.pt`` when a killed run
    left one), export ``model.onnx`` and write ``training.json``; a run whose
    ``training.json`` is there already is returned as it is."""
    folder = Path(spec.folder)
    done = read_json(folder / TRAINING)
    if done is not None and (folder / MODEL).is_file():
        return done
    from emts.train.export import export_onnx, export_streaming_onnx, load_trained
    from emts.train.loop import CHECKPOINT, train_detector

    variant = spec.variant
    config = variant.train_config(spec.seed, spec.threads, spec.steps)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    resumed = (folder / "train" / CHECKPOINT).is_file()  # a killed run's last checkpoint
    metrics = train_detector(
        folder / "train", data.tier1, data.negatives, data.hituav, config, device=device
    )
    model = load_trained(folder / "train" / "model.pt")
    part = folder / (MODEL + ".part")
    if variant.streaming:
        export_streaming_onnx(model, part)
    else:
        export_onnx(model, part)
    os.replace(part, folder / MODEL)
    record = {
        "row": spec.row,
        "seed": spec.seed,
        "config": asdict(config),
        "steps": sum(n for _, n, _ in config.phases()),
        "step_budget_override": spec.steps,
        "device": device,
        "host": socket.gethostname(),
        "train_seconds": metrics["train_seconds"],
        "task_seconds": round(time.perf_counter() - started, 1),
        "final_losses": metrics["final"],
        "resumed_from_checkpoint": resumed,
    }
    write_json(folder / TRAINING, record)
    return record


# --------------------------------------------------------------------------------------------
# Scoring


class RowDetector:
    """One row's detector under its own channel recipe: (3, H, W) channels at 256x192 ->
    (boxes NETWORK px, scores). :meth:`reset` at the start of every clip (streaming rows)."""

    def __init__(self, spec: RunSpec) -> None:
        variant = spec.variant
        self.motion_channels = variant.motion_channels
        self.ego_compensation = variant.ego_compensation
        self.streaming = variant.streaming
        if variant.name == "classical":
            from emts.eval.detect import ClassicalDetector

            self._detect = ClassicalDetector()
            self._stream = None
            return
        if variant.name == "deployed-int8":
            from emts.precision import shipped_model

            model = shipped_model("detector", "int8")
        else:
            model = Path(spec.folder) / MODEL
        if self.streaming:
            from emts.stages.c_detect.streaming import StreamingDetector

            self._stream = StreamingDetector(model, threads=1, threshold=EVAL_THRESHOLD)
            self._detect = None
        else:
            from emts.stages.c_detect.detector import Detector

            self._detect = _boxes_of(
                Detector(model, threads=1, threshold=EVAL_THRESHOLD, network_size=NETWORK_SIZE)
            )
            self._stream = None

    def reset(self) -> None:
        if self._stream is not None:
            self._stream.reset()

    def __call__(self, channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.motion_channels:
            from emts.train.data import without_motion

            channels = without_motion(channels)
        if self._stream is not None:
            detections = self._stream(channels)
            boxes = np.array([d.box for d in detections], float).reshape(-1, 4)
            return boxes, np.array([d.score for d in detections], float)
        return self._detect(channels)


def _boxes_of(detector):
    def detect(channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        detections = detector(channels)
        boxes = np.array([d.box for d in detections], float).reshape(-1, 4)
        return boxes, np.array([d.score for d in detections], float)

    return detect


def score_bench(detect: RowDetector, bench: str, clips: int | None) -> dict:
    """Frames 5-18 of every bench clip (AP@0.25, AP@0.5): a stateless row sees each scored
    frame alone, a streaming one every frame from the first with motion channels."""
    from emts.eval.detect import BENCH_FRAMES, ground_truth, summarize
    from emts.eval.metrics import ImageResult
    from emts.front_end import channels_at
    from emts.synth.store import ClipSet

    clip_set = ClipSet(bench)
    indices = clip_set.indices[:clips] if clips else clip_set.indices
    results = []
    first = 1 if detect.streaming else min(BENCH_FRAMES)
    for index in indices:
        clip = clip_set.load(index)
        channels = (
            clip.channels
            if detect.ego_compensation
            else channels_at(clip.frames, ego_compensation=False)
        )
        detect.reset()
        for t in range(first, max(BENCH_FRAMES) + 1):
            boxes, scores = detect(channels[t])
            if t in BENCH_FRAMES:
                gt, ignore = ground_truth(clip.labels["frames"][t]["persons"])
                results.append(ImageResult(gt, ignore, boxes, scores))
    summary = summarize(results)  # emts eval detect's figures
    return {k: summary[k] for k in ("images", "persons", "AP@0.25", "AP@0.5")}


def _working(frame, boxes: np.ndarray) -> np.ndarray:
    from emts.geometry import Frame

    return frame.geometry.boxes(boxes, Frame.NETWORK, Frame.WORKING) if len(boxes) else boxes


def score_hituav(detect: RowDetector, hituav: str, protocol: Protocol) -> dict:
    """HIT-UAV val pseudo-clips (seeds 0..n-1 pooled), last frame scored, both variants."""
    from emts.eval.metrics import ImageResult, coco_ap
    from emts.eval.real_frames import HITUAV_VARIANTS, hituav_frames

    out = {}
    for variant in HITUAV_VARIANTS:
        results = []
        for seed in range(protocol.hituav_seeds):
            frames = hituav_frames(
                hituav,
                "val",
                variant,
                seed,
                protocol.hituav_images,
                [NETWORK_SIZE],
                ego_compensation=detect.ego_compensation,
            )
            for frame in frames:
                detect.reset()
                if detect.streaming:
                    for channels, _ in frame.history or []:
                        detect(channels[NETWORK_SIZE])
                boxes, scores = detect(frame.channels)
                gt = frame.gt
                results.append(
                    ImageResult(gt, np.zeros(len(gt), bool), _working(frame, boxes), scores)
                )
        ap = coco_ap(results)
        out[variant] = {
            "images": len(results),
            "persons": int(sum(len(r.gt_boxes) for r in results)),
            "AP@0.25": round(ap["AP@0.25"], 4),
            "AP@0.5": round(ap["AP@0.5"], 4),
        }
    return out


def score_person12(detect: RowDetector, person12: str, frames: int) -> dict:
    """uav123-person12 frames 1..``frames`` streamed through Stages A-B (as ``emts eval
    real``): recall and FP/frame at tau_s 0.3, AP@0.25, AP@0.5."""
    from emts.eval.metrics import ImageResult
    from emts.eval.real_frames import person12_frames
    from emts.eval.real_metrics import person_metrics

    results = []
    detect.reset()
    stream = person12_frames(
        person12, frames, [NETWORK_SIZE], ego_compensation=detect.ego_compensation
    )
    for frame in stream:
        boxes, scores = detect(frame.channels)
        results.append(
            ImageResult(frame.gt, np.zeros(len(frame.gt), bool), _working(frame, boxes), scores)
        )
    metrics = person_metrics(results)
    return {k: v for k, v in metrics.items() if not k.startswith("_")}


def score(spec: RunSpec, data: DataPaths, which: str) -> dict:
    """Score ``spec``'s row on one set (``bench``, ``hituav`` or ``person12``); written to
    ``scores/<set>.json`` and returned (a set scored earlier is read back, not redone)."""
    if which not in SCORE_SETS:
        raise ValueError(f"unknown score set {which!r}")
    path = Path(spec.folder) / "scores" / f"{which}.json"
    done = read_json(path)
    if done is not None:
        return done
    detect = RowDetector(spec)
    started = time.perf_counter()
    protocol = spec.protocol
    if which == "bench":
        figures = score_bench(detect, data.bench, protocol.bench_clips)
    elif which == "hituav":
        figures = score_hituav(detect, data.hituav, protocol)
    else:
        figures = score_person12(detect, data.person12, protocol.person12_frames)
    record = {
        "set": which,
        "figures": figures,
        "seconds": round(time.perf_counter() - started, 1),
        "host": socket.gethostname(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)
    return record


# The table's columns: (name, set, path into the set's figures)
COLUMNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("bench AP@0.25", "bench", ("AP@0.25",)),
    ("bench AP@0.5", "bench", ("AP@0.5",)),
    ("HIT-UAV persons AP@0.25", "hituav", ("persons", "AP@0.25")),
    ("HIT-UAV vehicles AP@0.25", "hituav", ("vehicles", "AP@0.25")),
    ("person12 AP@0.25", "person12", ("AP@0.25",)),
    ("person12 recall@0.3", "person12", ("recall@0.3",)),
)


def library_versions() -> dict[str, str | None]:
    """Python's and the numeric libraries' versions: a clip set generated again under other
    versions (a fresh virtual environment resolves the newest numpy and OpenCV) can hash
    differently, and a training can differ in its last digits."""
    import platform
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("numpy", "opencv-python-headless", "onnxruntime", "torch", "onnx"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def result_record(
    spec: RunSpec, data: DataPaths, training: dict | None, scores: dict[str, dict]
) -> dict:
    """A run's ``result.json``: what ran (row, seed, config, code, data) and its scores."""
    columns = {}
    for name, which, keys in COLUMNS:
        value = scores[which]["figures"]
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        columns[name] = value
    variant = spec.variant
    return {
        "row": spec.row,
        "seed": spec.seed,
        "what": variant.what,
        "base": variant.base,
        "study": spec.is_study,
        "step_budget_override": spec.steps,
        "protocol": asdict(spec.protocol),
        "config": training["config"] if training else None,
        "train_seconds": training["train_seconds"] if training else None,
        "training_device": training["device"] if training else None,
        "code": code_version(),
        "data": data.hashes(),
        "libraries": library_versions(),
        "scores": columns,
        "figures": {which: scores[which]["figures"] for which in SCORE_SETS},
        "score_seconds": {which: scores[which]["seconds"] for which in SCORE_SETS},
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
