"""Procedural moving actors of the synthetic curriculum (§4.1, SPEC §3 "Actors").

Three kinds of actor walk or drive over the ground plane of a plate and draw themselves,
frame by frame, into frame pixels through the camera pose:

* :class:`Walker` (kind ``"person"``) -- an articulated person: head, torso, shoulder girdle,
  pelvis, two arms (upper arm + forearm) and two legs (thigh + shin) as capsules, with a gait
  cycle, turns, pauses, standing sway, scale drift, clothing contrast and a cast shadow;
* :class:`Quadruped` (kind ``"animal"``) -- a dog-to-cow sized four-legged walker, composited
  *unlabeled* as a moving hard negative;
* :class:`RigidMover` (kind ``"vehicle"`` or ``"bicycle"``) -- a rigid shape that translates
  and steers without articulation.

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

Rendering. The projected shapes are filled, farthest first, into a small label canvas at 4x
supersampling (sub-pixel vertex positions via OpenCV's fixed-point ``shift``, so nothing snaps
to whole pixels), box-filtered down to frame resolution (``INTER_AREA``) and feathered with a
Gaussian of sigma 0.5 px. Every actor returns a :class:`~emts.synth.sprites.Sprite`; its
cast shadow (the body points slid along the sun direction to the ground) is a patch of its own.

Example:
    >>> rng = np.random.default_rng(0)
    >>> person = random_actor(rng, "person", np.array([400.0, 300.0]), 40.0, np.radians(45), 1)
    >>> person.step()
    >>> sprite = person.render(np.eye(3), (640, 512))
    >>> sprite.kind, sprite.alpha.shape == sprite.contrast.shape
    ('person', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal, NamedTuple

import cv2
import numpy as np

from emts.synth.atlas import REGIONS, load_atlas
from emts.synth.sprites import Patch, Sprite

# --- Time -----------------------------------------------------------------------------------
FPS = 30.0  # frames per second of the synthetic clips (§4.1)

# --- Rendering ------------------------------------------------------------------------------
SUPERSAMPLE = 4  # sub-pixels per frame pixel and axis for actors up to LARGE_ACTOR_PX
LARGE_ACTOR_PX = 160  # patch side (frame px) above which SUPERSAMPLE is halved (speed)
_SUBPIXEL_BITS = 4  # fixed-point fraction bits of the polygon vertices (cv2 ``shift``)
_ARC_POINTS = 9  # points on each half-circle end of a capsule outline
FEATHER_SIGMA = 0.5  # px, Gaussian feathering of the alpha edge (§4.1 "alpha-feathered")
SHADOW_FEATHER_SIGMA = 0.8  # px, a little softer: penumbra
_PATCH_MARGIN = 2  # px of empty border around the drawn shapes (room for the feathering)
BOX_ALPHA = 0.25  # the box is the tight box of alpha above this (sprites.py)
_MIN_ALPHA = 1e-3  # below this the contrast of a pixel is undefined and set to 0
# cv2's anti-aliased polygon fill covers ~0.62 sub-pixels beyond the true outline; capsule
# radii are drawn that much smaller so that limbs keep their width at any size.
FILL_DILATION_PX = 0.62 / SUPERSAMPLE

# --- Walker anthropometry, fractions of standing height H ------------------------------------
HEAD_CENTRE_Z = 0.93
HEAD_RADIUS = 0.065
SHOULDER_Z = 0.82
SHOULDER_HALF_WIDTH = 0.12
SHOULDER_GIRDLE_HALF_WIDTH = 0.10  # the girdle capsule spans the chest between the arms
SHOULDER_GIRDLE_RADIUS = 0.045
HIP_Z = 0.53
HIP_HALF_WIDTH = 0.09
PELVIS_RADIUS = 0.07
TORSO_RADIUS = 0.09
TORSO_TOP_Z = 0.79  # the torso capsule runs from the pelvis to just below the shoulder line
TORSO_BASE_RISE = 0.03  # the torso capsule starts this far above the hip joints
NECK_RADIUS = 0.035
NECK_BASE_RISE = 0.035  # the neck starts this far above the shoulder line
THIGH_LENGTH = 0.245
SHIN_LENGTH = 0.245
THIGH_RADIUS = 0.05
SHIN_RADIUS = 0.04  # legs average ~0.045 H
UPPER_ARM_LENGTH = 0.19
FOREARM_LENGTH = 0.16
UPPER_ARM_RADIUS = 0.038
FOREARM_RADIUS = 0.032  # arms average ~0.035 H
ARM_ABDUCTION_RAD = math.radians(6.0)  # arms hang slightly outwards, clear of the torso
LEG_LENGTH = THIGH_LENGTH + SHIN_LENGTH
ANKLE_CLEARANCE = SHIN_RADIUS  # the ankle sits one shin radius above the ground

# --- Walker gait ------------------------------------------------------------------------------
GAIT_HZ_RANGE = (1.5, 2.5)  # steps per second (cadence), §4.1; each leg cycles at half of it
STRIDE_LENGTH_RANGE = (0.75, 0.85)  # H per stride (two steps); grows with cadence
WALKER_STANCE_DUTY = 0.6  # fraction of a leg's cycle with the foot on the ground
MAX_HIP_AMPLITUDE_RAD = math.radians(32.0)  # cap of the no-slip hip flexion/extension
KNEE_PEAK_RANGE_RAD = (math.radians(50.0), math.radians(65.0))  # peak swing knee flexion
KNEE_STANCE_FRACTION = 0.15  # loading-response knee flexion, as a fraction of the peak
ARM_SWING_RANGE_RAD = (math.radians(12.0), math.radians(25.0))  # peak shoulder swing
ELBOW_BASE_FLEXION_RAD = math.radians(12.0)
ELBOW_SWING_FLEXION_RAD = math.radians(15.0)  # extra elbow flexion with the arm forward
WALK_LEAN_RAD = math.radians(4.0)  # forward trunk lean while walking
STANDING_SWAY = 0.008  # H, lateral sway of the head of a standing person
STANDING_SWAY_HZ = (0.2, 0.4)
MESH_SHADING_RANGE = (0.3, 1.5)  # local plate std, lit minus unlit side of a mesh walker

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

# --- Quadruped, units of withers height W ----------------------------------------------------
ANIMAL_WITHERS_RANGE = (0.3, 0.85)  # x the person height: dog (0.5 m) to cow (1.4 m)
ANIMAL_STRIDE_HZ = (1.8, 0.9)  # stride frequency of the smallest and of the largest animal
ANIMAL_STRIDE_LENGTH_RANGE = (1.0, 1.3)  # W per stride
ANIMAL_STANCE_DUTY = 0.65
ANIMAL_LEG_PHASES = {"left_hind": 0.0, "left_fore": 0.25, "right_hind": 0.5, "right_fore": 0.75}
ANIMAL_BODY_LENGTH_RANGE = (1.0, 1.4)  # W, hip joint to shoulder joint
ANIMAL_TRUNK_RADIUS_RANGE = (0.16, 0.24)  # W, slim dog to stocky cow
ANIMAL_HIP_Z = 0.75
ANIMAL_LEG_HALF_SPACING = 0.12
ANIMAL_UPPER_LEG_RADIUS = 0.07
ANIMAL_LOWER_LEG_RADIUS = 0.045
ANIMAL_HOCK_ANGLE_RAD = math.radians(18.0)  # static zig-zag of the hind legs
ANIMAL_KNEE_PEAK_RAD = math.radians(50.0)
ANIMAL_SPINE_RISE = 0.05  # spine above the leg joints
ANIMAL_SKULL_OFFSET = np.array([0.32, 0.0, 0.28])  # head centre from the withers
ANIMAL_HEAD_RADIUS = 0.11
ANIMAL_NECK_RADIUS = 0.09
ANIMAL_MUZZLE_OFFSET = np.array([0.2, 0.0, -0.1])  # muzzle tip from the head centre
ANIMAL_MUZZLE_RADIUS = 0.06
ANIMAL_HEAD_NOD = 0.02  # vertical head bob, twice per stride
ANIMAL_TAIL_ROOT_OFFSET = np.array([-0.1, 0.0, 0.05])  # from the rump
ANIMAL_TAIL_OFFSET = np.array([-0.35, 0.0, -0.3])  # tail tip from its root
ANIMAL_TAIL_RADIUS = 0.035
ANIMAL_TAIL_SWISH = 0.06  # lateral tail swing, once per stride

# --- Rigid movers -------------------------------------------------------------------------------
VEHICLE_HEIGHT_RANGE = (0.8, 1.0)  # x the person height (car 1.4 m to van 1.75 m)
VEHICLE_LENGTH_RANGE = (2.5, 3.0)  # x the vehicle height: 2-3 person heights long
VEHICLE_WIDTH_RANGE = (1.1, 1.25)  # x the vehicle height
VEHICLE_SPEED_RANGE = (1.1, 8.9)  # vehicle heights / s: 1-8 plate px/frame at 30-px persons
BICYCLE_SPEED_RANGE = (1.7, 4.0)  # rider heights / s: 3-7 m/s
BICYCLE_RIDER_PROBABILITY = 0.8
VEHICLE_TURN_RANGE_RAD = (math.radians(10.0), math.radians(60.0))
VEHICLE_TURN_FRAMES = (20, 60)

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


# ============================================================================================
# Walker
# ============================================================================================


@dataclass(eq=False, kw_only=True)
class Walker(Actor):
    """An articulated walking (or standing) person, kind ``"person"``.

    ``gait_hz`` is the *step* frequency (cadence, 1.5-2.5 steps/s): each leg completes one
    cycle in two steps, so a leg oscillates at ``gait_hz / 2`` and anything symmetric in the
    two legs (leg spread, lower-body width, vertical bob) at ``gait_hz``. Walking speed is
    ``stride_length * gait_hz / 2`` heights per second (a stride is two steps), and the hip
    amplitude follows from the stride so that the stance foot does not slide.

    Attributes (beyond :class:`Actor`):
        gait_hz: steps per second.
        stride_length: heights travelled per stride (two steps).
        gait_phase: 0..1 phase of the right leg's cycle (0 = right heel strike).
        knee_peak_rad: peak knee flexion in swing.
        arm_swing_rad: peak shoulder flexion/extension of the arm swing.
        speed_hps: left negative (the default), set to ``stride_length * gait_hz / 2``.
        sway_hz, sway_phase: the slow lateral sway of a standing person.

    Example:
        >>> walker = Walker(identity=1, ground_position=np.array([320.0, 256.0]),
        ...                 height_px=60.0, pitch_rad=math.radians(45))
        >>> round(walker.speed_hps, 2)
        0.8
    """

    kind: ClassVar[str] = "person"
    PARTS: ClassVar[tuple[str, ...]] = ("skin", "top", "bottom")

    gait_hz: float = 2.0
    stride_length: float = 0.8
    speed_hps: float = -1.0  # < 0: derived, stride_length * gait_hz / 2
    gait_phase: float = 0.0
    knee_peak_rad: float = math.radians(60.0)
    arm_swing_rad: float = math.radians(22.0)
    sway_hz: float = 0.3
    sway_phase: float = 0.0
    part_contrast: dict[str, float] = field(
        default_factory=lambda: {"skin": 1.0, "top": -2.0, "bottom": -1.5}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.speed_hps < 0:
            self.speed_hps = self.stride_length * self.gait_hz / 2

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        position: np.ndarray,
        height_px: float,
        pitch_rad: float,
        identity: int,
        **overrides,
    ) -> Walker:
        """A walker with random gait, heading, behaviour, drift, clothing and sun.

        Args:
            rng: random generator (the actor is a deterministic function of its state).
            position: (2,) plate px of the ground point under the person.
            height_px: standing height in plate px.
            pitch_rad: camera pitch below the horizontal.
            identity: unique id within the clip.
            **overrides: any attribute, e.g. ``sun=clip_sun`` or ``behaviour="standing"``.
        """
        gait_hz = float(rng.uniform(*GAIT_HZ_RANGE))
        cadence = (gait_hz - GAIT_HZ_RANGE[0]) / (GAIT_HZ_RANGE[1] - GAIT_HZ_RANGE[0])
        stride = STRIDE_LENGTH_RANGE[0] + cadence * np.diff(STRIDE_LENGTH_RANGE)[0]
        stride = float(np.clip(stride + rng.normal(0.0, 0.02), *STRIDE_LENGTH_RANGE))
        standing = rng.random() < STANDING_PROBABILITY
        params = dict(
            identity=identity,
            ground_position=position,
            height_px=float(height_px),
            pitch_rad=float(pitch_rad),
            heading_rad=float(rng.uniform(0.0, 2 * math.pi)),
            gait_hz=gait_hz,
            stride_length=stride,
            gait_phase=float(rng.random()),
            knee_peak_rad=float(rng.uniform(*KNEE_PEAK_RANGE_RAD)),
            arm_swing_rad=float(rng.uniform(*ARM_SWING_RANGE_RAD)),
            sway_hz=float(rng.uniform(*STANDING_SWAY_HZ)),
            sway_phase=float(rng.random()),
            scale_rate=float(rng.uniform(-MAX_SCALE_RATE, MAX_SCALE_RATE)),
            behaviour="standing" if standing else "walking",
            schedule=sample_schedule(rng),
            part_contrast=_sample_contrast(rng, cls.PARTS),
            sun=Sunlight.random(rng),
        )
        params.update(overrides)
        return cls(**params)

    @property
    def hip_amplitude_rad(self) -> float:
        """Hip flexion/extension amplitude at which the stance foot does not slide.

        In stance (a ``WALKER_STANCE_DUTY`` share of the stride) the body travels
        ``stride_length * duty``, which the straight stance leg sweeps as ``2 L sin(A)``.
        """
        reach = self.stride_length * WALKER_STANCE_DUTY / (2 * LEG_LENGTH)
        return min(math.asin(min(reach, 1.0)), MAX_HIP_AMPLITUDE_RAD)

    def _advance_articulation(self) -> None:
        self.gait_phase = (self.gait_phase + self.gait_hz / 2 / FPS) % 1.0

    def joints(self) -> dict[str, np.ndarray]:
        """Joint positions of the current pose in the body frame (x forward, y left, z up; H).

        Keys: ``head``, ``neck``, ``pelvis``, and per side (``left_`` / ``right_``)
        ``shoulder``, ``elbow``, ``wrist``, ``hip``, ``knee``, ``ankle``.
        """
        activity = self.activity()
        amplitude = self.hip_amplitude_rad
        legs = {}
        for side, offset in (("right", 0.0), ("left", 0.5)):
            phase = (self.gait_phase + offset) % 1.0
            hip = activity * _hip_angle(phase, amplitude, WALKER_STANCE_DUTY)
            knee = activity * _knee_flexion(phase, self.knee_peak_rad, WALKER_STANCE_DUTY)
            legs[side] = (hip, knee)
        # The pelvis rides on the lower (stance) leg: the walking bob comes out of the legs.
        extents = [
            THIGH_LENGTH * math.cos(h) + SHIN_LENGTH * math.cos(h - k) for h, k in legs.values()
        ]
        hip_z = ANKLE_CLEARANCE + max(extents)
        drop = hip_z - HIP_Z
        lean = WALK_LEAN_RAD * activity
        sway = 0.0
        if self.behaviour == "standing":
            time = self.age_frames / FPS
            sway = STANDING_SWAY * math.sin(2 * math.pi * (self.sway_hz * time + self.sway_phase))

        def upper(x: float, y: float, z: float) -> np.ndarray:
            """A point of the upper body, leaning forward and swaying about the hips."""
            rise = z - hip_z
            return np.array(
                [x + rise * math.sin(lean), y + sway * rise / (HEAD_CENTRE_Z - HIP_Z), z]
            )

        joints = {
            "pelvis": np.array([0.0, 0.0, hip_z]),
            "neck": upper(0.0, 0.0, SHOULDER_Z + drop),
            "head": upper(0.0, 0.0, HEAD_CENTRE_Z + drop),
        }
        for side, sign in (("left", 1.0), ("right", -1.0)):
            hip_angle, knee = legs[side]
            hip = np.array([0.0, sign * HIP_HALF_WIDTH, hip_z])
            knee_point = hip + THIGH_LENGTH * np.array(
                [math.sin(hip_angle), 0.0, -math.cos(hip_angle)]
            )
            shin_angle = hip_angle - knee
            ankle = knee_point + SHIN_LENGTH * np.array(
                [math.sin(shin_angle), 0.0, -math.cos(shin_angle)]
            )
            # Counter-phase arm swing: an arm swings with the opposite leg.
            other_hip, _ = legs["right" if side == "left" else "left"]
            forward = other_hip / amplitude if amplitude > 0 else 0.0  # -1 (back) .. 1 (front)
            swing = self.arm_swing_rad * forward
            elbow_flexion = ELBOW_BASE_FLEXION_RAD + ELBOW_SWING_FLEXION_RAD * max(forward, 0.0)
            shoulder = upper(0.0, sign * SHOULDER_HALF_WIDTH, SHOULDER_Z + drop)
            out = sign * math.sin(ARM_ABDUCTION_RAD)
            elbow = shoulder + UPPER_ARM_LENGTH * _unit(math.sin(swing), out, -math.cos(swing))
            forearm = swing + elbow_flexion
            wrist = elbow + FOREARM_LENGTH * _unit(math.sin(forearm), out, -math.cos(forearm))
            joints.update(
                {
                    f"{side}_hip": hip,
                    f"{side}_knee": knee_point,
                    f"{side}_ankle": ankle,
                    f"{side}_shoulder": shoulder,
                    f"{side}_elbow": elbow,
                    f"{side}_wrist": wrist,
                }
            )
        return joints

    def _geometry(self) -> _Geometry:
        j = self.joints()
        skin, top, bottom = 1, 2, 3
        girdle = np.array([0.0, SHOULDER_GIRDLE_HALF_WIDTH, 0.0])
        items = [
            (j["left_hip"], j["right_hip"], PELVIS_RADIUS, bottom),
            (
                j["pelvis"] + (0.0, 0.0, TORSO_BASE_RISE),
                j["neck"] - (0, 0, SHOULDER_Z - TORSO_TOP_Z),
                TORSO_RADIUS,
                top,
            ),
            (j["neck"] + girdle, j["neck"] - girdle, SHOULDER_GIRDLE_RADIUS, top),
            (j["neck"] + (0.0, 0.0, NECK_BASE_RISE), j["head"], NECK_RADIUS, skin),
            (j["head"], j["head"], HEAD_RADIUS, skin),
        ]
        for side in ("left", "right"):
            items += [
                (j[f"{side}_hip"], j[f"{side}_knee"], THIGH_RADIUS, bottom),
                (j[f"{side}_knee"], j[f"{side}_ankle"], SHIN_RADIUS, bottom),
                (j[f"{side}_shoulder"], j[f"{side}_elbow"], UPPER_ARM_RADIUS, top),
                (j[f"{side}_elbow"], j[f"{side}_wrist"], FOREARM_RADIUS, top),
            ]
        return _Geometry(*_capsules(items))


@dataclass(eq=False, kw_only=True)
class MeshWalker(Walker):
    """A :class:`Walker` drawn as a posed MakeHuman body from :mod:`emts.synth.atlas`.

    Same gait timing, behaviour, drift, clothing and sun as the procedural walker; the body is
    a 615-vertex mesh (the atlas's ``body``, posed at ``gait_phase`` and blended towards its
    standing pose as ``activity`` drops) instead of capsules, so silhouettes, limb widths and
    self-occlusion are a real body's. Faces are shaded by the sun (Lambert, ``shading`` local
    plate std units between the lit and the unlit side; from the sky above when overcast), and
    the clothing covers the forearms unless ``short_sleeves`` and the shins unless ``shorts``.
    The gait's amplitude is the atlas body's own (its stride, knee and arm swing).
    """

    body: int = 0
    shading: float = 0.0
    short_sleeves: bool = False
    shorts: bool = False

    SHADES: ClassVar[int] = 4  # shading levels per part

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        position: np.ndarray,
        height_px: float,
        pitch_rad: float,
        identity: int,
        **overrides,
    ) -> MeshWalker:
        """A random mesh walker: :meth:`Walker.random` plus body, shading and garments."""
        walker = super().random(rng, position, height_px, pitch_rad, identity, **overrides)
        sampled = dict(
            body=int(rng.integers(load_atlas().bodies)),
            shading=float(rng.uniform(*MESH_SHADING_RANGE)),
            short_sleeves=bool(rng.random() < 0.4),
            shorts=bool(rng.random() < 0.2),
        )
        for name, value in sampled.items():
            if name not in overrides:
                setattr(walker, name, value)
        return walker

    def _lut(self) -> np.ndarray:
        base = super()._lut()[1:]
        levels = (np.arange(self.SHADES, dtype=np.float32) + 0.5) / self.SHADES - 0.5
        shaded = base[:, None] + np.float32(self.shading) * levels[None, :]
        return np.concatenate([[0.0], shaded.ravel()]).astype(np.float32)

    def _geometry(self) -> _Geometry:
        atlas = load_atlas()
        vertices = atlas.pose(self.body, self.gait_phase, self.activity())
        if self.behaviour == "standing":
            time = self.age_frames / FPS
            sway = STANDING_SWAY * math.sin(2 * math.pi * (self.sway_hz * time + self.sway_phase))
            rise = np.clip((vertices[:, 2] - HIP_Z) / (HEAD_CENTRE_Z - HIP_Z), 0.0, None)
            vertices = vertices.copy()
            vertices[:, 1] += sway * rise
        parts = _MESH_PARTS[self.short_sleeves, self.shorts][atlas.face_region]
        # Lambert shading in the body frame: the sun (or, overcast, the sky) turned by -heading.
        if self.sun.strength > 0:
            x, y, z = self.sun.direction
            c, s = math.cos(self.heading_rad), math.sin(self.heading_rad)
            light = np.array([c * x + s * y, -s * x + c * y, z])  # world -> body frame
        else:
            light = np.array([0.0, 0.0, 1.0])
        a, b, c = (vertices[atlas.faces[:, k]] for k in range(3))
        normals = np.cross(b - a, c - a)
        normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-9)
        lambert = np.clip(normals @ light, 0.0, 1.0)
        shade = np.minimum((lambert * self.SHADES).astype(np.int64), self.SHADES - 1)
        labels = 1 + (parts - 1) * self.SHADES + shade
        empty = np.zeros((0, 3))
        return _Geometry(
            empty, empty, np.zeros(0), np.zeros(0, np.int64), mesh=(vertices, atlas.faces, labels)
        )


def _mesh_parts() -> dict[tuple[bool, bool], np.ndarray]:
    """Atlas region -> Walker part (1 skin, 2 top, 3 bottom) per (short sleeves, shorts)."""
    table = {}
    for sleeves in (False, True):
        for shorts in (False, True):
            part = {
                "head": 1,
                "hand": 1,
                "torso": 2,
                "upper_arm": 2,
                "forearm": 1 if sleeves else 2,
                "pelvis": 3,
                "thigh": 3,
                "shin": 1 if shorts else 3,
                "foot": 3,
            }
            table[sleeves, shorts] = np.array([part[r] for r in REGIONS], np.int64)
    return table


_MESH_PARTS = _mesh_parts()


# ============================================================================================
# Quadruped
# ============================================================================================


@dataclass(eq=False, kw_only=True)
class Quadruped(Actor):
    """A four-legged walker (dog to cow), kind ``"animal"``: an unlabeled hard negative.

    Body units are the withers height ``height_px``. The legs walk a lateral-sequence walk
    (left hind, left fore, right hind, right fore a quarter cycle apart) at ``stride_hz``.

    Attributes (beyond :class:`Actor`):
        stride_hz: leg cycles per second.
        stride_length: withers heights travelled per stride.
        gait_phase: 0..1 phase of the left hind leg.
        body_length: hip joint to shoulder joint, in withers heights.
        trunk_radius: in withers heights.
    """

    kind: ClassVar[str] = "animal"
    PARTS: ClassVar[tuple[str, ...]] = ("coat", "head")

    stride_hz: float = 1.4
    stride_length: float = 1.1
    speed_hps: float = -1.0  # < 0: derived, stride_length * stride_hz
    gait_phase: float = 0.0
    body_length: float = 1.2
    trunk_radius: float = 0.2
    part_contrast: dict[str, float] = field(default_factory=lambda: {"coat": -1.5, "head": -1.2})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.speed_hps < 0:
            self.speed_hps = self.stride_length * self.stride_hz

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        position: np.ndarray,
        height_px: float,
        pitch_rad: float,
        identity: int,
        **overrides,
    ) -> Quadruped:
        """A random animal; ``height_px`` is the height of an adult *person* at that spot."""
        size = float(rng.random())  # 0 = dog, 1 = cow
        withers = ANIMAL_WITHERS_RANGE[0] + size * np.diff(ANIMAL_WITHERS_RANGE)[0]
        stride_hz = ANIMAL_STRIDE_HZ[0] + size * (ANIMAL_STRIDE_HZ[1] - ANIMAL_STRIDE_HZ[0])
        coat = float(rng.choice([-1.0, 1.0]) * rng.uniform(*CONTRAST_RANGE))
        params = dict(
            identity=identity,
            ground_position=position,
            height_px=float(height_px * withers),
            pitch_rad=float(pitch_rad),
            heading_rad=float(rng.uniform(0.0, 2 * math.pi)),
            stride_hz=float(stride_hz * rng.uniform(0.9, 1.1)),
            stride_length=float(rng.uniform(*ANIMAL_STRIDE_LENGTH_RANGE)),
            gait_phase=float(rng.random()),
            body_length=float(rng.uniform(*ANIMAL_BODY_LENGTH_RANGE)),
            trunk_radius=float(
                ANIMAL_TRUNK_RADIUS_RANGE[0] + size * np.diff(ANIMAL_TRUNK_RADIUS_RANGE)[0]
            ),
            scale_rate=float(rng.uniform(-MAX_SCALE_RATE, MAX_SCALE_RATE)),
            behaviour="standing" if rng.random() < STANDING_PROBABILITY else "walking",
            schedule=sample_schedule(rng),
            part_contrast={"coat": coat, "head": coat + float(rng.normal(0.0, 0.5))},
            sun=Sunlight.random(rng),
        )
        params.update(overrides)
        return cls(**params)

    def _advance_articulation(self) -> None:
        self.gait_phase = (self.gait_phase + self.stride_hz / FPS) % 1.0

    def _geometry(self) -> _Geometry:
        activity = self.activity()
        leg_length = ANIMAL_HIP_Z - ANKLE_CLEARANCE
        reach = self.stride_length * ANIMAL_STANCE_DUTY / (2 * leg_length)
        amplitude = min(math.asin(min(reach, 1.0)), MAX_HIP_AMPLITUDE_RAD)
        half = 0.5 * self.body_length
        coat, head = 1, 2
        legs = []
        heights = {"hind": [], "fore": []}
        for name, offset in ANIMAL_LEG_PHASES.items():
            phase = (self.gait_phase + offset) % 1.0
            swing = activity * _hip_angle(phase, amplitude, ANIMAL_STANCE_DUTY)
            knee = activity * _knee_flexion(phase, ANIMAL_KNEE_PEAK_RAD, ANIMAL_STANCE_DUTY)
            hock = ANIMAL_HOCK_ANGLE_RAD if name.endswith("hind") else 0.0
            upper_angle, lower_angle = swing + hock, swing - knee - hock
            upper = 0.5 * leg_length * _unit(math.sin(upper_angle), 0.0, -math.cos(upper_angle))
            lower = 0.5 * leg_length * _unit(math.sin(lower_angle), 0.0, -math.cos(lower_angle))
            end = name.split("_")[1]
            heights[end].append(-(upper + lower)[2])
            legs.append((name, end, upper, lower))
        hip_z = {end: ANKLE_CLEARANCE + max(extents) for end, extents in heights.items()}
        anchor_x = {"hind": -half, "fore": half}
        items = []
        for name, end, upper, lower in legs:
            side = ANIMAL_LEG_HALF_SPACING if name.startswith("left") else -ANIMAL_LEG_HALF_SPACING
            joint = np.array([anchor_x[end], side, hip_z[end]])
            items += [
                (joint, joint + upper, ANIMAL_UPPER_LEG_RADIUS, coat),
                (joint + upper, joint + upper + lower, ANIMAL_LOWER_LEG_RADIUS, coat),
            ]
        rump = np.array([-half, 0.0, hip_z["hind"] + ANIMAL_SPINE_RISE])
        withers = np.array([half, 0.0, hip_z["fore"] + ANIMAL_SPINE_RISE])
        nod = ANIMAL_HEAD_NOD * activity * math.sin(4 * math.pi * self.gait_phase)
        skull = withers + ANIMAL_SKULL_OFFSET + (0.0, 0.0, nod)
        swish = ANIMAL_TAIL_SWISH * activity * math.sin(2 * math.pi * self.gait_phase)
        tail_root = rump + ANIMAL_TAIL_ROOT_OFFSET
        items += [
            (rump, withers, self.trunk_radius, coat),
            (withers + (0.0, 0.0, ANIMAL_SPINE_RISE), skull, ANIMAL_NECK_RADIUS, coat),
            (skull, skull, ANIMAL_HEAD_RADIUS, head),
            (skull, skull + ANIMAL_MUZZLE_OFFSET, ANIMAL_MUZZLE_RADIUS, head),
            (
                tail_root,
                tail_root + ANIMAL_TAIL_OFFSET + (0.0, swish, 0.0),
                ANIMAL_TAIL_RADIUS,
                coat,
            ),
        ]
        return _Geometry(*_capsules(items))


# ============================================================================================
# Rigid movers
# ============================================================================================


@dataclass(eq=False, kw_only=True)
class RigidMover(Actor):
    """A rigid vehicle or bicycle that translates and steers, kind ``"vehicle"``/``"bicycle"``.

    Vehicles are a rounded box (body) with a tapered cabin (dark glass) and a roof, on four
    dark wheels; body units are the roof height. Bicycles are a wire frame with two wheels and,
    usually, a rigid rider; body units are the rider's standing height.

    Attributes (beyond :class:`Actor`):
        mover_kind: ``"vehicle"`` or ``"bicycle"``.
        length, width: footprint in body units (vehicles).
        has_rider: a bicycle carries a (rigid) rider.
    """

    PARTS: ClassVar[tuple[str, ...]] = ("body", "glass", "tyre", "skin", "top", "bottom")

    mover_kind: Literal["vehicle", "bicycle"] = "vehicle"
    length: float = 2.7
    width: float = 1.15
    has_rider: bool = True
    speed_hps: float = 3.0
    part_contrast: dict[str, float] = field(
        default_factory=lambda: {
            "body": 2.0,
            "glass": -1.5,
            "tyre": -2.5,
            "skin": 1.0,
            "top": -1.5,
            "bottom": -1.0,
        }
    )

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.mover_kind

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        position: np.ndarray,
        height_px: float,
        pitch_rad: float,
        identity: int,
        mover_kind: Literal["vehicle", "bicycle"] = "vehicle",
        **overrides,
    ) -> RigidMover:
        """A random vehicle or bicycle; ``height_px`` is the height of an adult person there."""
        is_vehicle = mover_kind == "vehicle"
        body = float(rng.normal(0.0, 1.8))
        contrast = {
            "body": body,
            "glass": min(body, 0.0) - float(rng.uniform(0.8, 2.0)),
            "tyre": -float(rng.uniform(1.5, 3.0)),
            **_sample_contrast(rng, ("skin", "top", "bottom")),
        }
        low, high = VEHICLE_SPEED_RANGE if is_vehicle else BICYCLE_SPEED_RANGE
        height = height_px * rng.uniform(*VEHICLE_HEIGHT_RANGE) if is_vehicle else height_px
        params = dict(
            identity=identity,
            ground_position=position,
            height_px=float(height),
            pitch_rad=float(pitch_rad),
            heading_rad=float(rng.uniform(0.0, 2 * math.pi)),
            speed_hps=float(math.exp(rng.uniform(math.log(low), math.log(high)))),
            scale_rate=float(rng.uniform(-MAX_SCALE_RATE, MAX_SCALE_RATE)),
            mover_kind=mover_kind,
            length=float(rng.uniform(*VEHICLE_LENGTH_RANGE)),
            width=float(rng.uniform(*VEHICLE_WIDTH_RANGE)),
            has_rider=bool(rng.random() < BICYCLE_RIDER_PROBABILITY),
            behaviour="standing" if rng.random() < STANDING_PROBABILITY else "walking",
            schedule=sample_schedule(rng, VEHICLE_TURN_RANGE_RAD, VEHICLE_TURN_FRAMES),
            part_contrast=contrast,
            sun=Sunlight.random(rng),
        )
        params.update(overrides)
        return cls(**params)

    def _geometry(self) -> _Geometry:
        return self._vehicle() if self.mover_kind == "vehicle" else self._bicycle()

    def _vehicle(self) -> _Geometry:
        body, glass, tyre = 1, 2, 3
        half_length, half_width = 0.5 * self.length, 0.5 * self.width
        wheel_x, wheel_y, wheel_radius = 0.32 * self.length, 0.4 * self.width, 0.2
        items = [
            (
                (sx * wheel_x, sy * wheel_y, wheel_radius),
                (sx * wheel_x, sy * half_width, wheel_radius),
                wheel_radius,
                tyre,
            )
            for sx in (-1.0, 1.0)
            for sy in (-1.0, 1.0)
        ]
        corner = 0.15
        chassis = np.concatenate(
            [_rounded_rect(0.0, half_length, half_width, corner, z) for z in (0.18, 0.55)]
        )
        cabin = np.concatenate(
            [
                _rounded_rect(
                    -0.05 * self.length, 0.3 * self.length, 0.46 * self.width, corner, 0.55
                ),
                _rounded_rect(
                    -0.1 * self.length, 0.19 * self.length, 0.39 * self.width, corner, 1.0
                ),
            ]
        )
        roof = _rounded_rect(-0.1 * self.length, 0.17 * self.length, 0.36 * self.width, corner, 1.0)
        return _Geometry(*_capsules(items), hulls=((chassis, body), (cabin, glass), (roof, body)))

    def _bicycle(self) -> _Geometry:
        frame, tyre, skin, top, bottom = 1, 3, 4, 5, 6
        wheel_radius, hub_x, tube = 0.19, 0.31, 0.016
        ring = np.linspace(0.0, 2 * math.pi, 11)
        items = []
        for x in (-hub_x, hub_x):
            points = np.stack(
                [x + wheel_radius * np.cos(ring), 0 * ring, wheel_radius * (1 + np.sin(ring))], 1
            )
            items += [(a, b, tube, tyre) for a, b in zip(points[:-1], points[1:], strict=True)]
        rear, front = np.array([-hub_x, 0.0, wheel_radius]), np.array([hub_x, 0.0, wheel_radius])
        crank, seat, head = (
            np.array([-0.02, 0.0, 0.17]),
            np.array([-0.1, 0.0, 0.5]),
            np.array([0.22, 0.0, 0.52]),
        )
        items += [
            (rear, crank, tube, frame),
            (rear, seat, tube, frame),
            (crank, seat, tube, frame),
            (crank, head, tube, frame),
            (seat, head, tube, frame),
            (head, front, tube, frame),
            (head + (0.0, 0.12, 0.06), head + (0.0, -0.12, 0.06), tube, frame),
        ]
        if self.has_rider:
            shoulders = np.array([0.1, 0.0, 0.88])
            items += [
                (seat + (0.0, 0.0, 0.05), shoulders, TORSO_RADIUS, top),
                (shoulders + (0.06, 0.0, 0.1), shoulders + (0.06, 0.0, 0.1), HEAD_RADIUS, skin),
            ]
            for sign in (1.0, -1.0):
                hip, knee = seat + (0.0, sign * 0.08, 0.05), np.array([0.1, sign * 0.1, 0.42])
                foot = np.array([-0.02 + sign * 0.08, sign * 0.1, 0.17 - sign * 0.06])
                items += [
                    (hip, knee, THIGH_RADIUS, bottom),
                    (knee, foot, SHIN_RADIUS, bottom),
                    (
                        shoulders + (0.0, sign * 0.12, 0.0),
                        head + (0.0, sign * 0.12, 0.06),
                        UPPER_ARM_RADIUS,
                        top,
                    ),
                ]
        return _Geometry(*_capsules(items))


# ============================================================================================
# Construction helpers
# ============================================================================================

ActorKind = Literal["person", "mesh-person", "animal", "vehicle", "bicycle"]


def random_actor(
    rng: np.random.Generator,
    kind: ActorKind,
    position: np.ndarray,
    height_px: float,
    pitch_rad: float,
    identity: int,
    **overrides,
) -> Actor:
    """A random actor of ``kind`` standing at ``position``.

    Args:
        rng: random generator.
        kind: ``"person"`` (procedural), ``"mesh-person"`` (a :class:`MeshWalker`; kind
            ``"person"`` too), ``"animal"``, ``"vehicle"`` or ``"bicycle"``.
        position: (2,) plate px on the ground.
        height_px: plate px height of an adult person at that spot; animals and vehicles are
            sized relative to it.
        pitch_rad: camera pitch below the horizontal.
        identity: unique id within the clip.
        **overrides: attributes to set instead of sampling (e.g. ``sun=clip_sun``).
    """
    if kind == "person" or kind == "mesh-person":
        walker = MeshWalker if kind == "mesh-person" else Walker
        return walker.random(rng, position, height_px, pitch_rad, identity, **overrides)
    if kind == "animal":
        return Quadruped.random(rng, position, height_px, pitch_rad, identity, **overrides)
    if kind in ("vehicle", "bicycle"):
        return RigidMover.random(
            rng, position, height_px, pitch_rad, identity, mover_kind=kind, **overrides
        )
    raise ValueError(f"unknown actor kind {kind!r}")


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


# ============================================================================================
# Kinematics and rasterization
# ============================================================================================


def _smoothstep(s: float) -> float:
    """Cosine ease 0 -> 1 over s in [0, 1] (clamped outside)."""
    s = min(max(s, 0.0), 1.0)
    return 0.5 - 0.5 * math.cos(math.pi * s)


def _unit(x: float, y: float, z: float) -> np.ndarray:
    vector = np.array([x, y, z])
    return vector / np.linalg.norm(vector)


def _hip_angle(phase: float, amplitude: float, duty: float) -> float:
    """Hip flexion (+ forward) over a leg cycle; phase 0 = heel strike.

    Stance (phase < duty): the foot, planted, moves backwards relative to the hip at constant
    speed, ``sin(angle)`` falling linearly from ``sin(A)`` to ``-sin(A)``. Swing: the thigh
    leaves toe-off fast and eases into heel strike at ``+A`` (a quarter sine).
    """
    if phase < duty:
        return math.asin(math.sin(amplitude) * (1.0 - 2.0 * phase / duty))
    swing = (phase - duty) / (1.0 - duty)
    return -amplitude + 2.0 * amplitude * math.sin(0.5 * math.pi * swing)


def _knee_flexion(phase: float, peak: float, duty: float) -> float:
    """Knee flexion over a leg cycle: a small loading bump, then the swing peak (~73 %)."""
    preswing = duty - 0.1
    if phase >= preswing:
        return peak * math.sin(math.pi * (phase - preswing) / (1.0 - preswing)) ** 2
    if phase < 0.3:
        return KNEE_STANCE_FRACTION * peak * math.sin(math.pi * phase / 0.3) ** 2
    return 0.0


def _rounded_rect(
    centre_x: float, half_length: float, half_width: float, corner: float, z: float
) -> np.ndarray:
    """Outline points (16, 3) of a rounded rectangle at height ``z`` in the body frame."""
    corner = min(corner, half_length, half_width)
    quarter = np.linspace(0.0, math.pi / 2, 4)
    points = []
    for index, (sx, sy) in enumerate(((1, 1), (-1, 1), (-1, -1), (1, -1))):
        angles = quarter + index * math.pi / 2
        cx, cy = centre_x + sx * (half_length - corner), sy * (half_width - corner)
        points.append(np.stack([cx + corner * np.cos(angles), cy + corner * np.sin(angles)], 1))
    outline = np.concatenate(points)
    return np.concatenate([outline, np.full((len(outline), 1), z)], 1)


_ARC = np.linspace(-math.pi / 2, math.pi / 2, _ARC_POINTS)


def _capsule_polygons(starts: np.ndarray, ends: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Convex outlines (m, 2 * _ARC_POINTS, 2) of 2-D capsules; a sphere is a zero-length one."""
    direction = ends - starts
    heading = np.arctan2(direction[:, 1], direction[:, 0])[:, None]
    angles = heading + _ARC[None, :]  # half circle around the end, facing forward
    ring = np.stack([np.cos(angles), np.sin(angles)], -1) * radii[:, None, None]
    return np.concatenate([ends[:, None] + ring, starts[:, None] - ring], 1)


def _rasterize(
    polygons: list[np.ndarray],
    parts: list[int],
    frame_size: tuple[int, int],
    feather_sigma: float,
    lut: np.ndarray | None,
    antialias: bool,
    transform: tuple[np.ndarray, np.ndarray],
) -> tuple[int, int, np.ndarray, np.ndarray | None] | None:
    """Fill convex frame-px polygons, in order, into supersampled canvases.

    Coverage is filled anti-aliased (so edges move by fractions of a sub-pixel, not in
    sub-pixel steps), or, with ``antialias`` False (hundreds of triangles: half the fills),
    taken from the binary label fill; the part labels are filled into a second, binary
    canvas from which the per-pixel value of ``lut`` (label -> value) is unmixed.

    ``transform`` = ``(linear, origin)`` maps the polygons' points to frame px first
    (``p @ linear.T + origin``).

    Returns:
        ``(x0, y0, alpha, contrast)``: the integer frame position of the patch, the feathered
        coverage and the unmixed ``lut`` values (None without a ``lut``); None if the patch
        misses the frame.
    """
    points = np.concatenate(polygons) @ transform[0].T + transform[1]
    low, high = points.min(axis=0), points.max(axis=0)
    x0, y0 = (np.floor(low) - _PATCH_MARGIN).astype(int)
    x1, y1 = (np.ceil(high) + _PATCH_MARGIN).astype(int)
    width, height = frame_size
    if x1 < 0 or y1 < 0 or x0 >= width or y0 >= height:
        return None
    patch_w, patch_h = x1 - x0 + 1, y1 - y0 + 1
    ss = SUPERSAMPLE if max(patch_w, patch_h) <= LARGE_ACTOR_PX else max(1, SUPERSAMPLE // 2)
    coverage = np.zeros((patch_h * ss, patch_w * ss), np.uint8)
    labels = np.zeros_like(coverage) if lut is not None else None
    # Frame pixel i (centre at i) holds sub-pixels centred at i - 1/2 + (k + 1/2) / ss.
    fixed = float(ss * (1 << _SUBPIXEL_BITS))
    offset = np.array([x0, y0], float) - 0.5 + 0.5 / ss
    fixed_points = np.round((points - offset) * fixed).astype(np.int32)
    bounds = np.cumsum([0, *(len(polygon) for polygon in polygons)]).tolist()
    pieces = [fixed_points[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    if antialias:
        for vertices, part in zip(pieces, parts, strict=True):
            cv2.fillConvexPoly(coverage, vertices, 255, cv2.LINE_AA, _SUBPIXEL_BITS)
            if labels is not None:
                cv2.fillConvexPoly(labels, vertices, int(part), cv2.LINE_8, _SUBPIXEL_BITS)
    else:  # many small polygons (a mesh): coverage is where a label was drawn
        canvas = labels if labels is not None else coverage
        for vertices, part in zip(pieces, parts, strict=True):
            cv2.fillConvexPoly(canvas, vertices, int(part), cv2.LINE_8, _SUBPIXEL_BITS)
        coverage = np.where(canvas > 0, np.uint8(255), np.uint8(0))
    size = (patch_w, patch_h)
    kernel = (3, 3) if feather_sigma <= 0.6 else (5, 5)
    alpha = cv2.resize(coverage, size, interpolation=cv2.INTER_AREA).astype(np.float32) / 255
    alpha = np.clip(cv2.GaussianBlur(alpha, kernel, feather_sigma), 0.0, 1.0)
    if labels is None:
        return int(x0), int(y0), alpha, None
    inside = cv2.resize((labels > 0).astype(np.float32), size, interpolation=cv2.INTER_AREA)
    premultiplied = cv2.resize(lut[labels], size, interpolation=cv2.INTER_AREA)
    inside = cv2.GaussianBlur(inside, kernel, feather_sigma)
    premultiplied = cv2.GaussianBlur(premultiplied, kernel, feather_sigma)
    contrast = np.where(inside > _MIN_ALPHA, premultiplied / np.maximum(inside, _MIN_ALPHA), 0.0)
    return int(x0), int(y0), alpha, contrast.astype(np.float32)


def _tight_box(alpha: np.ndarray, x0: int, y0: int) -> np.ndarray | None:
    """``[x, y, w, h]`` (frame px, top-left edge) of the pixels with alpha > BOX_ALPHA."""
    mask = alpha > BOX_ALPHA
    columns, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
    if columns.size == 0:
        return None
    return np.array(
        [x0 + columns[0], y0 + rows[0], columns[-1] - columns[0] + 1, rows[-1] - rows[0] + 1], float
    )
