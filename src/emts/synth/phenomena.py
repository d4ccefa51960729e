"""Scene and sensor phenomena that move, flicker or blur without being a person (§4).

Each phenomenon is sampled once per clip (``random(rng, ...)``) and applied per frame in
frame coordinates through the camera pose, so it moves with the ground (or, for parallax
objects, *differently* from the ground) exactly as the camera dictates.

* :class:`CloudShadows` -- a large soft darkening that drifts (translates, never articulates).
* :class:`HardShade` -- the deep, hard-edged shade of a building or a tree canopy, fixed to the
  ground, darkening everything in it (a person walking through it too).
* :class:`WaterShimmer` -- fine texture that changes every frame inside water surfaces.
* :class:`ParallaxObjects` -- tree crowns and roofs standing above the ground: a layer that
  moves with its own parallax, and tree crowns sway (oscillate without translating). They
  occlude the actors below them.
* :class:`Flicker` -- global illumination gain changes.
* :class:`SensorModel` -- motion blur along the camera motion, Gaussian sensor noise and
  JPEG compression (the stored frame is the decoded JPEG: its artefacts are part of the data).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from emts.synth.plates import fractal_noise
from emts.synth.sprites import Patch


def _lift(affine: np.ndarray) -> np.ndarray:
    return np.vstack([affine[:2], [0.0, 0.0, 1.0]])


@dataclass
class CloudShadows:
    """Soft cloud shadows drifting with the wind (plate px/frame)."""

    mask: np.ndarray  # float32 low-res coverage 0..1 over the plate (1/8 scale)
    strength: float  # darkening at full coverage
    velocity: np.ndarray  # plate px/frame
    offset: np.ndarray  # current drift (plate px)

    MASK_SCALE = 8

    @classmethod
    def random(cls, rng: np.random.Generator, plate_size: tuple[int, int]) -> CloudShadows:
        w, h = plate_size
        small = (w // cls.MASK_SCALE + 40, h // cls.MASK_SCALE + 40)
        noise = fractal_noise(rng, small, rng.uniform(12, 30), octaves=3)
        threshold = rng.uniform(-0.2, 0.9)
        mask = np.clip((noise - threshold) * rng.uniform(0.8, 2.5), 0, 1).astype(np.float32)
        speed = rng.uniform(0.3, 3.0)
        angle = rng.uniform(0, 2 * np.pi)
        return cls(
            mask=cv2.GaussianBlur(mask, (0, 0), 2.0),
            strength=float(rng.uniform(0.15, 0.45)),
            velocity=speed * np.array([np.cos(angle), np.sin(angle)]),
            offset=np.zeros(2),
        )

    def step(self) -> None:
        self.offset = self.offset + self.velocity

    def apply(self, frame: np.ndarray, pose: np.ndarray) -> None:
        """Darken ``frame`` (float32, in place) where cloud shadow falls."""
        s = self.MASK_SCALE
        # mask px -> plate px (scaled, shifted by the drift, centred margin) -> frame px
        to_plate = np.array(
            [[s, 0, self.offset[0] - 20 * s], [0, s, self.offset[1] - 20 * s], [0, 0, 1]]
        )
        to_frame = (_lift(pose) @ to_plate)[:2]
        h, w = frame.shape
        coverage = cv2.warpAffine(
            self.mask, to_frame, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
        )
        frame *= 1.0 - self.strength * coverage


@dataclass
class HardShade:
    """The shade of a building or a tree canopy on the ground: fixed to the ground (it moves
    with the camera's view of it, never on its own), hard-edged (a penumbra of a few px) and
    deep -- shaded paving is 15-55 % as bright as the sunlit paving beside it (uav123-person12's
    building shade: ~22 %), where a cloud's shadow takes 15-45 % off. Everything in it is
    darkened alike, a person walking through it too, and a person's own cast shadow is not
    drawn inside it (the sun that would cast it is blocked already).

    ``kind``: ``"building"`` (one straight edge, or two meeting at a corner) or ``"canopy"``
    (overlapping crowns' shade with sunflecks).
    """

    mask: np.ndarray  # float32 coverage 0..1 over the plate, at 1/MASK_SCALE
    strength: float  # darkening at full coverage: 1 - shaded / lit brightness
    kind: str

    MASK_SCALE = 2
    STRENGTH = (0.45, 0.85)

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        plate_size: tuple[int, int],
        region: tuple[np.ndarray, np.ndarray],
        reference_height: float,
    ) -> HardShade:
        """A shade whose edge crosses ``region`` (plate px, the first frame's view: top-left,
        bottom-right) near its middle; crowns a few ``reference_height`` (plate px) across."""
        s = cls.MASK_SCALE
        w, h = (int(np.ceil(v / s)) for v in plate_size)
        low, high = (np.asarray(v, float) / s for v in region)
        span = high - low
        mask = np.zeros((h, w), np.float32)
        kind = "building" if rng.random() < 0.6 else "canopy"
        if kind == "building":
            ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
            point = low + span * rng.uniform(0.3, 0.7, 2)
            angle = rng.uniform(0, 2 * np.pi)
            inside = (xs - point[0]) * np.cos(angle) + (ys - point[1]) * np.sin(angle) > 0
            if rng.random() < 0.4:  # a corner: a second edge, at 60-120 degrees to the first
                turn = angle + rng.choice([-1, 1]) * rng.uniform(np.pi / 3, 2 * np.pi / 3)
                corner = point + span * rng.uniform(-0.2, 0.2, 2)
                inside &= (xs - corner[0]) * np.cos(turn) + (ys - corner[1]) * np.sin(turn) > 0
            mask[inside] = 1.0
        else:
            height = max(reference_height / s, 2.0)
            for _ in range(int(rng.integers(2, 7))):
                centre = low + span * rng.uniform(0.15, 0.85, 2)
                axes = height * rng.uniform(1.5, 5.0, 2)
                cv2.ellipse(
                    mask,
                    (int(centre[0]), int(centre[1])),
                    (int(axes[0]), int(axes[1])),
                    float(rng.uniform(0, 180)),
                    0,
                    360,
                    1.0,
                    -1,
                )
            # sunflecks: the light through gaps between leaves
            flecks = fractal_noise(rng, (w, h), max(height * rng.uniform(0.3, 1.0), 2.0), 3)
            mask *= (flecks < rng.uniform(1.0, 2.0)).astype(np.float32)
        penumbra = float(rng.uniform(0.3, 1.5))  # mask px (1/MASK_SCALE of the plate's)
        return cls(
            mask=cv2.GaussianBlur(mask, (0, 0), penumbra),
            strength=float(rng.uniform(*cls.STRENGTH)),
            kind=kind,
        )

    def coverage(self, pose: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        """Coverage 0..1 of the frame ``size`` (w, h) seen through the 2x3 plate -> frame
        ``pose``."""
        s = self.MASK_SCALE
        to_frame = (_lift(pose) @ np.diag([s, s, 1.0]))[:2]
        return cv2.warpAffine(
            self.mask, to_frame, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )

    def apply(self, frame: np.ndarray, coverage: np.ndarray) -> None:
        """Darken ``frame`` (float32, in place) by this frame's ``coverage``."""
        frame *= 1.0 - self.strength * coverage


@dataclass
class WaterShimmer:
    """Water that shimmers in place: ripples that change every frame without translating
    with the wind, and sparse glints that flicker on and off."""

    water: np.ndarray  # plate-size float32 mask
    ripples: tuple[np.ndarray, np.ndarray]  # two plate-size zero-mean textures
    amplitude: float  # gray levels
    angular_rate: float  # rad/frame of the ripple cycle
    glints: int  # expected glints per frame over the whole water surface
    t: int = 0

    @classmethod
    def random(cls, rng: np.random.Generator, water: np.ndarray) -> WaterShimmer:
        size = (water.shape[1], water.shape[0])
        scale = rng.uniform(2, 6)
        return cls(
            water=water,
            ripples=(
                fractal_noise(rng, size, scale, octaves=2),
                fractal_noise(rng, size, scale, octaves=2),
            ),
            amplitude=float(rng.uniform(1.0, 5.0)),
            angular_rate=float(rng.uniform(0.4, 1.5)),
            glints=int(rng.integers(0, 40)),
        )

    def step(self) -> None:
        self.t += 1

    def apply_to_plate(self, plate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Plate (plate coordinates) with this frame's ripples and glints; a new array."""
        phase = self.angular_rate * self.t
        a, b = self.ripples
        out = plate + self.water * (self.amplitude * (np.cos(phase) * a + np.sin(phase) * b))
        if self.glints:
            ys, xs = np.nonzero(self.water > 0.5)
            if len(xs):
                picks = rng.integers(0, len(xs), rng.poisson(self.glints))
                for k in picks:
                    cv2.circle(
                        out,
                        (int(xs[k]), int(ys[k])),
                        1,
                        float(min(plate[ys[k], xs[k]] + rng.uniform(40, 120), 255)),
                        -1,
                    )
        return out


@dataclass
class _ParallaxObject:
    image: np.ndarray  # float32 gray
    alpha: np.ndarray  # float32 0..1
    position: np.ndarray  # plate px of the sprite's centre
    parallax: float  # extra fraction of the camera's ground motion this object moves by
    sway_amplitude: float  # px at the crown's top
    sway_hz: float
    sway_phase: float


class ParallaxObjects:
    """Tree crowns and roofs on a layer above the ground (they occlude what walks below)."""

    FPS = 30.0

    def __init__(self, objects: list[_ParallaxObject]) -> None:
        self.objects = objects
        self.t = 0
        self._start_centre: np.ndarray | None = None

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        plate: np.ndarray,
        count: int,
        region: tuple[np.ndarray, np.ndarray],
    ) -> ParallaxObjects:
        """``count`` objects placed in the plate rectangle ``region = (top_left, bottom_right)``."""
        objects = []
        for _ in range(count):
            centre = rng.uniform(region[0], region[1])
            local = plate[
                int(np.clip(centre[1], 0, plate.shape[0] - 1)),
                int(np.clip(centre[0], 0, plate.shape[1] - 1)),
            ]
            if rng.random() < 0.75:
                objects.append(_tree(rng, centre, float(local)))
            else:
                objects.append(_roof(rng, centre, float(local)))
        return cls(objects)

    def step(self) -> None:
        self.t += 1

    def render(
        self, pose: np.ndarray, frame_size: tuple[int, int], ground_centre: np.ndarray
    ) -> list[tuple[Patch, Patch]]:
        """(alpha, image) patches in frame coordinates for every visible object.

        Args:
            pose: ground plate -> frame similarity.
            frame_size: (w, h).
            ground_centre: the plate point at the frame centre now (camera ground position).
        """
        if self._start_centre is None:
            self._start_centre = ground_centre.copy()
        travel = ground_centre - self._start_centre
        out = []
        w, h = frame_size
        for obj in self.objects:
            oh, ow = obj.image.shape
            sway = obj.sway_amplitude * np.sin(
                2 * np.pi * obj.sway_hz * self.t / self.FPS + obj.sway_phase
            )
            # A crown bends about its base: shear proportional to the height above the base.
            shear = np.array([[1, -sway / max(oh, 1), sway / 2], [0, 1, 0], [0, 0, 1]])
            place = np.array(
                [
                    [1, 0, obj.position[0] - ow / 2 - obj.parallax * travel[0]],
                    [0, 1, obj.position[1] - oh / 2 - obj.parallax * travel[1]],
                    [0, 0, 1],
                ]
            )
            to_frame = _lift(pose) @ place @ shear
            corners = (
                np.array([[0, 0, 1], [ow, 0, 1], [0, oh, 1], [ow, oh, 1]], float) @ to_frame[:2].T
            )
            x0, y0 = np.floor(corners.min(axis=0)).astype(int) - 1
            x1, y1 = np.ceil(corners.max(axis=0)).astype(int) + 1
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
            if x1 <= x0 or y1 <= y0:
                continue
            local = to_frame.copy()
            local[:2, 2] -= (x0, y0)
            size = (x1 - x0, y1 - y0)
            alpha = cv2.warpAffine(obj.alpha, local[:2], size, flags=cv2.INTER_LINEAR)
            image = cv2.warpAffine(
                obj.image, local[:2], size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
            )
            out.append((Patch(int(x0), int(y0), alpha), Patch(int(x0), int(y0), image)))
        return out


def _tree(rng: np.random.Generator, centre: np.ndarray, local: float) -> _ParallaxObject:
    radius = rng.uniform(10, 45)
    size = int(radius * 2.6) + 4
    alpha = np.zeros((size, size), np.float32)
    for _ in range(int(rng.integers(3, 8))):  # a crown is a union of lobes
        offset = rng.normal(0, radius * 0.3, 2)
        r = radius * rng.uniform(0.5, 0.9)
        cv2.circle(
            alpha,
            (int(size / 2 + offset[0]), int(size / 2 + offset[1])),
            int(r),
            1.0,
            -1,
            cv2.LINE_AA,
        )
    alpha = cv2.GaussianBlur(alpha, (0, 0), 1.2)
    level = local + rng.choice([-1, 1]) * rng.uniform(10, 50)
    leaves = level + rng.uniform(8, 25) * fractal_noise(
        rng, (size, size), rng.uniform(3, 7), octaves=2
    )
    return _ParallaxObject(
        image=np.clip(leaves, 0, 255).astype(np.float32),
        alpha=np.clip(alpha, 0, 1),
        position=centre,
        parallax=float(rng.uniform(0.02, 0.15)),
        sway_amplitude=float(rng.uniform(0.3, 2.5)),
        sway_hz=float(rng.uniform(0.3, 1.5)),
        sway_phase=float(rng.uniform(0, 2 * np.pi)),
    )


def _roof(rng: np.random.Generator, centre: np.ndarray, local: float) -> _ParallaxObject:
    w, h = rng.uniform(30, 120), rng.uniform(30, 120)
    size = (int(w) + 4, int(h) + 4)
    alpha = np.zeros((size[1], size[0]), np.float32)
    alpha[2:-2, 2:-2] = 1.0
    level = local + rng.choice([-1, 1]) * rng.uniform(20, 70)
    ridge = np.linspace(-1, 1, size[0])[None, :] * rng.uniform(0, 15)
    roof = level + np.abs(ridge) + rng.uniform(2, 6) * fractal_noise(rng, size, 6, octaves=2)
    return _ParallaxObject(
        image=np.clip(roof, 0, 255).astype(np.float32),
        alpha=cv2.GaussianBlur(alpha, (0, 0), 0.7),
        position=centre,
        parallax=float(rng.uniform(0.05, 0.3)),
        sway_amplitude=0.0,
        sway_hz=0.0,
        sway_phase=0.0,
    )


@dataclass
class Flicker:
    """Global illumination changes: small per-frame gain jitter plus a slow ramp."""

    jitter: float
    ramp: float
    t: int = 0

    @classmethod
    def random(cls, rng: np.random.Generator, strong: bool = False) -> Flicker:
        scale = 3.0 if strong else 1.0
        return cls(
            jitter=float(rng.uniform(0, 0.01) * scale), ramp=float(rng.normal(0, 0.002) * scale)
        )

    def gain(self, rng: np.random.Generator) -> float:
        self.t += 1
        return float(1.0 + self.ramp * self.t + rng.normal(0, self.jitter))


@dataclass
class SensorModel:
    """Exposure blur, sensor noise and stream compression of one camera."""

    noise_std: float  # gray levels
    exposure: float  # fraction of the frame interval the shutter is open (blur length)
    jpeg_quality: int

    @classmethod
    def random(cls, rng: np.random.Generator) -> SensorModel:
        return cls(
            noise_std=float(rng.uniform(0.5, 4.0)),
            exposure=float(rng.uniform(0.0, 0.5)),
            jpeg_quality=int(rng.integers(55, 93)),
        )

    def apply(
        self,
        frame: np.ndarray,
        motion: np.ndarray,
        rng: np.random.Generator,
        noise_bank: np.ndarray,
    ) -> tuple[np.ndarray, bytes]:
        """Blur, add noise, quantize and JPEG round-trip. Returns (decoded uint8 frame, JPEG)."""
        h, w = frame.shape
        shift = motion[:, 2] + (motion[:, :2] - np.eye(2)) @ np.array([w / 2, h / 2])
        length = float(np.hypot(*shift)) * self.exposure
        if length >= 1.5:
            frame = _motion_blur(frame, shift / max(np.hypot(*shift), 1e-6), length)
        dy, dx = (
            rng.integers(0, noise_bank.shape[1] - h + 1),
            rng.integers(0, noise_bank.shape[2] - w + 1),
        )
        layer = noise_bank[rng.integers(0, len(noise_bank)), dy : dy + h, dx : dx + w]
        frame = frame + self.noise_std * layer
        quantized = np.clip(frame + 0.5, 0, 255).astype(np.uint8)
        ok, encoded = cv2.imencode(".jpg", quantized, [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality])
        assert ok
        decoded = cv2.imdecode(encoded, cv2.IMREAD_GRAYSCALE)
        return decoded, encoded.tobytes()


def make_noise_bank(
    rng: np.random.Generator, count: int = 3, size: tuple[int, int] = (704, 576)
) -> np.ndarray:
    """Standard-normal noise frames to crop sensor noise from (faster than fresh draws)."""
    return rng.standard_normal((count, size[1], size[0]), dtype=np.float32)


def _motion_blur(frame: np.ndarray, direction: np.ndarray, length: float) -> np.ndarray:
    n = int(np.ceil(length)) | 1
    kernel = np.zeros((n, n), np.float32)
    c = n // 2
    for s in np.linspace(-length / 2, length / 2, 2 * n):
        x, y = c + s * direction[0], c + s * direction[1]
        kernel[int(round(np.clip(y, 0, n - 1))), int(round(np.clip(x, 0, n - 1)))] += 1
    kernel /= kernel.sum()
    return cv2.filter2D(frame, -1, kernel, borderType=cv2.BORDER_REPLICATE)
