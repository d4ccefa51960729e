"""Backgrounds ("plates") for synthetic clips: real aerial stills and procedural terrain.

Real plates are HIT-UAV *train* images with their labeled persons inpainted away, so that
every labeled person in a synthetic clip is one we move. They are split into a training and a
held-out pool by blocks of consecutive image ids (stills of one flight have neighbouring ids),
so held-out plates never appear in training, and neither do their flights.

Procedural plates are multi-octave noise terrains: grass, fields, roads, scree, water, snow.
Train and held-out procedural plates differ by seed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from emts.errors import BadInputError

# Held-out real plates: image-id blocks of this size, every HELDOUT_EVERY-th block.
ID_BLOCK = 250
HELDOUT_EVERY = 5
HELDOUT_OFFSET = 2
PERSON_CATEGORY = 0
_INPAINT_MARGIN = 3  # px around a person box to inpaint (cast shadows, halo)

PROCEDURAL_KINDS = ("grass", "fields", "road", "scree", "water", "snow")
PROCEDURAL_SIZE = (832, 704)  # (w, h) leaves room for the camera to move at zoom ~1


@dataclass
class Plate:
    """A background image with what the compositor needs to know about it.

    Attributes:
        image: float32 gray plate, 0..255.
        source: where it came from, e.g. ``"hituav:0_60_40_0_06500.jpg"`` or
            ``"procedural:road:123"``.
        pitch_deg: camera pitch the plate was taken at, if known (HIT-UAV names it).
        night: True for night-time thermal imagery (no sun shadows).
        water: float32 mask (0..1) of water surfaces, or None.
    """

    image: np.ndarray
    source: str
    pitch_deg: float | None = None
    night: bool = False
    water: np.ndarray | None = field(default=None, repr=False)

    @property
    def size(self) -> tuple[int, int]:
        return self.image.shape[1], self.image.shape[0]


VEHICLE_CATEGORIES = (1, 2, 3)  # HIT-UAV: Car, Bicycle, OtherVehicle


def read_hituav(root: str | Path, split: str = "train") -> list[tuple[str, dict[str, list]]]:
    """``[(file name, {"persons": [boxes], "vehicles": [boxes]})]`` of a HIT-UAV COCO split,
    sorted by file name; boxes are ``[x, y, w, h]``."""
    annotations = Path(root) / f"{split}.json"
    if not annotations.is_file():
        raise BadInputError(f"{annotations}: not found (expected a HIT-UAV folder)")
    data = json.loads(annotations.read_text())
    boxes: dict[int, dict[str, list]] = {}
    for ann in data["annotations"]:
        entry = boxes.setdefault(ann["image_id"], {"persons": [], "vehicles": []})
        if ann["category_id"] == PERSON_CATEGORY:
            entry["persons"].append(ann["bbox"])
        elif ann["category_id"] in VEHICLE_CATEGORIES:
            entry["vehicles"].append(ann["bbox"])
    return [
        (image["file_name"], boxes.get(image["id"], {"persons": [], "vehicles": []}))
        for image in sorted(data["images"], key=lambda i: i["file_name"])
    ]


def hituav_split(file_name: str) -> str:
    """``"train"`` or ``"heldout"`` for a HIT-UAV file name (``D_ALT_ANGLE_x_ID.jpg``)."""
    image_id = int(Path(file_name).stem.split("_")[-1])
    return "heldout" if (image_id // ID_BLOCK) % HELDOUT_EVERY == HELDOUT_OFFSET else "train"


class HitUavPlates:
    """The real plate pool of one split, read from a HIT-UAV folder (``train/`` + ``train.json``).

    Args:
        root: the HIT-UAV folder (holding ``train.json`` and ``train/``).
        split: ``"train"`` or ``"heldout"`` (disjoint blocks of the HIT-UAV *train* split; the
            HIT-UAV val split is never used for plates).
    """

    def __init__(self, root: str | Path, split: str) -> None:
        self.root = Path(root)
        self.entries = [
            (name, entry["persons"])
            for name, entry in read_hituav(self.root, "train")
            if hituav_split(name) == split
        ]
        if not self.entries:
            raise BadInputError(f"{self.root}: no HIT-UAV images in the {split} plate pool")

    def __len__(self) -> int:
        return len(self.entries)

    def load(self, index: int) -> Plate:
        """The plate with its persons inpainted away."""
        name, boxes = self.entries[index % len(self.entries)]
        image = cv2.imread(str(self.root / "train" / name), cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise BadInputError(f"{self.root / 'train' / name}: unreadable image")
        image = remove_persons(image, boxes)
        day_night, _, angle = name.split("_")[:3]
        return Plate(
            image=image.astype(np.float32),
            source=f"hituav:{name}",
            pitch_deg=float(angle),
            night=day_night == "1",
        )


def remove_persons(image: np.ndarray, boxes: list[list[float]]) -> np.ndarray:
    """Inpaint the given ``[x, y, w, h]`` boxes (plus a small margin) out of a gray image."""
    if not boxes:
        return image
    mask = np.zeros(image.shape, np.uint8)
    m = _INPAINT_MARGIN
    for x, y, w, h in boxes:
        x0, y0 = max(int(x) - m, 0), max(int(y) - m, 0)
        x1, y1 = int(np.ceil(x + w)) + m, int(np.ceil(y + h)) + m
        mask[y0:y1, x0:x1] = 255
    return cv2.inpaint(image, mask, 5, cv2.INPAINT_TELEA)


def fractal_noise(
    rng: np.random.Generator,
    size: tuple[int, int],
    base_cell: float,
    octaves: int = 5,
    persistence: float = 0.55,
) -> np.ndarray:
    """Zero-mean, unit-std multi-octave value noise of ``size = (w, h)``.

    Octave k is a random grid with cells of ``base_cell / 2**k`` px, upsampled bicubically.
    """
    w, h = size
    total = np.zeros((h, w), np.float32)
    amplitude = 1.0
    for octave in range(octaves):
        cell = max(base_cell / 2**octave, 1.0)
        grid = rng.normal(0, 1, (int(h / cell) + 3, int(w / cell) + 3)).astype(np.float32)
        layer = cv2.resize(grid, None, fx=cell, fy=cell, interpolation=cv2.INTER_CUBIC)
        total += amplitude * layer[:h, :w]
        amplitude *= persistence
    total -= total.mean()
    return total / max(float(total.std()), 1e-6)


def procedural_plate(
    rng: np.random.Generator, kind: str | None = None, seed_label: str = ""
) -> Plate:
    """A procedural terrain plate of :data:`PROCEDURAL_SIZE`.

    Args:
        rng: random generator.
        kind: one of :data:`PROCEDURAL_KINDS` (random if None).
        seed_label: recorded in ``Plate.source`` so a plate can be traced to its seed.
    """
    kind = kind or str(rng.choice(PROCEDURAL_KINDS))
    size = PROCEDURAL_SIZE
    w, h = size
    base = float(rng.uniform(70, 170))
    water = None
    if kind == "grass":
        image = base + rng.uniform(8, 22) * fractal_noise(rng, size, rng.uniform(24, 96))
        image += rng.uniform(3, 9) * fractal_noise(rng, size, 4, octaves=2)
    elif kind == "fields":
        image = _fields(rng, size, base)
    elif kind == "road":
        image = base + rng.uniform(8, 20) * fractal_noise(rng, size, rng.uniform(32, 96))
        image += rng.uniform(2, 6) * fractal_noise(rng, size, 4, octaves=2)
        for _ in range(int(rng.integers(1, 3))):
            _draw_road(rng, image)
    elif kind == "scree":
        image = base + rng.uniform(6, 14) * fractal_noise(rng, size, 64)
        _draw_rocks(rng, image, count=int(rng.integers(300, 1200)))
    elif kind == "water":
        image = base + rng.uniform(6, 16) * fractal_noise(rng, size, 96)
        water = _lake_mask(rng, size)
        level = base + rng.uniform(-50, 30)
        image = image * (1 - water) + (level + 2.0 * fractal_noise(rng, size, 64)) * water
    elif kind == "snow":
        image = rng.uniform(180, 235) + rng.uniform(1, 3) * fractal_noise(rng, size, 128, octaves=3)
        _draw_rocks(rng, image, count=int(rng.integers(2, 12)))
    else:
        raise ValueError(f"unknown plate kind {kind!r}")
    image = np.clip(image, 0, 255).astype(np.float32)
    return Plate(image=image, source=f"procedural:{kind}:{seed_label}", water=water)


def _fields(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """Patchwork of fields (crop-row stripes at random angles) separated by straight edges."""
    w, h = size
    image = np.zeros((h, w), np.float32)
    labels = np.zeros((h, w), np.int32)
    n = int(rng.integers(4, 9))
    centres = rng.uniform(0, 1, (n, 2)) * (w, h)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    best = np.full((h, w), np.inf, np.float32)
    for i, (cx, cy) in enumerate(centres):
        d = (xs - cx) ** 2 + (ys - cy) ** 2
        closer = d < best
        best[closer] = d[closer]
        labels[closer] = i
    for i in range(n):
        angle = rng.uniform(0, np.pi)
        period = rng.uniform(4, 14)
        stripes = np.sin((xs * np.cos(angle) + ys * np.sin(angle)) * 2 * np.pi / period)
        level = base + rng.uniform(-45, 45)
        field_image = (
            level
            + rng.uniform(0, 10) * stripes
            + rng.uniform(3, 8) * fractal_noise(rng, size, 16, octaves=3)
        )
        image[labels == i] = field_image[labels == i]
    return image


def _draw_road(rng: np.random.Generator, image: np.ndarray) -> None:
    h, w = image.shape
    start = rng.uniform(0, 1, 2) * (w, h)
    angle = rng.uniform(0, np.pi)
    direction = np.array([np.cos(angle), np.sin(angle)])
    bend = rng.normal(0, 0.15)
    points = []
    for s in np.linspace(-1.5, 1.5, 24):
        lateral = np.array([-direction[1], direction[0]]) * bend * (s * max(w, h)) ** 2 / max(w, h)
        points.append(start + direction * s * max(w, h) + lateral)
    polyline = np.array(points, np.int32).reshape(-1, 1, 2)
    width = int(rng.integers(10, 34))
    asphalt = float(rng.uniform(40, 200))
    cv2.polylines(image, [polyline], False, asphalt + 6, width + 4, cv2.LINE_AA)  # verge
    cv2.polylines(image, [polyline], False, asphalt, width, cv2.LINE_AA)
    if width > 16 and rng.random() < 0.7:
        marking = float(np.clip(asphalt + rng.choice([-1, 1]) * rng.uniform(30, 60), 0, 255))
        for a, b in zip(points[::2], points[1::2], strict=False):
            cv2.line(image, tuple(np.int32(a)), tuple(np.int32(a + (b - a) * 0.5)), marking, 1)


def _draw_rocks(rng: np.random.Generator, image: np.ndarray, count: int) -> None:
    h, w = image.shape
    for _ in range(count):
        centre = (int(rng.uniform(0, w)), int(rng.uniform(0, h)))
        axes = (int(rng.uniform(1, 7)), int(rng.uniform(1, 5)))
        level = float(np.clip(image[centre[1], centre[0]] + rng.normal(0, 35), 0, 255))
        cv2.ellipse(image, centre, axes, rng.uniform(0, 180), 0, 360, level - 25, -1, cv2.LINE_AA)
        cv2.ellipse(image, (centre[0] - 1, centre[1] - 1), axes, 0, 0, 360, level, -1, cv2.LINE_AA)


def _lake_mask(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    w, h = size
    blob = fractal_noise(rng, size, rng.uniform(160, 320), octaves=3)
    mask = (blob > rng.uniform(-0.3, 0.6)).astype(np.float32)
    return cv2.GaussianBlur(mask, (0, 0), 1.5)
