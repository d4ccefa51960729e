"""Tier-1 and hard-negative clips: actors and phenomena on moving plates (§4.1, §4.3).

:func:`render_clip` is a pure function of a :class:`ClipSpec` (and the plate pool): it samples
a plate, a camera path, actors and phenomena, renders the frames through the simulated sensor
(blur, noise, JPEG) and returns them with per-frame labels. Channels are *not* made here: the
store runs the package's own Stage A/B on the decoded frames (the absolute rule of §4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from emts.synth import actors as actor_lib
from emts.synth.camera import CameraMotionConfig, CameraPath, relative_motion
from emts.synth.common import FRAME_SIZE, log_uniform
from emts.synth.phenomena import (
    CloudShadows,
    Flicker,
    HardShade,
    ParallaxObjects,
    SensorModel,
    WaterShimmer,
    make_noise_bank,
)
from emts.synth.plates import HitUavPlates, Plate, draw_clutter, procedural_plate

TIER1_FRAMES = 18  # §4.1
PERSON_HEIGHT_RANGE = (24.0, 220.0)  # frame px, log-uniform (§4.1: 9-83 px at 256x192)
MAX_SCALE_RATE = 0.025  # §4.1: per-frame scale drift up to +-2.5 %
MAX_SCALE_SWEEP = 2.0  # an actor's size stays within [1/2, 2] x its first size (long clips)
CROWD_FRACTION = 0.10  # share of Tier-1 clips that are crowds
CROWD_SIZE = (5, 30)
REAL_PLATE_FRACTION = 0.5  # share of clips on real aerial plates when a pool is given
CLUTTER_PROBABILITY = 0.6  # clips with static clutter hard negatives (issue 8)
CLUTTER_COUNT = (3, 30)
DRONE_SHADOW_PROBABILITY = {"tier1": 0.15, "negative": 0.3}  # the drone's own moving shadow
LOCAL_STD_FLOOR = 6.0  # gray levels: actors' contrast unit on flat plates (snow, water)
KIND_CODES = {"tier1": 1, "negative": 2}
SPLIT_CODES = {"train": 1, "heldout": 2}
_NOISE_BANK_SEED = 20251126


@dataclass(frozen=True)
class ClipSpec:
    """Everything that determines one clip."""

    kind: str  # "tier1" or "negative"
    split: str  # "train" or "heldout"
    seed: int  # the set's base seed
    index: int  # clip number within the set
    frames: int = TIER1_FRAMES
    mesh_walkers: float = (
        0.0  # share of persons drawn as MakeHuman meshes (actors.walker.MeshWalker)
    )
    # Factor on every mover's part contrasts (persons, animals, vehicles; not the static
    # clutter, which is drawn 30-120 gray levels off its ground): 1 = actors.base.CONTRAST_RANGE.
    contrast_scale: float = 1.0
    # Probability of a building's or a canopy's hard, deep shade on the ground
    # (:class:`~emts.synth.phenomena.HardShade`; drawn after every other draw of the scene,
    # so a set made at 0 is what it was before)
    hard_shade: float = 0.0

    def rng(self) -> np.random.Generator:
        # Split and kind are part of the seed sequence: train and held-out never share seeds.
        return np.random.default_rng(
            [self.seed, KIND_CODES[self.kind], SPLIT_CODES[self.split], self.index]
        )


@dataclass
class RenderedClip:
    frames: list[np.ndarray] = field(default_factory=list)  # decoded uint8 frames
    jpegs: list[bytes] = field(default_factory=list)
    labels: dict = field(default_factory=dict)


_noise_bank: np.ndarray | None = None


def _noise() -> np.ndarray:
    global _noise_bank
    if _noise_bank is None:
        _noise_bank = make_noise_bank(np.random.default_rng(_NOISE_BANK_SEED))
    return _noise_bank


def _pick_plate(
    rng: np.random.Generator, spec: ClipSpec, pool: HitUavPlates | None
) -> tuple[Plate, float]:
    """A plate and the camera zoom (frame px per plate px) to view it at."""
    if pool is not None and rng.random() < REAL_PLATE_FRACTION:
        plate = pool.load(int(rng.integers(len(pool))))
        return plate, float(rng.uniform(1.15, 1.6))  # 640x512 stills: zoom in for margin
    kind = "water" if spec.kind == "negative" and rng.random() < 0.2 else None
    plate = procedural_plate(rng, kind, seed_label=f"{spec.split}:{spec.seed}:{spec.index}")
    return plate, float(rng.uniform(0.95, 1.3))


def _camera_config(rng: np.random.Generator, harsh: bool) -> CameraMotionConfig:
    calm = float(rng.uniform(0.3, 1.0))  # from a calm hover to the §4.1 maxima
    return CameraMotionConfig(
        max_drift=4.0 * calm,
        max_roll=0.008 * calm,
        max_scale_rate=0.006 * calm,
        gust_rate=1 / 12 if harsh else 1 / 30,
        gust_strength=float(rng.uniform(2.0, 4.0)),
    )


def _view_region(path: CameraPath, margin: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Plate rectangle (top-left, bottom-right) seen by the frame now, shrunk by ``margin``."""
    inverse = np.linalg.inv(path.pose())
    w, h = FRAME_SIZE
    corners = np.array(
        [
            [w * margin, h * margin, 1],
            [w * (1 - margin), h * margin, 1],
            [w * margin, h * (1 - margin), 1],
            [w * (1 - margin), h * (1 - margin), 1],
        ]
    )
    plate_corners = corners @ inverse[:2].T
    return plate_corners.min(axis=0), plate_corners.max(axis=0)


def _make_persons(rng, path, zoom, pitch, crowd, mesh_walkers: float = 0.0) -> list:
    low, high = _view_region(path)
    persons = []

    def kind() -> str:
        # no draw at share 0: sets made without mesh walkers stay what they were
        return "mesh-person" if mesh_walkers > 0 and rng.random() < mesh_walkers else "person"

    if crowd:
        count = int(rng.integers(CROWD_SIZE[0], CROWD_SIZE[1] + 1))
        base_height = log_uniform(rng, PERSON_HEIGHT_RANGE[0], 110.0)
        centre = rng.uniform(low + (high - low) * 0.3, low + (high - low) * 0.7)
        spread = (high - low) * rng.uniform(0.1, 0.3)
        streams = rng.uniform(0, 2 * np.pi, int(rng.integers(2, 4)))
        for identity in range(count):
            height = base_height * rng.uniform(0.85, 1.15)
            position = np.clip(centre + rng.normal(0, 1, 2) * spread, low, high)
            actor = actor_lib.random_actor(rng, kind(), position, height / zoom, pitch, identity)
            _set_heading(actor, float(rng.choice(streams) + rng.normal(0, 0.3)))
            persons.append(actor)
        return persons
    for identity in range(int(rng.integers(1, 4))):
        height = log_uniform(rng, *PERSON_HEIGHT_RANGE)
        position = rng.uniform(low, high)
        actor = actor_lib.random_actor(rng, kind(), position, height / zoom, pitch, identity)
        _set_scale_rate(actor, rng)
        persons.append(actor)
    return persons


def _set_heading(actor, heading: float) -> None:
    if hasattr(actor, "heading_rad"):
        actor.heading_rad = heading


def _set_scale_rate(actor, rng: np.random.Generator) -> None:
    """Some persons approach or recede (the identity seen across a scale sweep, §4.1)."""
    draw = rng.random()
    if draw < 0.3:
        rate = rng.uniform(0.005, MAX_SCALE_RATE)
    elif draw < 0.5:
        rate = -rng.uniform(0.005, MAX_SCALE_RATE)
    else:
        rate = rng.uniform(-0.005, 0.005)
    actor.scale_rate = float(rate)


def _make_distractors(rng, spec, path, zoom, pitch, reference_height, first_id) -> list:
    low, high = _view_region(path)
    distractors = []
    animal_p, vehicle_p = (0.15, 0.3) if spec.kind == "tier1" else (0.4, 0.45)
    identity = first_id
    if rng.random() < animal_p:
        for _ in range(int(rng.integers(1, 3 if spec.kind == "tier1" else 4))):
            distractors.append(
                actor_lib.random_actor(
                    rng, "animal", rng.uniform(low, high), reference_height / zoom, pitch, identity
                )
            )
            identity += 1
    if rng.random() < vehicle_p:
        for _ in range(int(rng.integers(1, 3 if spec.kind == "tier1" else 4))):
            kind = "vehicle" if rng.random() < 0.7 else "bicycle"
            distractors.append(
                actor_lib.random_actor(
                    rng, kind, rng.uniform(low, high), reference_height / zoom, pitch, identity
                )
            )
            identity += 1
    return distractors


def _local_stats(frame: np.ndarray, patch) -> tuple[float, float]:
    h, w = patch.shape
    x0, y0 = max(patch.x0 - w, 0), max(patch.y0 - h, 0)
    region = frame[y0 : patch.y0 + 2 * h, x0 : patch.x0 + 2 * w]
    if region.size == 0:
        return float(frame.mean()), LOCAL_STD_FLOOR
    return float(region.mean()), max(float(region.std()), LOCAL_STD_FLOOR)


def _window(frame_shape, patch):
    """Overlap of a patch with the frame: (frame slices, patch slices) or None."""
    h, w = patch.shape
    fh, fw = frame_shape
    x0, y0 = max(patch.x0, 0), max(patch.y0, 0)
    x1, y1 = min(patch.x0 + w, fw), min(patch.y0 + h, fh)
    if x1 <= x0 or y1 <= y0:
        return None
    return (slice(y0, y1), slice(x0, x1)), (
        slice(y0 - patch.y0, y1 - patch.y0),
        slice(x0 - patch.x0, x1 - patch.x0),
    )


def _composite(frame, alpha_patch, values):
    win = _window(frame.shape, alpha_patch)
    if win is None:
        return
    (fs, ps) = win
    a = alpha_patch.values[ps]
    frame[fs] = frame[fs] * (1 - a) + values[ps] * a


def composite_actors(
    frame: np.ndarray,
    actors: list,
    pose: np.ndarray,
    warm_persons: set | frozenset = frozenset(),
    shade: np.ndarray | None = None,
) -> list[tuple]:
    """Draw ``actors`` (plate px, seen through the 2x3/3x3 ``pose``) into the float gray
    ``frame`` in place: shadows first, then bodies, farther ones (smaller ground y on screen)
    first so that nearer ones occlude them. Each body's contrast is in units of the local
    standard deviation around it; persons in ``warm_persons`` are brighter than the ground.
    ``shade``: the frame's coverage by a :class:`~emts.synth.phenomena.HardShade` (applied
    by the caller afterwards), where no cast shadow is drawn.

    Returns the layers bottom to top: (sprite, mean contrast in local-std units).
    """
    size = (frame.shape[1], frame.shape[0])
    affine = np.asarray(pose, float)[:2]
    sprites = []
    for item in sorted(actors, key=lambda a: float((affine @ [*a.ground_position, 1])[1])):
        sprite = item.render(affine, size)
        if sprite is not None:
            sprites.append(sprite)
    for sprite in sprites:
        if sprite.shadow is not None:
            win = _window(frame.shape, sprite.shadow)
            if win is not None:
                darkening = sprite.shadow.values[win[1]]
                if shade is not None:
                    darkening = darkening * (1.0 - shade[win[0]])
                frame[win[0]] *= 1.0 - darkening
    layers = []
    for sprite in sprites:
        mean, std = _local_stats(frame, sprite.alpha)
        contrast = sprite.contrast.values
        if sprite.kind == "person" and sprite.identity in warm_persons:
            contrast = np.abs(contrast)
        _composite(frame, sprite.alpha, mean + contrast * std)
        weights = sprite.alpha.values
        layers.append((sprite, float((weights * contrast).sum() / max(weights.sum(), 1e-6))))
    return layers


@dataclass
class DroneShadow:
    """The drone's own shadow on the ground: fixed to the drone, so it stays nearly still in
    the frame while the ground moves under it -- after ego-motion compensation it is a mover.
    A quadcopter outline (two crossed arms and four rotor discs), soft-edged."""

    centre: np.ndarray  # frame px
    velocity: np.ndarray  # frame px/frame (the shadow slides as the drone tilts and turns)
    size: float  # frame px, rotor-to-rotor
    angle: float
    strength: float  # darkening 0..1
    _mask: np.ndarray | None = None

    @classmethod
    def random(cls, rng: np.random.Generator, reference_height: float) -> DroneShadow:
        return cls(
            centre=rng.uniform(0.15, 0.85, 2) * FRAME_SIZE,
            velocity=rng.normal(0, 0.3, 2),
            size=float(reference_height * rng.uniform(0.4, 1.5)),
            angle=float(rng.uniform(0, np.pi)),
            strength=float(rng.uniform(0.2, 0.6)),
        )

    def mask(self) -> np.ndarray:
        if self._mask is None:
            n = int(np.ceil(self.size * 1.4)) | 1
            mask = np.zeros((n, n), np.float32)
            c = n / 2
            half = self.size / 2
            for a in (self.angle + np.pi / 4, self.angle - np.pi / 4):
                d = np.array([np.cos(a), np.sin(a)]) * half
                cv2.line(
                    mask,
                    tuple(np.int32(c - d)),
                    tuple(np.int32(c + d)),
                    1.0,
                    max(int(self.size * 0.08), 1),
                )
                for sign in (-1, 1):
                    cv2.circle(
                        mask, tuple(np.int32(c + sign * d)), max(int(self.size * 0.22), 1), 0.8, -1
                    )
            cv2.circle(mask, (int(c), int(c)), max(int(self.size * 0.15), 1), 1.0, -1)
            self._mask = cv2.GaussianBlur(mask, (0, 0), max(self.size * 0.03, 0.6))
        return self._mask

    def apply(self, frame: np.ndarray, rng: np.random.Generator) -> None:
        self.velocity = 0.9 * self.velocity + rng.normal(0, 0.1, 2)
        self.centre = self.centre + self.velocity
        mask = self.mask()
        n = mask.shape[0]
        shift = np.float32([[1, 0, self.centre[0] - n / 2], [0, 1, self.centre[1] - n / 2]])
        layer = cv2.warpAffine(mask, shift, FRAME_SIZE)
        frame *= 1.0 - self.strength * layer


@dataclass
class Scene:
    """Everything in front of the simulated camera, sampled once per clip."""

    plate: Plate
    path: CameraPath
    zoom: float
    pitch_deg: float
    persons: list
    distractors: list
    sun: actor_lib.Sunlight
    sensor: SensorModel
    warm_persons: set = field(default_factory=set)
    follow: object | None = None
    clouds: CloudShadows | None = None
    shimmer: WaterShimmer | None = None
    parallax: ParallaxObjects | None = None
    flicker: Flicker | None = None
    crowd: bool = False
    harsh: bool = False
    gusts: dict = field(default_factory=dict)  # frame -> forced gust velocity (see CameraPath)
    clutter: int = 0  # static clutter objects drawn into the plate
    drone_shadow: DroneShadow | None = None
    shade: HardShade | None = None

    def describe(self) -> dict:
        extra = {}
        if self.shade is not None:  # (only then: the labels of sets without it stay as they were)
            extra["hard_shade"] = {
                "kind": self.shade.kind,
                "strength": round(self.shade.strength, 3),
            }
        return {
            **extra,
            "zoom": round(self.zoom, 4),
            "pitch_deg": round(self.pitch_deg, 2),
            "crowd": self.crowd,
            "persons": len(self.persons),
            "distractors": [d.kind for d in self.distractors],
            "clouds": self.clouds is not None,
            "water": self.shimmer is not None,
            "parallax_objects": 0 if self.parallax is None else len(self.parallax.objects),
            "flicker": self.flicker is not None,
            "harsh_camera": self.harsh,
            "follow": self.follow is not None,
            "clutter": self.clutter,
            "drone_shadow": self.drone_shadow is not None,
            "sun": {
                "azimuth_deg": round(float(np.degrees(self.sun.azimuth_rad)), 1),
                "elevation_deg": round(float(np.degrees(self.sun.elevation_rad)), 1),
                "strength": round(self.sun.strength, 3),
            },
            "sensor": {
                "noise_std": round(self.sensor.noise_std, 3),
                "exposure": round(self.sensor.exposure, 3),
                "jpeg_quality": self.sensor.jpeg_quality,
            },
        }


def build_scene(spec: ClipSpec, pool: HitUavPlates | None, rng: np.random.Generator) -> Scene:
    """Sample the plate, camera, actors and phenomena of one clip."""
    plate, zoom = _pick_plate(rng, spec, pool)
    harsh = spec.kind == "negative" and rng.random() < 0.3
    path = CameraPath(plate.size, FRAME_SIZE, _camera_config(rng, harsh), rng, zoom=zoom)
    pitch_deg = float(np.clip((plate.pitch_deg or rng.uniform(30, 90)) + rng.normal(0, 4), 30, 90))
    pitch = np.radians(pitch_deg)
    crowd = spec.kind == "tier1" and rng.random() < CROWD_FRACTION
    persons = (
        _make_persons(rng, path, zoom, pitch, crowd, spec.mesh_walkers)
        if spec.kind == "tier1"
        else []
    )
    reference_height = (
        float(np.median([p.height_px for p in persons])) * zoom
        if persons
        else log_uniform(rng, *PERSON_HEIGHT_RANGE)
    )
    distractors = _make_distractors(
        rng, spec, path, zoom, pitch, reference_height, first_id=len(persons)
    )
    if spec.contrast_scale != 1.0:  # after all draws: sets at 1 stay what they were
        for actor in persons + distractors:
            actor.part_contrast = {
                part: value * spec.contrast_scale for part, value in actor.part_contrast.items()
            }
    clutter = 0
    if rng.random() < CLUTTER_PROBABILITY:
        count = int(rng.integers(CLUTTER_COUNT[0], CLUTTER_COUNT[1] + 1))
        region = _view_region(path, margin=-0.1)
        clutter = draw_clutter(rng, plate.image, reference_height / zoom, region, count)
    drone_shadow = (
        DroneShadow.random(rng, reference_height)
        if rng.random() < DRONE_SHADOW_PROBABILITY[spec.kind]
        else None
    )
    sun = actor_lib.Sunlight.random(rng)
    if plate.night:
        sun = actor_lib.Sunlight(sun.azimuth_rad, sun.elevation_rad, 0.0)
    for actor in persons + distractors:
        actor.sun = sun  # one sun per clip: all shadows agree
    # Thermal stills: bodies are usually warmer (brighter) than the ground.
    thermal = plate.source.startswith("hituav")
    warm_persons = {a.identity for a in persons if thermal and rng.random() < 0.75}
    follow = persons[0] if persons and rng.random() < 0.5 else None
    clouds = (
        CloudShadows.random(rng, plate.size)
        if rng.random() < (0.3 if spec.kind == "tier1" else 0.5)
        else None
    )
    shimmer = WaterShimmer.random(rng, plate.water) if plate.water is not None else None
    parallax = None
    if rng.random() < (0.5 if spec.kind == "tier1" else 0.7):
        count = int(rng.integers(2, 10 if spec.kind == "tier1" else 16))
        parallax = ParallaxObjects.random(rng, plate.image, count, _view_region(path, margin=-0.1))
    flicker = (
        Flicker.random(rng, strong=spec.kind == "negative" and rng.random() < 0.3)
        if rng.random() < 0.5
        else None
    )
    # last of the draws: a set made without hard shade is what it was before
    shade = None
    # (a sunlit, visible-light scene: no night plate, no warm bodies -- in the shade a body
    # is darkened with its ground)
    sunlit = not plate.night and not warm_persons
    if spec.hard_shade > 0 and rng.random() < spec.hard_shade and sunlit:
        shade = HardShade.random(rng, plate.size, _view_region(path, 0.0), reference_height / zoom)
    return Scene(
        plate=plate,
        path=path,
        zoom=zoom,
        pitch_deg=pitch_deg,
        persons=persons,
        distractors=distractors,
        sun=sun,
        sensor=SensorModel.random(rng),
        warm_persons=warm_persons,
        follow=follow,
        clouds=clouds,
        shimmer=shimmer,
        parallax=parallax,
        flicker=flicker,
        crowd=crowd,
        harsh=harsh,
        clutter=clutter,
        drone_shadow=drone_shadow,
        shade=shade,
    )


def render_scene(
    scene: Scene, frames: int, rng: np.random.Generator
) -> tuple[RenderedClip, list[dict]]:
    """Render ``frames`` frames of a scene; returns the clip and its per-frame labels."""
    clip = RenderedClip()
    frames_labels = []
    path, plate = scene.path, scene.plate
    previous_pose = path.pose()
    actors = scene.persons + scene.distractors
    start_heights = {id(a): a.height_px for a in actors}
    phenomena = [p for p in (scene.clouds, scene.shimmer, scene.parallax) if p is not None]
    for t in range(frames):
        if t > 0:
            if scene.follow is not None:
                path.target = scene.follow.ground_position.copy()
            if t in scene.gusts:
                path.impulse(scene.gusts[t])
            pose = path.step()
            for item in actors:
                item.step()
                # Long clips: an approaching person turns back before filling the frame.
                ratio = item.height_px / start_heights[id(item)]
                if (ratio > MAX_SCALE_SWEEP and item.scale_rate > 0) or (
                    ratio < 1 / MAX_SCALE_SWEEP and item.scale_rate < 0
                ):
                    item.scale_rate = -item.scale_rate
            for phenomenon in phenomena:
                phenomenon.step()
        else:
            pose = previous_pose
        motion = relative_motion(previous_pose, pose)
        ground = (
            plate.image if scene.shimmer is None else scene.shimmer.apply_to_plate(plate.image, rng)
        )
        frame = cv2.warpAffine(
            ground, pose[:2], FRAME_SIZE, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
        )
        if scene.drone_shadow is not None:
            scene.drone_shadow.apply(frame, rng)
        shade = None if scene.shade is None else scene.shade.coverage(pose[:2], FRAME_SIZE)
        layers = composite_actors(frame, actors, pose, scene.warm_persons, shade)
        occluders = (
            scene.parallax.render(pose[:2], FRAME_SIZE, path.centre)
            if scene.parallax is not None
            else []
        )
        for alpha, image in occluders:
            _composite(frame, alpha, image.values)
        if scene.shade is not None:
            scene.shade.apply(frame, shade)
        if scene.clouds is not None:
            scene.clouds.apply(frame, pose[:2])
        if scene.flicker is not None:
            frame *= scene.flicker.gain(rng)
        decoded, jpeg = scene.sensor.apply(frame, motion, rng, _noise())
        clip.frames.append(decoded)
        clip.jpegs.append(jpeg)
        frames_labels.append(_frame_labels(t, motion, layers, [a for a, _ in occluders], shade))
        previous_pose = pose
    return clip, frames_labels


def render_clip(spec: ClipSpec, pool: HitUavPlates | None = None) -> RenderedClip:
    """Render one clip (frames, JPEG bytes, labels) deterministically from ``spec``."""
    rng = spec.rng()
    scene = build_scene(spec, pool, rng)
    clip, frames_labels = render_scene(scene, spec.frames, rng)
    clip.labels = {
        "kind": spec.kind,
        "split": spec.split,
        "seed": spec.seed,
        "clip": spec.index,
        "plate": scene.plate.source,
        "scene": scene.describe(),
        "frames": frames_labels,
    }
    return clip


def _frame_labels(
    t: int, motion: np.ndarray, layers: list, occluders: list, shade: np.ndarray | None = None
) -> dict:
    """Labels of one frame; visibility from everything composited above each person; with a
    hard ``shade`` coverage, each person's ``shaded`` share (their alpha-weighted coverage)."""
    h, w = FRAME_SIZE[1], FRAME_SIZE[0]
    above = np.zeros((h, w), np.float32)  # coverage by everything drawn later
    for alpha in occluders:
        win = _window(above.shape, alpha)
        if win is not None:
            above[win[0]] = 1 - (1 - above[win[0]]) * (1 - alpha.values[win[1]])
    persons, distractors = [], []
    for sprite, contrast in reversed(layers):
        total = float(sprite.alpha.values.sum())
        win = _window(above.shape, sprite.alpha)
        seen = 0.0
        if win is not None:
            a = sprite.alpha.values[win[1]]
            seen = float((a * (1 - above[win[0]])).sum())
            above[win[0]] = 1 - (1 - above[win[0]]) * (1 - a)
        box = _clip_box(sprite.box)
        if box is None:
            continue
        if sprite.kind == "person":
            person = {
                "id": sprite.identity,
                "box": box,
                "visible": round(seen / max(total, 1e-6), 3),
                "contrast": round(contrast, 3),
            }
            if shade is not None:
                covered = 0.0
                if win is not None:
                    a = sprite.alpha.values[win[1]]
                    covered = float((a * shade[win[0]]).sum()) / max(float(a.sum()), 1e-6)
                person["shaded"] = round(covered, 3)
            persons.append(person)
        else:
            distractors.append({"kind": sprite.kind, "id": sprite.identity, "box": box})
    persons.sort(key=lambda p: p["id"])
    return {
        "frame": t,
        "camera_motion": np.round(motion, 6).tolist(),
        "persons": persons,
        "distractors": distractors,
    }


def _clip_box(box: np.ndarray) -> list[float] | None:
    x, y, w, h = (float(v) for v in box)
    x0, y0 = max(x, 0.0), max(y, 0.0)
    x1, y1 = min(x + w, FRAME_SIZE[0]), min(y + h, FRAME_SIZE[1])
    if x1 - x0 < 1 or y1 - y0 < 1:
        return None
    return [round(x0, 2), round(y0, 2), round(x1 - x0, 2), round(y1 - y0, 2)]
