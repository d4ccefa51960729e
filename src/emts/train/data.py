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

from emts.geometry import Frame, FrameGeometry
from emts.pipeline import MotionFrontEnd
from emts.synth.plates import hituav_split, read_hituav
from emts.synth.store import ClipSet
from emts.synth.tier2 import pseudo_clip
from emts.train.targets import FrameTargets, build_targets

_GEOMETRY = FrameGeometry((640, 512))
TIER2_VEHICLE_MOTION = 0.5  # share of Tier-2 clips whose parked vehicles drive off (negatives)


def _to_network(boxes) -> np.ndarray:
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    return _GEOMETRY.boxes(boxes, Frame.INPUT, Frame.NETWORK) if len(boxes) else boxes


@dataclass
class Sample:
    channels: np.ndarray  # (T, 3, 192, 256) float32
    targets: list[FrameTargets]
    source: str  # "tier1", "negative", "tier2"


class StoredClips:
    """A clip set held in memory (channels as float16) for fast sampling."""

    def __init__(self, folder: str | Path, source: str, progress=None) -> None:
        clip_set = ClipSet(folder)
        self.source = source
        self.channels: list[np.ndarray] = []
        self.labels: list[dict] = []
        items = range(len(clip_set))
        for position in progress(items, desc=f"load {Path(folder).name}") if progress else items:
            clip = clip_set[position]
            self.channels.append(clip.channels.astype(np.float16))
            self.labels.append(clip.labels)

    def __len__(self) -> int:
        return len(self.channels)

    def sample(self, rng: np.random.Generator, frames: int, clip_number: int) -> Sample:
        index = int(rng.integers(len(self)))
        channels, labels = self.channels[index], self.labels[index]
        start = int(rng.integers(1, len(channels) - frames + 1))
        targets = []
        for t in range(start, start + frames):
            persons = labels["frames"][t]["persons"]
            targets.append(
                build_targets(
                    _to_network([p["box"] for p in persons]),
                    identities=[clip_number * 1000 + p["id"] for p in persons],
                    visible=[p["visible"] for p in persons],
                )
            )
        return Sample(channels[start : start + frames].astype(np.float32), targets, self.source)


class Tier2Stills:
    """HIT-UAV stills of the training plate split, made into pseudo-clips on the fly (§4.2).

    Only images of the ``train`` id blocks are used: the held-out bench's plates (and their
    flights) never reach training, and the HIT-UAV val split is never read here.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
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
        clip = pseudo_clip(
            self._image(name), entry["persons"], rng, frames + 1, vehicle_boxes=vehicles
        )
        front = MotionFrontEnd()
        channels = np.stack([front.step(f).channels for f in clip.frames])[1:]
        targets = [
            build_targets(_to_network(b), identities=clip_number * 1000 + np.arange(len(b)))
            for b in clip.person_boxes[1:]
        ]
        return Sample(channels, targets, "tier2")


def collate(samples: list[Sample]) -> dict[str, torch.Tensor]:
    """Stack samples into a batch of frames (B*T, ...)."""
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
    ) -> None:
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
            yield collate(samples)
