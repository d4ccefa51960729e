"""The rigid movers: :class:`RigidMover`, a vehicle or a bicycle (kind ``"vehicle"`` or
``"bicycle"``) that translates and steers without articulation, composited unlabeled."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np

from emts.synth.actors.base import (
    MAX_SCALE_RATE,
    STANDING_PROBABILITY,
    Actor,
    Sunlight,
    _capsules,
    _Geometry,
    _sample_contrast,
    sample_schedule,
)
from emts.synth.actors.walker import (
    HEAD_RADIUS,
    SHIN_RADIUS,
    THIGH_RADIUS,
    TORSO_RADIUS,
    UPPER_ARM_RADIUS,
)

# --- Rigid movers -------------------------------------------------------------------------------
VEHICLE_HEIGHT_RANGE = (0.8, 1.0)  # x the person height (car 1.4 m to van 1.75 m)
VEHICLE_LENGTH_RANGE = (2.5, 3.0)  # x the vehicle height: 2-3 person heights long
VEHICLE_WIDTH_RANGE = (1.1, 1.25)  # x the vehicle height
VEHICLE_SPEED_RANGE = (1.1, 8.9)  # vehicle heights / s: 1-8 plate px/frame at 30-px persons
BICYCLE_SPEED_RANGE = (1.7, 4.0)  # rider heights / s: 3-7 m/s
BICYCLE_RIDER_PROBABILITY = 0.8
VEHICLE_TURN_RANGE_RAD = (math.radians(10.0), math.radians(60.0))
VEHICLE_TURN_FRAMES = (20, 60)


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
