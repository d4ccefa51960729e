"""What every actor of the synthetic curriculum shares (§4.1, SPEC §3 "Actors").

An actor walks or drives over the ground plane of a plate and draws itself, frame by frame,
into frame pixels through the camera pose; :class:`Actor` holds the motion (position, heading,
speed, scale drift, a schedule of turns and pauses) and the rendering, its subclasses pose the
body (:mod:`emts.synth.actors.walker`, :mod:`~emts.synth.actors.quadruped`,
:mod:`~emts.synth.actors.rigid_mover`).

Coordinates. An actor stands at ``ground_position`` (plate px). Its body is posed in a body
frame (x forward along the heading, y to its left, z up) in units of ``height_px``, turned by
``heading_rad`` into the world frame (X right, Y away from the camera along the ground, Z up)
and projected orthographically for a camera pitched ``pitch_rad`` below the horizontal::

    u = X,   v = -Y sin(pitch) - Z cos(pitch)        (plate px offset; v points down)

so at pitch 90 deg (nadir) a person is a head-and-shoulders blob with swinging limbs, and at
30 deg an upright figure ``~0.87 * height_px`` tall. ``(u, v)`` is an orthonormal projection of
3-D space, so a capsule (a sphere-swept segment) projects to a 2-D capsule of the same radius.
The camera pose (2x3 or 3x3 similarity, plate px -> frame px, carrying roll and zoom) then maps
the plate into the frame. Heading 0 walks right in the plate, pi/2 away from the camera (up),
3*pi/2 towards it (down).

Rendering (:mod:`emts.synth.actors.raster`). Every actor returns a
:class:`~emts.synth.sprites.Sprite`; its cast shadow (the body points slid along the sun
direction to the ground) is a patch of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal, NamedTuple

import cv2
import numpy as np

from emts.synth.actors.raster import (
    FEATHER_SIGMA,
    FILL_DILATION_PX,
    SHADOW_FEATHER_SIGMA,
    _capsule_polygons,
    _rasterize,
    _tight_box,
)
from emts.synth.sprites import Patch, Sprite

# --- Time -----------------------------------------------------------------------------------
FPS = 30.0  # frames per second of the synthetic clips (§4.1)

# --- Behaviour schedule -----------------------------------------------------------------------
SCHEDULE_HORIZON_FRAMES = 600  # events are sampled for the first 20 s of an actor's life
STANDING_PROBABILITY = 0.15  # of a random walker (or animal) standing still all along
EVENT_GAP_MEAN_FRAMES = 45.0  # mean gap between behaviour events (exponential)
TURN_PROBABILITY = 0.65  # an event is a turn, otherwise a pause
TURN_RANGE_RAD = (math.radians(20.0), math.radians(120.0))
TURN_FRAMES = (8, 30)
PAUSE_FRAMES = (10, 45)
PAUSE_RAMP_FRAMES = 6  # frames to slow down into (and speed up out of) a pause

# --- Scale drift, clothing, sun ---------------------------------------------------------------
MAX_SCALE_RATE = 0.025  # per-frame height drift, §4.1 "up to +-2.5 %"
CONTRAST_RANGE = (0.3, 4.0)  # |base contrast| of an actor, uniform (local plate std units)
PART_CONTRAST_SPREAD = 0.7  # std of a part's deviation from the base contrast
SUN_ELEVATION_RANGE_RAD = (math.radians(15.0), math.radians(90.0))
MIN_SUN_ELEVATION_RAD = math.radians(10.0)  # shadows are at most cot(10 deg) = 5.7 x height
SHADOW_STRENGTH_RANGE = (0.2, 0.6)
OVERCAST_PROBABILITY = 0.25  # of a random sun casting no shadow at all

Behaviour = Literal["walking", "standing"]


# ============================================================================================
# Value types
# ============================================================================================


@dataclass(frozen=True)
class Sunlight:
    """The sun of a clip; share one between all of its actors.

    Attributes:
        azimuth_rad: ground-plane direction *towards* the sun (world X right, Y away from the
            camera); shadows fall the opposite way.
        elevation_rad: sun elevation; 15 deg casts shadows 3.7x as long as the actor is tall,
            90 deg shrinks them to the footprint under the body.
        strength: darkening at full shadow coverage, in [0, 1]; 0 (overcast) casts none.
    """

    azimuth_rad: float = 0.0
    elevation_rad: float = math.pi / 2
    strength: float = 0.0

    @classmethod
    def random(cls, rng: np.random.Generator) -> Sunlight:
        """A random sun: any azimuth, elevation 15-90 deg, a quarter of the skies overcast."""
        strength = (
            0.0 if rng.random() < OVERCAST_PROBABILITY else rng.uniform(*SHADOW_STRENGTH_RANGE)
        )
        return cls(
            azimuth_rad=float(rng.uniform(0.0, 2 * math.pi)),
            elevation_rad=float(rng.uniform(*SUN_ELEVATION_RANGE_RAD)),
            strength=float(strength),
        )

    @property
    def direction(self) -> np.ndarray:
        """Unit vector (world X, Y, Z) from the ground towards the sun."""
        horizontal = math.cos(self.elevation_rad)
        return np.array(
            [
                math.cos(self.azimuth_rad) * horizontal,
                math.sin(self.azimuth_rad) * horizontal,
                math.sin(self.elevation_rad),
            ]
        )

    @property
    def shadow_offset(self) -> np.ndarray:
        """Ground displacement (world X, Y) of the shadow of a point per unit of its height."""
        length = 1.0 / math.tan(max(self.elevation_rad, MIN_SUN_ELEVATION_RAD))
        return -length * np.array([math.cos(self.azimuth_rad), math.sin(self.azimuth_rad)])


@dataclass(frozen=True)
class BehaviourEvent:
    """One scheduled change of a moving actor's behaviour.

    Attributes:
        start_frame: actor age (frames since creation) at which the event begins.
        duration_frames: how long it lasts.
        kind: ``"turn"`` (the heading changes smoothly by ``turn_rad``) or ``"pause"`` (speed
            and gait amplitude ease down to zero and back up).
        turn_rad: signed heading change of a turn (counter-clockwise on the ground).
    """

    start_frame: int
    duration_frames: int
    kind: Literal["turn", "pause"]
    turn_rad: float = 0.0

    def progress(self, age: float) -> float:
        """Smooth 0 -> 1 progress of the event at ``age`` frames."""
        return _smoothstep((age - self.start_frame) / self.duration_frames)

    def pause_depth(self, age: float) -> float:
        """How far (0..1) a pause has slowed the actor down at ``age`` frames."""
        elapsed = age - self.start_frame
        if elapsed <= 0 or elapsed >= self.duration_frames:
            return 0.0
        ramp = max(1.0, min(PAUSE_RAMP_FRAMES, self.duration_frames / 3))
        return min(
            _smoothstep(elapsed / ramp), _smoothstep((self.duration_frames - elapsed) / ramp)
        )


class _Geometry(NamedTuple):
    """An actor's posed shapes in its body frame (x forward, y left, z up; units of height)."""

    capsule_starts: np.ndarray  # (m, 3)
    capsule_ends: np.ndarray  # (m, 3); equal to the start for a sphere
    capsule_radii: np.ndarray  # (m,)
    capsule_parts: np.ndarray  # (m,) 1-based index into the actor's PARTS
    hulls: tuple[tuple[np.ndarray, int], ...] = ()  # (points (n, 3), part): solid convex hulls
    # a triangle mesh: vertices (n, 3), faces (f, 3), 1-based label of each face (its part,
    # or a part-and-shade label that the actor's ``_lut`` resolves)
    mesh: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def _capsules(items: list[tuple[np.ndarray, np.ndarray, float, int]]) -> tuple[np.ndarray, ...]:
    """Stack ``(start, end, radius, part)`` capsules into the arrays of a :class:`_Geometry`."""
    starts = np.array([item[0] for item in items], float)
    ends = np.array([item[1] for item in items], float)
    radii = np.array([item[2] for item in items], float)
    parts = np.array([item[3] for item in items], np.int64)
    return starts, ends, radii, parts


# ============================================================================================
# The common actor
# ============================================================================================


@dataclass(eq=False, kw_only=True)
class Actor:
    """State and rendering shared by every actor; subclasses pose the body.

    Attributes:
        identity: unique per actor within a clip.
        ground_position: (2,) plate px of the ground point under the body's centre.
        height_px: plate px per body unit (a person's standing height, an animal's withers
            height, a vehicle's roof height, a cyclist's standing height).
        pitch_rad: camera pitch below the horizontal (pi/6 oblique ... pi/2 nadir).
        heading_rad: direction of travel on the ground (0 = plate right, pi/2 = away).
        speed_hps: travel speed in body units (``height_px``) per second while moving.
        scale_rate: per-frame relative change of ``height_px`` (approach / recede).
        behaviour: ``"walking"`` (moving, following ``schedule``) or ``"standing"``.
        schedule: turns and pauses, by actor age.
        part_contrast: luminance of each of the class's ``PARTS``, in local plate std units.
        sun: the clip's sunlight (shadow direction, length, strength).
        age_frames: frames stepped since creation.
    """

    kind: ClassVar[str] = "actor"
    PARTS: ClassVar[tuple[str, ...]] = ()

    identity: int
    ground_position: np.ndarray
    height_px: float
    pitch_rad: float
    heading_rad: float = 0.0
    speed_hps: float = 0.0
    scale_rate: float = 0.0
    behaviour: Behaviour = "walking"
    schedule: tuple[BehaviourEvent, ...] = ()
    part_contrast: dict[str, float] = field(default_factory=dict)
    sun: Sunlight = field(default_factory=Sunlight)
    age_frames: int = 0

    def __post_init__(self) -> None:
        self.ground_position = np.array(self.ground_position, float).reshape(2)

    # ----------------------------------------------------------------------------- motion
    def activity(self) -> float:
        """0..1 fraction of full speed and gait amplitude at the current age."""
        if self.behaviour == "standing":
            return 0.0
        depth = max(
            (e.pause_depth(self.age_frames) for e in self.schedule if e.kind == "pause"),
            default=0.0,
        )
        return 1.0 - depth

    def ground_velocity(self) -> np.ndarray:
        """Plate px per frame that the next :meth:`step` moves ``ground_position`` by."""
        distance = self.speed_hps * self.height_px / FPS * self.activity()
        forward = np.array([math.cos(self.heading_rad), math.sin(self.heading_rad)])
        return distance * np.array([forward[0], -forward[1] * math.sin(self.pitch_rad)])

    def step(self) -> None:
        """Advance one frame: position, heading, scale, behaviour and articulation."""
        self.ground_position = self.ground_position + self.ground_velocity()
        self._advance_articulation()
        for event in self.schedule:
            if event.kind == "turn":
                turned = event.progress(self.age_frames + 1) - event.progress(self.age_frames)
                self.heading_rad = (self.heading_rad + event.turn_rad * turned) % (2 * math.pi)
        self.height_px *= 1.0 + self.scale_rate
        self.age_frames += 1

    def _advance_articulation(self) -> None:
        """Advance gait phases by one frame (articulated subclasses)."""

    def _geometry(self) -> _Geometry:
        raise NotImplementedError

    # --------------------------------------------------------------------------- rendering
    def render(self, pose: np.ndarray, frame_size: tuple[int, int]) -> Sprite | None:
        """Draw the actor for the current frame.

        Args:
            pose: 2x3 (or 3x3) similarity mapping plate px to frame px.
            frame_size: (w, h) of the frame.

        Returns:
            The sprite (patches at integer frame positions, box of alpha > 0.25 in frame px,
            possibly reaching past the frame edge), or None when the body lies entirely
            outside the frame.
        """
        geometry = self._geometry()
        affine = np.asarray(pose, float)[:2]
        linear, translation = affine[:, :2], affine[:, 2]
        origin = linear @ self.ground_position + translation  # frame px of the ground point
        world = self._to_world(geometry)
        sin_pitch, cos_pitch = math.sin(self.pitch_rad), math.cos(self.pitch_rad)

        # Body: orthographic view plane (u, v) = (X, -Y sin(pitch) - Z cos(pitch)), isotropic.
        view = np.stack([world[:, 0], -world[:, 1] * sin_pitch - world[:, 2] * cos_pitch], 1)
        depth = world[:, 1] * cos_pitch - world[:, 2] * sin_pitch  # larger = farther away
        zoom = math.sqrt(abs(np.linalg.det(linear)))
        shrink = FILL_DILATION_PX / zoom
        towards_camera = np.array([0.0, -cos_pitch, sin_pitch])
        polygons, parts, depths = self._outlines(
            geometry, view, depth, self.height_px, shrink, world, towards_camera
        )
        order = np.argsort(-np.asarray(depths), kind="stable")  # painter's: farthest first
        polygons = [polygons[i] for i in order]
        parts = [parts[i] for i in order]
        drawn = _rasterize(
            polygons,
            parts,
            frame_size,
            FEATHER_SIGMA,
            self._lut(),
            geometry.mesh is None,
            (linear, origin),
        )
        if drawn is None:
            return None
        x0, y0, alpha, contrast = drawn
        box = _tight_box(alpha, x0, y0)
        width, height = frame_size
        if (
            box is None
            or box[0] >= width
            or box[1] >= height
            or box[0] + box[2] <= 0
            or box[1] + box[3] <= 0
        ):
            return None
        return Sprite(
            kind=self.kind,
            identity=self.identity,
            alpha=Patch(x0, y0, alpha),
            contrast=Patch(x0, y0, contrast),
            box=box,
            shadow=self._render_shadow(geometry, world, linear, origin, frame_size),
        )

    def _lut(self) -> np.ndarray:
        """Contrast of each 1-based label of the geometry (0: background)."""
        return np.array([0.0, *(self.part_contrast.get(p, 0.0) for p in self.PARTS)], np.float32)

    def _to_world(self, geometry: _Geometry) -> np.ndarray:
        """All shape points (capsule starts, ends, hull points, then mesh vertices) in world
        plate-px units."""
        hulls = [hull for hull, _ in geometry.hulls]
        mesh = [] if geometry.mesh is None else [geometry.mesh[0]]
        body = np.concatenate([geometry.capsule_starts, geometry.capsule_ends, *hulls, *mesh])
        c, s = math.cos(self.heading_rad), math.sin(self.heading_rad)
        # body x (forward) -> (c, s, 0), body y (left) -> (-s, c, 0), z up stays.
        rotation = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) * self.height_px
        return body @ rotation.T

    @staticmethod
    def _outlines(
        geometry: _Geometry,
        plane: np.ndarray,
        depth: np.ndarray | None,
        radius_scale: float,
        radius_shrink: float,
        world: np.ndarray | None = None,
        facing: np.ndarray | None = None,
    ) -> tuple[list[np.ndarray], list[int], list[float]]:
        """Convex outlines, in an isotropic 2-D plane, of the capsules, hulls and triangles.

        Capsule radii (body units) are scaled by ``radius_scale`` and drawn ``radius_shrink``
        smaller (the fill's dilation), keeping a tenth of them at least. A mesh keeps only its
        triangles whose outward normal (``world`` coordinates) points along ``facing`` (the
        camera for the body, the sun for its shadow): a closed surface's silhouette.
        """
        count = len(geometry.capsule_radii)
        radii = geometry.capsule_radii * radius_scale
        radii = np.maximum(radii - radius_shrink, 0.1 * radii)
        polygons = list(_capsule_polygons(plane[:count], plane[count : 2 * count], radii))
        parts = [int(p) for p in geometry.capsule_parts]
        depths = (
            [0.0] * count
            if depth is None
            else list(0.5 * (depth[:count] + depth[count : 2 * count]))
        )
        start = 2 * count
        for hull, part in geometry.hulls:
            points = plane[start : start + len(hull)]
            polygons.append(cv2.convexHull(points.astype(np.float32)).reshape(-1, 2).astype(float))
            parts.append(part)
            depths.append(0.0 if depth is None else float(depth[start : start + len(hull)].mean()))
            start += len(hull)
        if geometry.mesh is not None:
            _, faces, labels = geometry.mesh
            corners = faces + start
            if world is not None and facing is not None:
                a, b, c = (world[corners[:, k]] for k in range(3))
                front = np.cross(b - a, c - a) @ facing > 0
                corners, labels = corners[front], labels[front]
            polygons.extend(plane[corners])
            parts.extend(labels.tolist())
            depths.extend(
                [0.0] * len(corners) if depth is None else depth[corners].mean(axis=1).tolist()
            )
        return polygons, parts, depths

    def _render_shadow(
        self,
        geometry: _Geometry,
        world: np.ndarray,
        linear: np.ndarray,
        origin: np.ndarray,
        frame_size: tuple[int, int],
    ) -> Patch | None:
        """Cast shadow: every body point slid to the ground along the sun direction."""
        if self.sun.strength <= 0.0:
            return None
        ground = world[:, :2] + world[:, 2:3] * self.sun.shadow_offset  # world X, Y on Z = 0
        zoom = math.sqrt(abs(np.linalg.det(linear)))
        shrink = FILL_DILATION_PX / zoom
        polygons, parts, _ = self._outlines(
            geometry, ground, None, self.height_px, shrink, world, self.sun.direction
        )
        ground_to_plate = np.diag([1.0, -math.sin(self.pitch_rad)])  # foreshortened ground
        to_frame = linear @ ground_to_plate
        drawn = _rasterize(
            polygons,
            parts,
            frame_size,
            SHADOW_FEATHER_SIGMA,
            None,
            geometry.mesh is None,
            (to_frame, origin),
        )
        if drawn is None:
            return None
        x0, y0, coverage, _ = drawn
        return Patch(x0, y0, (coverage * np.float32(self.sun.strength)).astype(np.float32))


def sample_schedule(
    rng: np.random.Generator,
    turn_range_rad: tuple[float, float] = TURN_RANGE_RAD,
    turn_frames: tuple[int, int] = TURN_FRAMES,
    pause_frames: tuple[int, int] = PAUSE_FRAMES,
    horizon_frames: int = SCHEDULE_HORIZON_FRAMES,
) -> tuple[BehaviourEvent, ...]:
    """Non-overlapping turns and pauses at exponential gaps over ``horizon_frames``."""
    events = []
    start = float(rng.exponential(EVENT_GAP_MEAN_FRAMES))
    while start < horizon_frames:
        if rng.random() < TURN_PROBABILITY:
            duration = int(rng.integers(turn_frames[0], turn_frames[1] + 1))
            turn = float(rng.choice((-1.0, 1.0)) * rng.uniform(*turn_range_rad))
            events.append(BehaviourEvent(int(start), duration, "turn", turn))
        else:
            duration = int(rng.integers(pause_frames[0], pause_frames[1] + 1))
            events.append(BehaviourEvent(int(start), duration, "pause"))
        start += duration + float(rng.exponential(EVENT_GAP_MEAN_FRAMES))
    return tuple(events)


def _sample_contrast(rng: np.random.Generator, parts: tuple[str, ...]) -> dict[str, float]:
    """Clothing: a base contrast shared by the parts, plus a deviation per part.

    The base magnitude is uniform on :data:`CONTRAST_RANGE` with a random sign, so some actors
    are darker and some brighter than their surroundings, and about a fifth are nearly
    invisible (|contrast| < 1) over much of the body -- people in drab clothing on matching
    ground -- while most stand out as people usually do.
    """
    base = float(rng.choice([-1.0, 1.0]) * rng.uniform(*CONTRAST_RANGE))
    return {part: base + float(rng.normal(0.0, PART_CONTRAST_SPREAD)) for part in parts}


def _smoothstep(s: float) -> float:
    """Cosine ease 0 -> 1 over s in [0, 1] (clamped outside)."""
    s = min(max(s, 0.0), 1.0)
    return 0.5 - 0.5 * math.cos(math.pi * s)
