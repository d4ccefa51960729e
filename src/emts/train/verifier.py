"""Stage E training (§3.6, §4.4): descriptor windows from synthetic clips, a 1-D CNN, ROC.

Windows of 16 descriptors (frames 2-17 of each 18-frame clip) are built from
* ground-truth person tracks (positives) and animal / vehicle tracks (negatives);
* ground-fixed boxes on person-free clips (negatives: vegetation, shimmer, cloud shadows,
  flicker, parallax and registration noise at a place where nothing walks);
* the same boxes jittered frame to frame, and *detector-proposed* tracks (the detector's boxes
  linked frame to frame), labeled by their overlap with ground-truth persons -- the sloppy,
  jittering boxes the verifier receives at run time.
"""

from __future__ import annotations

import json
import logging
import zipfile
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from emts.config import VerifierConfig
from emts.errors import BadInputError
from emts.front_end import channels_at
from emts.geometry import WORKING_GEOMETRY, Frame, lift
from emts.stages.a_ego_motion import EgoMotionEstimator
from emts.stages.c_detect.detector import Detector
from emts.stages.c_detect.detector import default_model_path as default_detector
from emts.stages.e_verify import (
    DESCRIPTOR_SIZE,
    RESOLUTION_METADATA,
    FrameView,
    describe,
    ground_travel,
)
from emts.synth.store import ClipSet, StoredClip

log = logging.getLogger(__name__)

GEOMETRY = WORKING_GEOMETRY
WINDOW_FRAMES = range(2, 18)
JITTER = 0.1  # per-frame box jitter, fraction of the box size


class VerifierNet(nn.Module):
    """Two Conv1d, global average pooling, two linear layers (~8.1k parameters at width 32, §3.6).

    Input (B, 40, 16) descriptor windows; output (B, 1) logits. A fixed per-feature
    standardization (from the training windows) is part of the model, so it is exported too;
    with ``log_eps`` the descriptors go through ``log(x + log_eps)`` first (flow magnitudes
    span two decades; a buffer named ``log_eps`` marks such a model in its ONNX file).
    """

    def __init__(self, width: int = 32, hidden: int = 32, log_eps: float | None = None) -> None:
        super().__init__()
        if log_eps is not None:
            self.register_buffer("log_eps", torch.tensor(float(log_eps)))
        self.register_buffer("mean", torch.zeros(1, DESCRIPTOR_SIZE, 1))
        self.register_buffer("std", torch.ones(1, DESCRIPTOR_SIZE, 1))
        self.features = nn.Sequential(
            nn.Conv1d(DESCRIPTOR_SIZE, width, 3, padding=1),
            nn.ReLU(),
            nn.Conv1d(width, width, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        """The model's own input transform (log, then standardization)."""
        if hasattr(self, "log_eps"):
            x = torch.log(x + self.log_eps)
        return (x - self.mean) / self.std

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(self.prepare(x)))


class _TrainingNet(VerifierNet):
    """:class:`VerifierNet` with BatchNorm after each convolution and dropout in the head while
    training; :meth:`deployable` folds the BatchNorms into the convolutions (same outputs in
    eval mode), so the exported graph is the plain :class:`VerifierNet`."""

    def __init__(
        self, width: int, hidden: int, log_eps: float | None, dropout: float, batchnorm: bool
    ) -> None:
        super().__init__(width, hidden, log_eps)
        norm = (lambda: nn.BatchNorm1d(width)) if batchnorm else nn.Identity
        self.norms = nn.ModuleList([norm(), norm()])
        self.dropout = nn.Dropout(dropout)
        self.width, self.hidden, self.eps = width, hidden, log_eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.features
        h = torch.relu(self.norms[0](f[0](self.prepare(x))))
        h = torch.relu(self.norms[1](f[2](h))).mean(dim=2)
        h = self.dropout(torch.relu(self.head[1](self.dropout(h))))
        return self.head[3](h)

    def deployable(self) -> VerifierNet:
        model = VerifierNet(self.width, self.hidden, self.eps)
        state = {k: v for k, v in self.state_dict().items() if k in model.state_dict()}
        for conv, norm in zip((0, 2), self.norms, strict=True):
            if isinstance(norm, nn.BatchNorm1d):
                scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
                state[f"features.{conv}.weight"] = (
                    self.features[conv].weight * scale[:, None, None]
                ).detach()
                state[f"features.{conv}.bias"] = (
                    (self.features[conv].bias - norm.running_mean) * scale + norm.bias
                ).detach()
        model.load_state_dict(state)
        return model.eval()


def merge_members(members: list[VerifierNet]) -> VerifierNet:
    """One :class:`VerifierNet` whose logit is the mean of ``members``' logits: width and
    hidden units side by side, the second convolution and first linear layer block-diagonal
    (zeros between members), the last layer's weights and bias averaged. The merged model is
    an ordinary verifier graph (same input, output and ops), so the runtime, ``emts quantize``
    and the LiteRT export take it as they take one network. The members must share their
    input transform (standardization from the same training windows, the same log)."""
    first = members[0]
    if len(members) == 1:
        return first
    for member in members[1:]:
        for name in ("mean", "std", *(("log_eps",) if hasattr(first, "log_eps") else ())):
            if not torch.equal(getattr(member, name), getattr(first, name)):
                raise ValueError(f"members differ in their input transform ({name})")
    width = sum(m.features[0].out_channels for m in members)
    hidden = sum(m.head[1].out_features for m in members)
    log_eps = float(first.log_eps) if hasattr(first, "log_eps") else None
    merged = VerifierNet(width, hidden, log_eps)
    with torch.no_grad():
        merged.mean.copy_(first.mean)
        merged.std.copy_(first.std)
        merged.features[0].weight.copy_(torch.cat([m.features[0].weight for m in members]))
        merged.features[0].bias.copy_(torch.cat([m.features[0].bias for m in members]))
        merged.features[2].weight.copy_(_block_diagonal([m.features[2].weight for m in members]))
        merged.features[2].bias.copy_(torch.cat([m.features[2].bias for m in members]))
        merged.head[1].weight.copy_(_block_diagonal([m.head[1].weight for m in members]))
        merged.head[1].bias.copy_(torch.cat([m.head[1].bias for m in members]))
        merged.head[3].weight.copy_(
            torch.cat([m.head[3].weight for m in members], 1) / len(members)
        )
        merged.head[3].bias.copy_(torch.stack([m.head[3].bias for m in members]).mean(0))
    return merged.eval()


def _block_diagonal(blocks: list[torch.Tensor]) -> torch.Tensor:
    """(out_k, in_k, ...) blocks on the diagonal of one (sum out, sum in, ...) tensor."""
    out = torch.zeros(
        sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks), *blocks[0].shape[2:]
    )
    row = column = 0
    for b in blocks:
        out[row : row + b.shape[0], column : column + b.shape[1]] = b
        row, column = row + b.shape[0], column + b.shape[1]
    return out


@dataclass(frozen=True)
class TrainOptions:
    """Stage E training recipe (``emts train verifier`` options)."""

    epochs: int = 30
    width: int = 32
    hidden: int = 32
    log_eps: float | None = None  # log(x + eps) inside the model; None: raw descriptors
    batchnorm: bool = False
    dropout: float = 0.0
    lr: float = 2e-3
    one_cycle: bool = False  # one-cycle (cosine) learning-rate schedule peaking at lr
    augment: tuple[str, ...] = ()  # "scale" (speed, x exp(N(0, 0.3))), "mirror" (left-right)
    seed: int = 0
    resolution: str = "working"  # Stage E's input: "working" frames or "network" (the paper's)
    # windows at 30 / stride fps (a set serves the largest stride its clips are long enough for)
    strides: tuple[int, ...] = (1,)
    registration_noise: float = 0.0  # px, training windows only (build_windows)
    # networks trained with seeds seed, seed + 1, ... and merged into one (merge_members)
    members: int = 1


@dataclass
class Windows:
    x: np.ndarray  # (N, 40, 16)
    y: np.ndarray  # (N,) 1 = person
    kind: list[str]  # where each window came from


def _network_box(box) -> np.ndarray:
    return GEOMETRY.boxes([box], Frame.INPUT, Frame.NETWORK)[0]


class _ClipView:
    """Stage E's view of one stored clip: descriptors at the model's input ``resolution``
    (``"network"``: Stage B's channels, the paper's; ``"working"``: the 640x512 frames with
    Stage A's own motion estimates, as the pipeline runs it)."""

    def __init__(
        self,
        clip,
        resolution: str,
        config: VerifierConfig,
        stride: int = 1,
        registration_noise: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.clip, self.resolution, self.config = clip, resolution, config
        self.scale = np.float32(1 / stride)  # flow in px per 1/30 s, as the pipeline's
        if resolution == "working":
            stage_a = EgoMotionEstimator()
            self.motions = [np.asarray(stage_a.update(f).matrix) for f in clip.frames]
            if registration_noise > 0:  # a coherent residual of the camera motion
                rng = rng or np.random.default_rng()
                bias = rng.normal(0, registration_noise, 2)
                for t, m in enumerate(self.motions):
                    shift = bias + rng.normal(0, registration_noise / 3, 2)
                    self.motions[t] = np.hstack([m[:, :2], m[:, 2:] + shift[:, None]])

    def descriptor(self, t: int, box: np.ndarray) -> np.ndarray:
        """The descriptor of frame ``t`` for ``box`` (NETWORK px)."""
        view = FrameView(self.clip.channels[t])
        if self.resolution == "working":
            frames = self.clip.frames
            view = FrameView(view.channels, frames[t], frames[t - 1], self.motions[t], GEOMETRY)
        pair = view.roi_pair(box, self.resolution, self.config)
        return describe(*pair, self.config) * self.scale

    def window(self, boxes: list[np.ndarray]) -> np.ndarray:
        return np.stack(
            [self.descriptor(t, b) for t, b in zip(WINDOW_FRAMES, boxes, strict=True)], axis=1
        )


def frames_needed(stride: int) -> int:
    """Frames per 30-fps clip for one window at ``stride`` (every stride-th frame: 30/stride
    fps)."""
    return (WINDOW_FRAMES.stop - 1) * stride + 1


def strided_clip(clip: StoredClip, stride: int) -> StoredClip:
    """``clip`` as a camera at 30/``stride`` fps delivers it: every ``stride``-th frame, their
    labels, the camera motions between them composed, and Stage A/B run on them afresh."""
    if stride == 1:
        return clip
    keep = list(range(0, len(clip.frames), stride))[: frames_needed(1)]
    frames = [clip.frames[i] for i in keep]
    label_frames = []
    for j, i in enumerate(keep):
        motion = np.eye(3)
        for k in range(keep[j - 1] + 1, i + 1) if j else ():
            motion = lift(np.array(clip.labels["frames"][k]["camera_motion"])) @ motion
        label_frames.append(
            {**clip.labels["frames"][i], "frame": j, "camera_motion": motion[:2].tolist()}
        )
    return StoredClip(
        clip.index, frames, channels_at(frames), {**clip.labels, "frames": label_frames}
    )


def _strides_of(folders: list[str | Path], strides: tuple[int, ...]) -> dict[int, list]:
    """Each set serves the largest of ``strides`` its clips are long enough for."""
    groups: dict[int, list] = {}
    for folder in folders:
        length = ClipSet(folder).manifest.get("frames_per_clip", frames_needed(1))
        usable = [s for s in strides if frames_needed(s) <= length]
        if not usable:
            raise BadInputError(
                f"{folder}: {length}-frame clips are too short for stride {min(strides)} "
                f"(emts synth ... --frames {frames_needed(min(strides))})"
            )
        groups.setdefault(max(usable), []).append(folder)
    return dict(sorted(groups.items()))


def _iou(a, b) -> float:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    inter = max(x1 - x0, 0) * max(y1 - y0, 0)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter + 1e-9)


def _jittered(boxes, rng):
    return [
        b + np.concatenate([rng.normal(0, JITTER, 2) * b[2:], b[2:] * rng.normal(0, JITTER, 2)])
        for b in boxes
    ]


def _gt_tracks(labels: dict, key: str) -> dict:
    tracks: dict = {}
    for t in WINDOW_FRAMES:
        for item in labels["frames"][t][key]:
            if key == "persons" and item["visible"] < 0.5:
                continue
            tracks.setdefault((item.get("kind", "person"), item["id"]), {})[t] = _network_box(
                item["box"]
            )
    return {
        k: [v[t] for t in WINDOW_FRAMES] for k, v in tracks.items() if len(v) == len(WINDOW_FRAMES)
    }


def _carried(labels: dict, t: int, point: np.ndarray, frame: Frame = Frame.WORKING) -> np.ndarray:
    """``point`` (in ``frame`` px) on frame t-1 carried to frame t by the clip's true camera
    motion: where a spot of the ground goes."""
    m = np.array(labels["frames"][t]["camera_motion"])
    if frame != Frame.WORKING:
        m = GEOMETRY.motion(m, Frame.WORKING, frame)
    return m[:, :2] @ point + m[:, 2]


# A person whose window covers less ground than this many body heights (standing, pausing:
# a walker covers ~0.75 in 16 frames at 30 fps) shows no gait to verify: kind "person-still".
STILL_TRAVEL = 0.2


def _travel(labels: dict, boxes: list[np.ndarray]) -> float:
    """Ground covered by a track over its window, in body heights (the clip's true camera
    motion removed: :func:`emts.stages.e_verify.ground_travel`)."""
    motions = [
        GEOMETRY.motion(
            np.array(labels["frames"][t]["camera_motion"]), Frame.WORKING, Frame.NETWORK
        )
        for t in WINDOW_FRAMES
    ]
    return ground_travel(boxes, motions)


def _ground_fixed(labels: dict, rng) -> list[np.ndarray]:
    """A person-sized box at a random ground spot, carried along by the true camera motion."""
    height = float(np.exp(rng.uniform(np.log(8), np.log(50))))
    centre = rng.uniform([40, 30], [600, 480])
    boxes = []
    for t in range(18):
        centre = _carried(labels, t, centre)
        if t in WINDOW_FRAMES:
            scale = GEOMETRY.matrix(Frame.NETWORK, Frame.WORKING)[0, 0]  # network -> frame px
            w, h = height * 0.45 * scale, height * scale
            boxes.append(_network_box([centre[0] - w / 2, centre[1] - h / 2, w, h]))
    return boxes


def _detector_tracks(channels: np.ndarray, labels: dict, detector: Detector):
    """Detections linked frame to frame from frame 2 (nearest within 2 cells), by overlap."""
    detections = {t: detector(channels[t]) for t in WINDOW_FRAMES}
    first = WINDOW_FRAMES[0]
    out = []
    for seed in detections[first][:5]:
        boxes = [seed.box]
        for t in list(WINDOW_FRAMES)[1:]:
            previous = boxes[-1]
            centre = _carried(labels, t, previous[:2] + previous[2:] / 2, Frame.NETWORK)
            near = [
                d for d in detections[t] if np.hypot(*(d.box[:2] + d.box[2:] / 2 - centre)) < 16
            ]
            if near:
                best = min(near, key=lambda d: np.hypot(*(d.box[:2] + d.box[2:] / 2 - centre)))
                boxes.append(best.box)
            else:
                boxes.append(
                    np.array(
                        [centre[0] - previous[2] / 2, centre[1] - previous[3] / 2, *previous[2:]]
                    )
                )
        hits = 0
        for t, box in zip(WINDOW_FRAMES, boxes, strict=True):
            persons = [_network_box(p["box"]) for p in labels["frames"][t]["persons"]]
            hits += any(_iou(box, p) >= 0.3 for p in persons)
        if hits >= 0.75 * len(boxes):
            out.append((boxes, 1))
        elif hits == 0:
            out.append((boxes, 0))
    return out


def build_windows(
    folders: list[str | Path],
    detector: Detector | None,
    seed: int = 0,
    config: VerifierConfig | None = None,
    resolution: str = "network",
    stride: int = 1,
    registration_noise: float = 0.0,
) -> Windows:
    """Descriptor windows of every clip of ``folders`` (see the module docstring).
    ``registration_noise`` (working resolution): per clip, Stage A's motions are offset by a
    translation drawn from N(0, sigma) px plus N(0, sigma / 3) px per frame -- the coherent
    residual a real camera's registration leaves on the ground (parallax, lens, rolling
    shutter), which a synthetic planar plate does not."""
    config = config or VerifierConfig()
    rng = np.random.default_rng(seed)
    xs, ys, kinds = [], [], []

    def add(boxes, label, kind):
        xs.append(view.window(boxes))
        ys.append(label)
        kinds.append(kind)

    for folder in folders:
        clip_set = ClipSet(folder)
        for position in tqdm(
            range(len(clip_set)), desc=f"windows {Path(folder).name}", disable=None
        ):
            clip = strided_clip(clip_set[position], stride)
            channels, labels = clip.channels, clip.labels
            view = _ClipView(clip, resolution, config, stride, registration_noise, rng)
            for boxes in _gt_tracks(labels, "persons").values():
                kind = "person" if _travel(labels, boxes) >= STILL_TRAVEL else "person-still"
                add(boxes, 1, kind)
                add(_jittered(boxes, rng), 1, f"{kind}-jittered")
            for (kind, _), boxes in _gt_tracks(labels, "distractors").items():
                add(boxes, 0, kind)
                add(_jittered(boxes, rng), 0, f"{kind}-jittered")
            if labels["kind"] == "negative":
                for _ in range(2):
                    add(_jittered(_ground_fixed(labels, rng), rng), 0, "ground")
            if detector is not None:
                for boxes, label in _detector_tracks(channels, labels, detector):
                    add(boxes, label, "detector-person" if label else "detector-clutter")
    return Windows(np.stack(xs).astype(np.float32), np.array(ys, np.float32), kinds)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with ties averaged)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    positives = labels == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1))


# Left-right mirror of a descriptor: grid columns swapped, orientation bins mirrored about the
# vertical (0-90 <-> 90-180 deg, 180-270 <-> 270-360 deg); layout (rows 4, columns 2, 1 + 4).
MIRROR = np.arange(DESCRIPTOR_SIZE).reshape(4, 2, 5)[:, ::-1][:, :, [0, 2, 1, 4, 3]].reshape(-1)
SPEED_SCALE_SIGMA = 0.3


def _augment(x: torch.Tensor, augment: tuple[str, ...], generator) -> torch.Tensor:
    if "scale" in augment:  # the descriptor is linear in flow magnitude: a faster or slower mover
        x = x * torch.exp(torch.randn(len(x), 1, 1, generator=generator) * SPEED_SCALE_SIGMA)
    if "mirror" in augment:
        flip = torch.rand(len(x), generator=generator) < 0.5
        x = torch.where(flip[:, None, None], x[:, torch.from_numpy(MIRROR.copy())], x)
    return x


def train_verifier(
    train: Windows, epochs: int = 30, seed: int = 0, options: TrainOptions | None = None
) -> VerifierNet:
    """The trained verifier: ``options.members`` networks merged into one."""
    o = options or TrainOptions(epochs=epochs, seed=seed)
    return merge_members(train_members(train, o))


def train_members(train: Windows, options: TrainOptions) -> list[VerifierNet]:
    """``options.members`` networks trained on ``train`` with seeds seed, seed + 1, ..."""
    unknown = set(options.augment) - {"scale", "mirror"}
    if unknown:
        raise ValueError(f"unknown augmentation {sorted(unknown)}: scale, mirror")
    if options.members < 1:
        raise ValueError(f"members {options.members}: expected >= 1")
    return [
        _train_one(train, replace(options, seed=options.seed + k)) for k in range(options.members)
    ]


def _train_one(train: Windows, o: TrainOptions) -> VerifierNet:
    torch.manual_seed(o.seed)
    model = _TrainingNet(o.width, o.hidden, o.log_eps, o.dropout, o.batchnorm)
    x = torch.from_numpy(train.x)
    y = torch.from_numpy(train.y)
    prepared = torch.log(x + o.log_eps) if o.log_eps is not None else x
    model.mean.copy_(prepared.mean(dim=(0, 2), keepdim=True))
    model.std.copy_(prepared.std(dim=(0, 2), keepdim=True).clamp(min=1e-3))
    optimizer = torch.optim.Adam(model.parameters(), lr=o.lr)
    batches = (len(x) + 255) // 256
    schedule = (
        torch.optim.lr_scheduler.OneCycleLR(optimizer, o.lr, total_steps=o.epochs * batches)
        if o.one_cycle
        else None
    )
    positive_weight = (y == 0).sum().float() / max(int((y == 1).sum()), 1)
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=positive_weight)
    generator = torch.Generator().manual_seed(o.seed)
    model.train()
    for _ in tqdm(range(o.epochs), desc="train verifier", disable=None):
        for batch in torch.randperm(len(x), generator=generator).split(256):
            xb = _augment(x[batch], o.augment, generator)
            loss = loss_fn(model(xb).squeeze(1), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if schedule is not None:
                schedule.step()
    return model.eval().deployable()


def export_verifier(model: VerifierNet, out: str | Path, resolution: str = "network") -> Path:
    """``model`` as ONNX at ``out``, with the frames its descriptors come from in the metadata
    (:attr:`emts.stages.e_verify.Verifier.resolution`)."""
    import onnx

    from emts.train.export import _set_metadata

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(
        model.eval(),
        torch.zeros(1, DESCRIPTOR_SIZE, 16),
        str(out),
        input_names=["descriptors"],
        output_names=["logit"],
        dynamic_axes={"descriptors": {0: "batch"}, "logit": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    graph_model = onnx.load(str(out))
    _set_metadata(graph_model, RESOLUTION_METADATA, resolution)
    onnx.save(graph_model, str(out))
    model.eval()
    return out


def plot_roc(labels: np.ndarray, scores: np.ndarray, auc: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    thresholds = np.unique(scores)[::-1]
    tpr = [(scores[labels == 1] >= t).mean() for t in thresholds]
    fpr = [(scores[labels == 0] >= t).mean() for t in thresholds]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, *fpr, 1], [0, *tpr, 1], label=f"verifier (AUC {auc:.3f})")
    ax.plot([0, 1], [0, 1], "--", color="gray")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title("Stage E on held-out plates")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cached_windows(
    folders: list[str],
    detector: Detector | None,
    seed: int,
    cache: str | Path | None,
    detector_path: str | Path | None = None,
    resolution: str = "network",
    stride: int = 1,
    registration_noise: float = 0.0,
) -> Windows:
    """:func:`build_windows`, stored in ``cache`` (an .npz per folder list, seed, detector and
    Stage E configuration; building is the slow part), or built afresh without a cache."""
    if cache is None:
        return build_windows(folders, detector, seed, None, resolution, stride, registration_noise)
    import hashlib

    key = {
        "version": 2,
        "folders": [
            [str(f), hashlib.sha256((Path(f) / "manifest.json").read_bytes()).hexdigest()]
            for f in folders
        ],
        "seed": seed,
        "detector": None
        if detector is None
        else hashlib.sha256(Path(detector_path or default_detector()).read_bytes()).hexdigest(),
        "config": asdict(VerifierConfig()),
        "resolution": resolution,
        **({"stride": stride} if stride != 1 else {}),
        **({"registration_noise": registration_noise} if registration_noise else {}),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(cache) / f"windows-{digest}.npz"
    if path.is_file():
        try:
            with np.load(path) as stored:
                return Windows(stored["x"], stored["y"], [str(k) for k in stored["kind"]])
        # (a cut or damaged .npz raises any of these, from zipfile, zlib or numpy's reader)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            log.warning("%s cannot be read (%s): building the windows again", path, error)
    windows = build_windows(folders, detector, seed, None, resolution, stride, registration_noise)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, x=windows.x, y=windows.y, kind=np.array(windows.kind))
    path.with_suffix(".json").write_text(json.dumps(key, indent=1) + "\n")
    return windows


def run(
    out: str | Path,
    train_sets: list[str],
    heldout_sets: list[str],
    detector_model: str | None,
    epochs: int = 30,
    options: TrainOptions | None = None,
    cache: str | Path | None = None,
) -> dict:
    """Build windows, train, evaluate on held-out plates, export; returns the metrics."""
    options = options or TrainOptions(epochs=epochs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    detector = (
        Detector(detector_model, threshold=0.3)
        if detector_model or Path(str(Detector.__module__))
        else None
    )

    def windows(sets: list[str], seed: int, noise: float = 0.0) -> dict[int, Windows]:
        return {
            stride: cached_windows(
                folders, detector, seed, cache, detector_model, options.resolution, stride, noise
            )
            for stride, folders in _strides_of(sets, options.strides).items()
        }

    parts = windows(train_sets, 0, options.registration_noise)
    train = Windows(
        np.concatenate([w.x for w in parts.values()]),
        np.concatenate([w.y for w in parts.values()]),
        [k for w in parts.values() for k in w.kind],
    )
    members = train_members(train, options)
    model = merge_members(members)
    by_fps, by_member = {}, []
    for stride, part in windows(heldout_sets, 1).items():
        with torch.no_grad():
            part_scores = torch.sigmoid(model(torch.from_numpy(part.x))).squeeze(1).numpy()
        by_fps[f"{30 / stride:g}"] = round(roc_auc(part.y, part_scores), 4)
        if len(by_fps) == 1:  # the headline: the highest frame rate (30 fps, the paper's)
            heldout, scores = part, part_scores
            if len(members) > 1:
                with torch.no_grad():
                    by_member = [
                        round(roc_auc(part.y, m(torch.from_numpy(part.x)).squeeze(1).numpy()), 4)
                        for m in members
                    ]
    auc = roc_auc(heldout.y, scores)
    moving = np.array([not k.startswith("person-still") for k in heldout.kind])
    plot_roc(heldout.y, scores, auc, out / "roc.png")
    per_kind = {}
    for kind in sorted(set(heldout.kind)):
        mask = np.array([k == kind for k in heldout.kind])
        per_kind[kind] = {
            "windows": int(mask.sum()),
            "mean_p_human": round(float(scores[mask].mean()), 3),
        }
    export_verifier(model, out / "verifier.onnx", options.resolution)
    torch.save(model.state_dict(), out / "verifier.pt")
    metrics = {
        "parameters": sum(p.numel() for p in model.parameters()),
        **(
            {
                "members": len(members),  # the merged graph's blocks off the diagonal are zeros
                "parameters_per_member": sum(p.numel() for p in members[0].parameters()),
            }
            if len(members) > 1
            else {}
        ),
        "train_windows": int(len(train.y)),
        "train_positive_share": round(float(train.y.mean()), 3),
        "heldout_windows": int(len(heldout.y)),
        "heldout_positive_share": round(float(heldout.y.mean()), 3),
        "heldout_roc_auc": round(auc, 4),
        "heldout_roc_auc_by_fps": by_fps,
        **({"heldout_roc_auc_by_member": by_member} if by_member else {}),
        # the same without standing / pausing persons (no gait to verify)
        "heldout_roc_auc_moving_persons": round(roc_auc(heldout.y[moving], scores[moving]), 4),
        "heldout_by_source": per_kind,
        "epochs": options.epochs,
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        "train_sets": train_sets,
        "heldout_sets": heldout_sets,
        "detector_model": detector_model,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    return metrics
