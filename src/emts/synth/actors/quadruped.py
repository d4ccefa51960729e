"""The animal actor: :class:`Quadruped`, a dog-to-cow sized four-legged walker (kind
``"animal"``), composited *unlabeled* as a moving hard negative."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from emts.synth.actors.base import (
    CONTRAST_RANGE,
    FPS,
    MAX_SCALE_RATE,
    STANDING_PROBABILITY,
    Actor,
    Sunlight,
    _capsules,
    _Geometry,
    sample_schedule,
)
from emts.synth.actors.gait import MAX_HIP_AMPLITUDE_RAD, _hip_angle, _knee_flexion, _unit
from emts.synth.actors.walker import ANKLE_CLEARANCE

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
