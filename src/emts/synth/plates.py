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

NATURE_KINDS = ("grass", "fields", "road", "scree", "water", "snow")
# RGB-realistic urban and park ground as a drone sees it (issue 8): the kinds real users fly
# over, with the static edges, joints and paint that a residual-blind detector fires on.
URBAN_KINDS = ("paving", "lawn", "sand", "crossing", "parking")
PROCEDURAL_KINDS = NATURE_KINDS + URBAN_KINDS
URBAN_SHARE = 0.6  # of procedural plates drawn without a given kind
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
    try:
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
    # ValueError: JSON and UTF-8 decoding errors; the others: not COCO annotations
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise BadInputError(
            f"{annotations}: not readable COCO annotations ({type(error).__name__}: {error}); "
            "expected a HIT-UAV folder"
        ) from None


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
    if kind is None:
        kind = str(rng.choice(URBAN_KINDS if rng.random() < URBAN_SHARE else NATURE_KINDS))
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
    elif kind in URBAN_KINDS:
        image = _URBAN[kind](rng, size, base)
        if rng.random() < 0.6:
            _draw_post_shadows(rng, image, count=int(rng.integers(1, 8)))
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


# --- RGB-realistic urban ground (issue 8) -----------------------------------------------------


def _texture(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """Base level with large-scale variation and fine grain."""
    image = base + rng.uniform(4, 14) * fractal_noise(rng, size, rng.uniform(48, 160), octaves=3)
    return image + rng.uniform(2, 7) * fractal_noise(rng, size, 3, octaves=2)


def _paving(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """Slabs (square, brick or large plaza tiles) with dark or light joints, per-slab shade
    and chalk marks."""
    w, h = size
    image = _texture(rng, size, base)
    slab = rng.uniform(8, 48)
    aspect = rng.choice([1.0, 1.0, 2.0])
    angle = rng.uniform(0, np.pi)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    u = (xs * np.cos(angle) + ys * np.sin(angle)) / (slab * aspect)
    v = (-xs * np.sin(angle) + ys * np.cos(angle)) / slab
    row = np.floor(v)
    u = u + (0.5 * (row % 2) if rng.random() < 0.5 else 0.0)  # running bond
    cell = np.floor(u) * 7919 + row * 104729
    shade = np.sin(cell * 12.9898) * 43758.5453
    shade = (shade - np.floor(shade) - 0.5) * rng.uniform(6, 30)
    image += shade.astype(np.float32)
    joint_width = rng.uniform(0.04, 0.12)
    joints = (np.minimum(u % 1, 1 - u % 1) < joint_width / aspect) | (
        np.minimum(v % 1, 1 - v % 1) < joint_width
    )
    joint_level = rng.choice([-1, 1]) * rng.uniform(15, 50)
    image[joints] += joint_level
    _draw_chalk(rng, image, count=int(rng.integers(0, 6)))
    return image


def _lawn(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """Mown grass (stripes) with small marker discs and bare patches."""
    w, h = size
    image = base + rng.uniform(6, 16) * fractal_noise(rng, size, rng.uniform(24, 96))
    image += rng.uniform(3, 8) * fractal_noise(rng, size, 3, octaves=2)
    if rng.random() < 0.6:  # mowing stripes
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        angle = rng.uniform(0, np.pi)
        period = rng.uniform(30, 90)
        stripes = np.sign(np.sin((xs * np.cos(angle) + ys * np.sin(angle)) * 2 * np.pi / period))
        image += rng.uniform(3, 10) * cv2.GaussianBlur(stripes.astype(np.float32), (0, 0), 2)
    for _ in range(int(rng.integers(0, 40))):  # marker discs, white or coloured
        centre = (int(rng.uniform(0, w)), int(rng.uniform(0, h)))
        radius = int(rng.uniform(2, 9))
        level = float(rng.choice([rng.uniform(200, 255), rng.uniform(20, 90)]))
        cv2.circle(image, centre, radius, level, -1, cv2.LINE_AA)
    return image


def _sand(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """Bright sand with ripples and footprint/tyre tracks."""
    w, h = size
    image = max(base, 140) + rng.uniform(4, 10) * fractal_noise(rng, size, rng.uniform(32, 128))
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    angle = rng.uniform(0, np.pi)
    ripple = np.sin((xs * np.cos(angle) + ys * np.sin(angle)) / rng.uniform(2, 6))
    image += rng.uniform(1, 5) * ripple * (1 + 0.5 * fractal_noise(rng, size, 64, octaves=2))
    for _ in range(int(rng.integers(1, 8))):  # tracks: rows of small dark dents
        start = rng.uniform(0, 1, 2) * (w, h)
        heading = rng.uniform(0, 2 * np.pi)
        step = rng.uniform(3, 8)
        for k in range(int(rng.integers(20, 120))):
            heading += rng.normal(0, 0.05)
            point = start + k * step * np.array([np.cos(heading), np.sin(heading)])
            side = (-1) ** k * rng.uniform(1, 3) * np.array([-np.sin(heading), np.cos(heading)])
            centre = tuple(int(c) for c in point + side)
            cv2.circle(image, centre, int(rng.uniform(1, 3)), base - rng.uniform(15, 40), -1)
    return image


def _crossing(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """Asphalt with lane paint and a zebra crossing (stripes the width of a person)."""
    w, h = size
    image = _texture(rng, size, min(base, 110))
    paint = float(rng.uniform(190, 250))
    centre = rng.uniform(0.3, 0.7, 2) * (w, h)
    angle = rng.uniform(0, np.pi)
    along = np.array([np.cos(angle), np.sin(angle)])
    across = np.array([-along[1], along[0]])
    stripe_width, gap = rng.uniform(6, 16), rng.uniform(6, 16)
    length = rng.uniform(40, 120)
    for k in range(int(rng.integers(5, 14))):
        middle = centre + across * (k - 6) * (stripe_width + gap)
        corners = np.array(
            [
                middle + along * length / 2 + across * stripe_width / 2,
                middle + along * length / 2 - across * stripe_width / 2,
                middle - along * length / 2 - across * stripe_width / 2,
                middle - along * length / 2 + across * stripe_width / 2,
            ]
        )
        cv2.fillConvexPoly(image, corners.astype(np.int32), paint, cv2.LINE_AA)
    for offset in rng.uniform(-1, 1, int(rng.integers(1, 4))) * h:  # lane lines
        start = centre + across * offset - across * 2 * max(w, h)
        end = centre + across * offset + across * 2 * max(w, h)
        dashed = rng.random() < 0.5
        pieces = 40 if dashed else 1
        for i in range(pieces):
            a = start + (end - start) * i / pieces
            b = start + (end - start) * (i + (0.5 if dashed else 1.0)) / pieces
            cv2.line(image, tuple(np.int32(a)), tuple(np.int32(b)), paint, int(rng.integers(1, 4)))
    return image


def _parking(rng: np.random.Generator, size: tuple[int, int], base: float) -> np.ndarray:
    """A parking lot: bay lines, parked cars (static boxes with windscreens) and oil stains."""
    w, h = size
    image = _texture(rng, size, min(base, 120))
    paint = float(rng.uniform(180, 250))
    bay_w, bay_l = rng.uniform(14, 30), rng.uniform(30, 60)
    for row_y in np.arange(rng.uniform(0, bay_l), h, bay_l * 2.5):
        for x in np.arange(rng.uniform(0, bay_w), w, bay_w):
            cv2.line(image, (int(x), int(row_y)), (int(x), int(row_y + bay_l)), paint, 1)
            if rng.random() < 0.45:  # a parked car in this bay
                x0, y0 = int(x + bay_w * 0.12), int(row_y + bay_l * 0.05)
                x1, y1 = int(x + bay_w * 0.88), int(row_y + bay_l * 0.95)
                body = float(rng.uniform(15, 245))
                cv2.rectangle(image, (x0, y0), (x1, y1), body, -1)
                glass = int(y0 + (y1 - y0) * rng.uniform(0.2, 0.35))
                cv2.rectangle(image, (x0 + 2, glass), (x1 - 2, glass + 4), body * 0.4, -1)
            elif rng.random() < 0.2:
                centre = (int(x + bay_w / 2), int(row_y + bay_l / 2))
                axes = (int(rng.uniform(2, 6)), int(rng.uniform(3, 9)))
                cv2.ellipse(image, centre, axes, 0, 0, 360, base * 0.6, -1, cv2.LINE_AA)
    return image


def _draw_chalk(rng: np.random.Generator, image: np.ndarray, count: int) -> None:
    """Chalk scribbles and hopscotch-like marks: thin bright strokes."""
    h, w = image.shape
    for _ in range(count):
        start = rng.uniform(0, 1, 2) * (w, h)
        points = [start]
        for _ in range(int(rng.integers(3, 12))):
            points.append(points[-1] + rng.normal(0, 8, 2))
        level = float(rng.uniform(190, 255))
        cv2.polylines(image, [np.array(points, np.int32)], False, level, 1, cv2.LINE_AA)


def _draw_post_shadows(rng: np.random.Generator, image: np.ndarray, count: int) -> None:
    """Lamp posts seen from above: a small dark base and a long thin cast shadow, all shadows
    parallel (one sun)."""
    h, w = image.shape
    angle = rng.uniform(0, 2 * np.pi)
    direction = np.array([np.cos(angle), np.sin(angle)])
    length = rng.uniform(40, 200)
    for _ in range(count):
        base = rng.uniform(0, 1, 2) * (w, h)
        tip = base + direction * length * rng.uniform(0.8, 1.2)
        layer = np.zeros_like(image)
        cv2.line(layer, tuple(np.int32(base)), tuple(np.int32(tip)), 1.0, int(rng.integers(1, 4)))
        if rng.random() < 0.5:  # the lamp head's shadow
            cv2.circle(layer, tuple(np.int32(tip)), int(rng.uniform(2, 6)), 1.0, -1)
        layer = cv2.GaussianBlur(layer, (0, 0), 0.8)
        image *= 1.0 - rng.uniform(0.25, 0.55) * layer
        cv2.circle(
            image, tuple(np.int32(base)), int(rng.uniform(1, 4)), float(rng.uniform(20, 80)), -1
        )


_URBAN = {
    "paving": _paving,
    "lawn": _lawn,
    "sand": _sand,
    "crossing": _crossing,
    "parking": _parking,
}


def draw_clutter(
    rng: np.random.Generator,
    image: np.ndarray,
    person_height: float,
    region: tuple[np.ndarray, np.ndarray],
    count: int,
) -> int:
    """Static clutter as hard negatives, drawn into ``image`` (float32, plate px) inside
    ``region`` (top-left, bottom-right): marker discs, cones, posts, bins, manholes, rocks and
    bright or dark blobs of a person's size and shape (upright ellipse plus head), so that a
    person-like look with no motion is something the detector learns to leave alone.

    Returns the number of objects drawn.
    """
    low, high = region
    drawn = 0
    for _ in range(count):
        x, y = rng.uniform(low, high)
        if not (0 <= x < image.shape[1] and 0 <= y < image.shape[0]):
            continue
        kind = rng.choice(["disc", "cone", "post", "bin", "manhole", "blob", "blob", "body"])
        local = float(image[int(y), int(x)])
        level = float(np.clip(local + rng.choice([-1, 1]) * rng.uniform(30, 120), 0, 255))
        hp = max(person_height, 6.0)
        layer = np.zeros_like(image)
        centre = (int(x), int(y))
        if kind == "disc":
            cv2.circle(layer, centre, max(int(hp * rng.uniform(0.06, 0.2)), 1), 1.0, -1)
        elif kind == "cone":
            r = max(int(hp * rng.uniform(0.08, 0.18)), 1)
            cv2.circle(layer, centre, r, 1.0, -1)
            cv2.circle(layer, centre, max(r // 2, 1), 0.6, -1)
        elif kind == "post":
            axes = (max(int(hp * 0.05), 1), max(int(hp * rng.uniform(0.2, 0.6)), 1))
            cv2.ellipse(layer, centre, axes, rng.uniform(0, 180), 0, 360, 1.0, -1)
        elif kind == "bin":
            half = max(int(hp * rng.uniform(0.1, 0.25)), 1)
            cv2.rectangle(
                layer,
                (centre[0] - half, centre[1] - half),
                (centre[0] + half, centre[1] + half),
                1.0,
                -1,
            )
        elif kind == "manhole":
            cv2.circle(layer, centre, max(int(hp * rng.uniform(0.15, 0.3)), 2), 1.0, -1)
            level = float(np.clip(local - rng.uniform(20, 60), 0, 255))
        elif kind == "blob":
            axes = (
                max(int(hp * rng.uniform(0.12, 0.3)), 1),
                max(int(hp * rng.uniform(0.3, 0.6)), 1),
            )
            cv2.ellipse(layer, centre, axes, rng.uniform(0, 180), 0, 360, 1.0, -1)
        else:  # a standing-person-like static silhouette: body ellipse and a head
            axes = (max(int(hp * 0.14), 1), max(int(hp * 0.35), 1))
            angle = rng.uniform(-30, 30)
            cv2.ellipse(layer, centre, axes, angle, 0, 360, 1.0, -1)
            head = (centre[0], int(centre[1] - hp * 0.42))
            cv2.circle(layer, head, max(int(hp * 0.09), 1), 1.0, -1)
        layer = cv2.GaussianBlur(layer, (0, 0), 0.7)
        image[:] = image * (1 - layer) + level * layer
        drawn += 1
    return drawn
