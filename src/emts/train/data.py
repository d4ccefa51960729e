"""Training batches for the detector: Tier 1, hard negatives and on-the-fly Tier 2 (§4).

Every sample is a run of consecutive frames (default 4) of one clip with its channels as the
package's own Stage A/B made them (cached for stored sets, computed here for Tier 2) and
CenterNet targets. A clip's first frame has no motion channels and is never sampled.
Identities are made unique across the batch (clip number * 1000 + person id), so that the
contrastive loss pairs a person with itself across the clip's frames only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch

from emts.config import NETWORK_SIZE
from emts.front_end import channels_at
from emts.geometry import Frame, working_geometry
from emts.stages.b_channels import normalize_residual_level, residual_from_difference
from emts.synth.plates import hituav_split, read_hituav
from emts.synth.store import ClipSet
from emts.synth.tier2 import pseudo_clip
from emts.train.targets import STRIDE, FrameTargets, build_targets
from emts.train.verifier import strided_clip

TIER2_VEHICLE_MOTION = 0.5  # share of Tier-2 clips whose parked vehicles drive off (negatives)


def _to_network(boxes, network_size: tuple[int, int]) -> np.ndarray:
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    if not len(boxes):
        return boxes
    return working_geometry(network_size).boxes(boxes, Frame.INPUT, Frame.NETWORK)


@dataclass
class Sample:
    """T consecutive frames of one clip: channels and, per frame, the persons' boxes (NETWORK
    px), identities and visibility (0: an ignore region)."""

    channels: np.ndarray  # (T, 3, H, W) float32 at the network size
    boxes: list[np.ndarray]  # per frame (n, 4)
    identities: list[np.ndarray]  # per frame (n,)
    visible: list[np.ndarray]  # per frame (n,)
    source: str  # "tier1", "negative", "tier2"

    @property
    def targets(self) -> list[FrameTargets]:
        """CenterNet targets per frame, on the grid of the channels' size."""
        grid = (self.channels.shape[-1] // STRIDE, self.channels.shape[-2] // STRIDE)
        return [
            build_targets(b, identities=i, visible=v, grid=grid)
            for b, i, v in zip(self.boxes, self.identities, self.visible, strict=True)
        ]


def random_crop(sample: Sample, size: tuple[int, int], rng: np.random.Generator) -> Sample:
    """A ``size`` (w, h) window of the sample, the same for all its frames, at a whole number
    of stride-8 cells from the corner (so the targets' grid stays aligned). Persons whose
    centre falls outside the window but whose box reaches into it become ignore regions
    (clipped to the window): they are neither positives nor background there."""
    _, _, height, width = sample.channels.shape
    crop_w, crop_h = size
    if (crop_w, crop_h) == (width, height):
        return sample
    x0 = STRIDE * int(rng.integers((width - crop_w) // STRIDE + 1))
    y0 = STRIDE * int(rng.integers((height - crop_h) // STRIDE + 1))
    boxes, visible = [], []
    for frame_boxes, frame_visible in zip(sample.boxes, sample.visible, strict=True):
        b = np.asarray(frame_boxes, float).reshape(-1, 4) - [x0, y0, 0, 0]
        v = np.asarray(frame_visible, float).copy()
        centre = b[:, :2] + b[:, 2:] / 2
        outside = (centre[:, 0] < 0) | (centre[:, 0] >= crop_w)
        outside |= (centre[:, 1] < 0) | (centre[:, 1] >= crop_h)
        x1 = np.clip(b[:, 0], 0, crop_w)
        y1 = np.clip(b[:, 1], 0, crop_h)
        x2 = np.clip(b[:, 0] + b[:, 2], 0, crop_w)
        y2 = np.clip(b[:, 1] + b[:, 3], 0, crop_h)
        reaches = outside & (x2 > x1) & (y2 > y1)
        b[reaches] = np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)[reaches]
        v[outside] = 0.0
        boxes.append(b)
        visible.append(v)
    channels = sample.channels[:, :, y0 : y0 + crop_h, x0 : x0 + crop_w]
    return Sample(np.ascontiguousarray(channels), boxes, sample.identities, visible, sample.source)


def randomize_appearance(
    channels: np.ndarray, rng: np.random.Generator, invert: float, gain: tuple[float, float]
) -> np.ndarray:
    """L appearance randomization of a (T, 3, H, W) sample, the same for all its frames.

    With probability ``invert`` the polarity flips (L -> 1 - L, D -> -D; R is unchanged), so
    that "warmer/brighter than the ground" is no shortcut to "person"; then the contrast is
    scaled by a log-uniform gain about the frame mean with a small brightness shift (R and D
    scale with it, as they would for a scene of that contrast).
    """
    out = channels.copy()
    if rng.random() < invert:
        out[:, 0] = 1.0 - out[:, 0]
        out[:, 2] = -out[:, 2]
    if gain[1] > gain[0]:
        a = float(np.exp(rng.uniform(np.log(gain[0]), np.log(gain[1]))))
        b = float(rng.uniform(-0.1, 0.1))
        mean = out[:, 0].mean()
        out[:, 0] = np.clip(mean + a * (out[:, 0] - mean) + b, 0.0, 1.0)
        out[:, 1:] *= a
        np.clip(out[:, 1], 0.0, 1.0, out=out[:, 1])
        np.clip(out[:, 2], -1.0, 1.0, out=out[:, 2])
    return out


def mirror(sample: Sample) -> Sample:
    """The sample mirrored left-right, all its frames alike (boxes in NETWORK px follow).

    The network letterbox pads both sides alike and every network width is a whole number of
    stride-8 cells, so a mirrored sample is laid out as a real frame of a mirrored scene. The
    curriculum draws each clip's walk headings, sun and camera motion at random, but its plates
    (the Tier-2 stills, the RGB plates) are a finite set seen one way round, and a network that
    never saw them mirrored scores a scene and its mirror image differently (a left-right
    average of its heatmaps scored the synthetic bench 0.556 -> 0.585, docs/history.md "Mirrored
    samples")."""
    width = sample.channels.shape[-1]
    boxes = []
    for frame_boxes in sample.boxes:
        b = np.asarray(frame_boxes, float).reshape(-1, 4).copy()
        b[:, 0] = width - b[:, 0] - b[:, 2]
        boxes.append(b)
    channels = np.ascontiguousarray(sample.channels[..., ::-1])
    return Sample(channels, boxes, sample.identities, sample.visible, sample.source)


def flatten_light(channels: np.ndarray) -> np.ndarray:
    """A (T, 3, H, W) sample with each frame's L flattened to its mean: motion channels only
    (the "motion only" ablation of ``emts eval real``, as a training-time dropout of L)."""
    out = channels.copy()
    out[:, 0] = out[:, 0].mean(axis=(1, 2), keepdims=True)
    return out


def without_motion(channels: np.ndarray) -> np.ndarray:
    """A (..., 3, H, W) stack with R and D zeroed: luminance only (the ablation's input, in
    training and in evaluation alike)."""
    out = channels.copy()
    out[..., 1:, :, :] = 0.0
    return out


def _ground_speeds(labels: dict, t: int) -> dict[int, float]:
    """Per person id: how far (frame px) its box centre moved from frame t-1 to t on the
    ground, i.e. after removing the true camera motion of frame t."""
    motion = np.asarray(labels["frames"][t]["camera_motion"], float)
    before = {p["id"]: np.array(p["box"], float) for p in labels["frames"][t - 1]["persons"]}
    speeds = {}
    for person in labels["frames"][t]["persons"]:
        if person["id"] not in before:
            continue
        x, y, w, h = before[person["id"]]
        carried = motion[:, :2] @ [x + w / 2, y + h / 2] + motion[:, 2]
        x, y, w, h = person["box"]
        speeds[person["id"]] = float(np.hypot(x + w / 2 - carried[0], y + h / 2 - carried[1]))
    return speeds


class StoredClips:
    """A clip set held in memory for fast sampling: L as uint8 (exact: Stage B's L is an
    8-bit image / 255) and D as float16; R is rebuilt from D per sample.

    ``still_speed``: persons whose box centre moves less than this (frame px/frame, camera
    motion removed) are ignore regions rather than positives (a standing person shows no
    motion; teaching the detector to fire on it teaches appearance alone). 0 keeps them all.
    ``network_size``: the channels' size; other than the paper's 256x192 (the set's cached
    D) the clip's frames are run through Stages A and B again at that size on load.
    ``frame_stride``: each clip as a camera at 1/n of its frame rate delivers it
    (:func:`emts.train.verifier.strided_clip`: every n-th frame, Stages A and B afresh; 3: the
    curriculum's 30 fps as 10 fps, candidate P in ``reports/real/candidates/p_low_fps``).
    ``residual_baseline``: R over that many frames (:class:`emts.config.ChannelConfig`): the
    clip's frames run through Stages A and B again on load and R kept beside D (float16)
    instead of rebuilt from D. ``ego_compensation=False``: the clip's frames run through
    Stages A and B again on load, Stage B without Stage A's warp (the "w/o ego" ablation).
    """

    def __init__(
        self,
        folder: str | Path,
        source: str,
        progress=None,
        still_speed: float = 0.0,
        network_size: tuple[int, int] = NETWORK_SIZE,
        frame_stride: int = 1,
        residual_baseline: int = 1,
        ego_compensation: bool = True,
    ) -> None:
        clip_set = ClipSet(folder)
        self.source = source
        self.still_speed = still_speed
        self.network_size = tuple(network_size)
        self.residual_baseline = int(residual_baseline)
        self.light: list[np.ndarray] = []
        self.difference: list[np.ndarray] = []
        self.residual: list[np.ndarray] = []  # residual_baseline > 1 only
        self.labels: list[dict] = []
        items = range(len(clip_set))
        for position in progress(items, desc=f"load {Path(folder).name}") if progress else items:
            clip = strided_clip(clip_set[position], frame_stride)
            channels = clip.channels
            cached = self.network_size == NETWORK_SIZE and self.residual_baseline == 1
            if not (cached and ego_compensation):
                channels = channels_at(
                    clip.frames,
                    self.network_size,
                    residual_baseline=self.residual_baseline,
                    ego_compensation=ego_compensation,
                )
            self.light.append(np.rint(channels[:, 0] * 255).astype(np.uint8))
            self.difference.append(channels[:, 2].astype(np.float16))
            if self.residual_baseline > 1:
                self.residual.append(channels[:, 1].astype(np.float16))
            self.labels.append(clip.labels)

    def __len__(self) -> int:
        return len(self.light)

    def sample(self, rng: np.random.Generator, frames: int, clip_number: int) -> Sample:
        index = int(rng.integers(len(self)))
        light, labels = self.light[index], self.labels[index]
        # (R over n frames is whole from the clip's n-th frame on)
        first = max(1, self.residual_baseline)
        start = int(rng.integers(first, len(light) - frames + 1))
        channels = np.empty((frames, 3, *light.shape[1:]), np.float32)
        channels[:, 0] = light[start : start + frames] * np.float32(1 / 255)
        channels[:, 2] = self.difference[index][start : start + frames]
        if self.residual:
            channels[:, 1] = self.residual[index][start : start + frames]
        else:
            for i in range(frames):
                channels[i, 1] = residual_from_difference(channels[i, 2])
        boxes, identities, visibility = [], [], []
        for t in range(start, start + frames):
            persons = labels["frames"][t]["persons"]
            visible = [p["visible"] for p in persons]
            if self.still_speed > 0 and persons:
                speeds = _ground_speeds(labels, t)
                visible = [
                    0.0 if speeds.get(p["id"], np.inf) < self.still_speed else v
                    for p, v in zip(persons, visible, strict=True)
                ]
            boxes.append(_to_network([p["box"] for p in persons], self.network_size))
            identities.append(np.array([clip_number * 1000 + p["id"] for p in persons], int))
            visibility.append(np.asarray(visible, float))
        return Sample(channels, boxes, identities, visibility, self.source)


class Tier2Stills:
    """HIT-UAV stills of the training plate split, made into pseudo-clips on the fly (§4.2).

    Only images of the ``train`` id blocks are used: the held-out bench's plates (and their
    flights) never reach training, and the HIT-UAV val split is never read here.
    """

    def __init__(
        self,
        root: str | Path,
        network_size: tuple[int, int] = NETWORK_SIZE,
        residual_baseline: int = 1,
        ego_compensation: bool = True,
    ) -> None:
        self.root = Path(root)
        self.network_size = tuple(network_size)
        self.residual_baseline = int(residual_baseline)
        self.ego_compensation = bool(ego_compensation)
        self.entries = [e for e in read_hituav(self.root, "train") if hituav_split(e[0]) == "train"]
        self._cache: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def _image(self, name: str) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = cv2.imread(str(self.root / "train" / name), cv2.IMREAD_GRAYSCALE)
        return self._cache[name]

    def sample(self, rng: np.random.Generator, frames: int, clip_number: int) -> Sample:
        name, entry = self.entries[int(rng.integers(len(self)))]
        vehicles = entry["vehicles"] if rng.random() < TIER2_VEHICLE_MOTION else []
        skip = self.residual_baseline  # frames before R and D are whole
        clip = pseudo_clip(
            self._image(name), entry["persons"], rng, frames + skip, vehicle_boxes=vehicles
        )
        channels = channels_at(
            clip.frames,
            self.network_size,
            residual_baseline=self.residual_baseline,
            ego_compensation=self.ego_compensation,
        )[skip:]
        boxes = [_to_network(b, self.network_size) for b in clip.person_boxes[skip:]]
        identities = [clip_number * 1000 + np.arange(len(b)) for b in boxes]
        return Sample(channels, boxes, identities, [np.ones(len(b)) for b in boxes], "tier2")


def collate(samples: list[Sample]) -> dict[str, torch.Tensor]:
    """Stack samples into a batch of frames (B*T, ...) with their CenterNet targets."""
    x = np.concatenate([s.channels for s in samples])
    targets = [t for s in samples for t in s.targets]
    batch = {"x": torch.from_numpy(np.ascontiguousarray(x))}
    for name in ("heatmap", "weight", "indices", "log_size", "offset", "identity", "mask"):
        batch[name] = torch.from_numpy(np.stack([getattr(t, name) for t in targets]))
    return batch


class MixtureStream(torch.utils.data.IterableDataset):
    """Endless batches of ``clips`` samples drawn from sources with given probabilities."""

    def __init__(
        self,
        sources: dict[str, object],
        weights: dict[str, float],
        clips: int,
        frames: int,
        seed: int,
        invert: float = 0.0,
        gain: tuple[float, float] = (1.0, 1.0),
        randomized: tuple[str, ...] = ("tier1", "negative", "tier2"),
        residual_reference: float = 0.0,
        crop: tuple[int, int] | None = None,
        l_dropout: float = 0.0,
        mirror: float = 0.0,
        motion_channels: bool = True,
    ) -> None:
        self.invert, self.gain, self.randomized = invert, gain, randomized
        self.motion_channels = motion_channels
        self.mirror = mirror
        self.l_dropout = l_dropout
        self.crop = crop
        self.residual_reference = residual_reference
        self.sources = {k: v for k, v in sources.items() if weights.get(k, 0) > 0}
        total = sum(weights[k] for k in self.sources)
        self.names = list(self.sources)
        self.probabilities = np.array([weights[k] / total for k in self.names])
        self.clips, self.frames, self.seed = clips, frames, seed

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        rng = np.random.default_rng([self.seed, 0 if info is None else info.id])
        cv2.setNumThreads(1)
        while True:
            picks = rng.choice(len(self.names), size=self.clips, p=self.probabilities)
            samples = [
                self.sources[self.names[k]].sample(rng, self.frames, clip_number=n)
                for n, k in enumerate(picks)
            ]
            if self.invert > 0 or self.gain[1] > self.gain[0]:
                for sample in samples:
                    if sample.source in self.randomized:
                        sample.channels = randomize_appearance(
                            sample.channels, rng, self.invert, self.gain
                        )
            for sample in samples:  # as the runtime Detector feeds the network, if asked to
                sample.channels = normalize_residual_level(sample.channels, self.residual_reference)
            if self.l_dropout > 0:
                for sample in samples:
                    if rng.random() < self.l_dropout:
                        sample.channels = flatten_light(sample.channels)
            if not self.motion_channels:  # the luminance-only ablations: no R, no D
                for sample in samples:
                    sample.channels = without_motion(sample.channels)
            if self.mirror > 0:  # (a draw only when asked: older recipes' streams unchanged)
                samples = [mirror(s) if rng.random() < self.mirror else s for s in samples]
            if self.crop is not None:
                samples = [random_crop(sample, self.crop, rng) for sample in samples]
            yield collate(samples)
