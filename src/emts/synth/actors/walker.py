"""The person actors: :class:`Walker` (articulated capsules) and :class:`MeshWalker` (a posed
MakeHuman body from :mod:`emts.synth.atlas`), kind ``"person"``.

A walker is an articulated person: head, torso, shoulder girdle, pelvis, two arms (upper arm +
forearm) and two legs (thigh + shin) as capsules, with a gait cycle
(:mod:`emts.synth.actors.gait`), turns, pauses, standing sway, scale drift, clothing contrast
and a cast shadow.

Example:
    >>> rng = np.random.default_rng(0)
    >>> person = Walker.random(rng, np.array([400.0, 300.0]), 40.0, np.radians(45), 1)
    >>> person.step()
    >>> sprite = person.render(np.eye(3), (640, 512))
    >>> sprite.kind, sprite.alpha.shape == sprite.contrast.shape
    ('person', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from emts.synth.actors.base import (
    FPS,
    MAX_SCALE_RATE,
    STANDING_PROBABILITY,
    Actor,
    Sunlight,
    _capsules,
    _Geometry,
    _sample_contrast,
    sample_schedule,
)
from emts.synth.actors.gait import MAX_HIP_AMPLITUDE_RAD, _hip_angle, _knee_flexion, _unit
from emts.synth.atlas import REGIONS, load_atlas

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
KNEE_PEAK_RANGE_RAD = (math.radians(50.0), math.radians(65.0))  # peak swing knee flexion
ARM_SWING_RANGE_RAD = (math.radians(12.0), math.radians(25.0))  # peak shoulder swing
ELBOW_BASE_FLEXION_RAD = math.radians(12.0)
ELBOW_SWING_FLEXION_RAD = math.radians(15.0)  # extra elbow flexion with the arm forward
WALK_LEAN_RAD = math.radians(4.0)  # forward trunk lean while walking
STANDING_SWAY = 0.008  # H, lateral sway of the head of a standing person
STANDING_SWAY_HZ = (0.2, 0.4)
MESH_SHADING_RANGE = (0.3, 1.5)  # local plate std, lit minus unlit side of a mesh walker


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
