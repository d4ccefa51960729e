"""A drone camera hovering over a plate: smooth random similarity motion plus wind gusts.

The camera pose ``P_t`` (3x3 similarity) maps plate pixels to frame pixels; a frame is
``cv2.warpAffine(plate, P_t[:2], frame_size)`` and the true ego-motion between frames is
``M_t = P_t @ inv(P_{t-1})`` -- exactly what Stage A estimates.

Rates are given at the paper's 256-px-wide network resolution (§4.1: drift up to 4 px/frame,
roll 0.008 rad/frame, scale 0.6 %/frame) and scaled to the frame width in use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REFERENCE_WIDTH = 256.0  # px; the rates below are specified at this width (§4.1)


@dataclass(frozen=True)
class CameraMotionConfig:
    max_drift: float = 4.0  # px/frame at 256 px width (§4.1)
    max_roll: float = 0.008  # rad/frame (§4.1)
    max_scale_rate: float = 0.006  # fraction/frame (§4.1)
    smoothness: float = 0.95  # AR(1) coefficient of the velocities (1 = constant velocity)
    gust_rate: float = 1.0 / 45.0  # expected gusts per frame
    gust_strength: float = 3.0  # a gust's peak velocity, in multiples of the smooth maxima
    gust_decay: float = 0.6  # per-frame decay of a gust's velocity
    gust_frequency: float = 0.18  # cycles/frame of a gust's ringing (airframe oscillation)
    hover_stiffness: float = 0.03  # per-frame pull of the view towards its target point
    attitude_stiffness: float = 0.03  # per-frame pull of roll and zoom back to their start


class CameraPath:
    """Generates camera poses frame by frame.

    Args:
        plate_size: (w, h) of the plate in pixels.
        frame_size: (w, h) of the rendered frames.
        config: motion statistics.
        rng: random generator (the path is deterministic for a seeded generator).
        zoom: initial frame-pixels per plate-pixel.
    """

    def __init__(
        self,
        plate_size: tuple[int, int],
        frame_size: tuple[int, int],
        config: CameraMotionConfig | None = None,
        rng: np.random.Generator | None = None,
        zoom: float = 1.0,
    ) -> None:
        self.config = config or CameraMotionConfig()
        self.rng = rng or np.random.default_rng()
        self.plate_size = plate_size
        self.frame_size = frame_size
        self.px_scale = frame_size[0] / REFERENCE_WIDTH
        self.centre = np.array(plate_size, float) / 2.0  # plate point at the frame centre
        self.angle = float(self.rng.uniform(-np.pi, np.pi) * 0.05)
        self.zoom = zoom
        self.target = self.centre.copy()  # plate point the drone tries to keep centred
        self._rest = (self.angle, zoom)
        self._velocity = np.zeros(4)  # d(centre x, centre y) in frame px, d angle, d log zoom
        self._gust = np.zeros(4)
        self._gust_phase = 0.0

    def pose(self) -> np.ndarray:
        """3x3 similarity mapping plate pixels to frame pixels for the current state."""
        c, s = np.cos(self.angle) * self.zoom, np.sin(self.angle) * self.zoom
        fx, fy = (np.array(self.frame_size, float) - 1.0) / 2.0
        linear = np.array([[c, -s], [s, c]])
        offset = np.array([fx, fy]) - linear @ self.centre
        return np.array([[c, -s, offset[0]], [s, c, offset[1]], [0.0, 0.0, 1.0]])

    def set_drift(self, velocity: np.ndarray) -> None:
        """Set the smooth drift velocity now (dx, dy frame px/frame): the frame content moves
        by it, decaying only as ``config.smoothness`` lets it (1 keeps it constant)."""
        self._velocity[:2] = np.asarray(velocity, float)

    def impulse(self, velocity: np.ndarray) -> None:
        """Force a gust now: ``velocity`` = (dx, dy frame px/frame, d roll rad, d log zoom)."""
        self._gust = np.asarray(velocity, float).copy()
        self._gust_phase = 0.0

    def step(self) -> np.ndarray:
        """Advance one frame; return the new pose."""
        cfg, rng = self.config, self.rng
        maxima = np.array(
            [cfg.max_drift * self.px_scale] * 2 + [cfg.max_roll, np.log1p(cfg.max_scale_rate)]
        )
        innovation = rng.normal(0.0, 1.0, 4) * maxima * np.sqrt(1 - cfg.smoothness**2) * 0.5
        velocity = cfg.smoothness * self._velocity + innovation
        drift = float(np.hypot(*velocity[:2]))
        if drift > maxima[0]:  # the drift limit is on the speed, whatever the direction
            velocity[:2] *= maxima[0] / drift
        velocity[2:] = np.clip(velocity[2:], -maxima[2:], maxima[2:])
        self._velocity = velocity
        if rng.random() < cfg.gust_rate:
            direction = rng.normal(0.0, 1.0, 4)
            direction /= np.linalg.norm(direction[:2]) + 1e-9
            self._gust = direction * maxima * cfg.gust_strength
            self._gust_phase = 0.0
        gust = self._gust * np.cos(2 * np.pi * self._gust_phase)
        self._gust *= cfg.gust_decay
        self._gust_phase += cfg.gust_frequency
        velocity = self._velocity + gust
        # A hovering (or following) drone: pull the view towards its target point, and roll
        # and zoom back towards where they started.
        velocity[:2] += cfg.hover_stiffness * (self.centre - self.target) * self.zoom
        velocity[2] += cfg.attitude_stiffness * (self._rest[0] - self.angle)
        velocity[3] += cfg.attitude_stiffness * np.log(self._rest[1] / self.zoom)
        # The frame content moves by +v, so the plate point at the frame centre moves by -v.
        rotation = np.array(
            [[np.cos(self.angle), np.sin(self.angle)], [-np.sin(self.angle), np.cos(self.angle)]]
        )
        self.centre = self.centre - rotation @ velocity[:2] / self.zoom
        self.angle += velocity[2]
        self.zoom *= float(np.exp(velocity[3]))
        return self.pose()


def relative_motion(previous_pose: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """True ego-motion ``M_t`` (2x3): frame t-1 pixel coordinates -> frame t."""
    return (pose @ np.linalg.inv(previous_pose))[:2]
