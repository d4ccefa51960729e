"""The constant-velocity Kalman filter of Stage D (§3.5), in stabilized coordinates.

State ``x = [x, y, vx, vy, w, h]`` (centre px, velocity px/frame, size px); one step per frame.
The equations sit beside the lines that compute them (filterpy's style).
"""

from __future__ import annotations

import numpy as np

_EYE6 = np.eye(6)  # the identity of the state's space
_EYE6.setflags(write=False)


class ConstantVelocityKalman:
    """``x_{t+1} = F x_t`` with ``Q = diag(q, q, 4q, 4q, q/4, q/4)`` (§3.5); measurements of
    the box ``[x, y, w, h]`` (``h``, noise ``r``) or of the centre alone (``h_position``,
    noise ``r_appearance``: the appearance match).

    Example:
        >>> import numpy as np
        >>> kf = ConstantVelocityKalman(1.0, (4.0, 4.0, 9.0, 9.0), 4.0)
        >>> kf.start(np.array([10.0, 20.0]), np.array([8.0, 16.0]), (4, 4, 25, 25, 9, 9))
        >>> kf.predict()
        >>> kf.update(np.array([11.0, 20.0, 8.0, 16.0]), kf.h, kf.r)
        >>> bool(kf.x[0] > 10.0)
        True
    """

    def __init__(
        self,
        process_noise: float,
        measurement_noise: tuple[float, float, float, float],
        appearance_noise: float,
    ) -> None:
        q = process_noise
        self.f = np.eye(6)
        self.f[0, 2] = self.f[1, 3] = 1.0  # constant velocity, one frame per step
        self.q = np.diag([q, q, 4 * q, 4 * q, q / 4, q / 4])  # §3.5: Q
        self.r = np.diag(measurement_noise)  # §3.5: R
        self.h = np.zeros((4, 6))  # the box [x, y, w, h] of the state
        self.h[0, 0] = self.h[1, 1] = self.h[2, 4] = self.h[3, 5] = 1.0
        self.h_position = self.h[:2]  # the centre alone
        self.r_appearance = np.eye(2) * appearance_noise
        self.x = np.zeros(6)
        self.p = np.eye(6)

    def start(self, centre: np.ndarray, size: np.ndarray, covariance) -> None:
        """A new origin: position and size from a measurement, velocity zero, ``P =
        diag(covariance)``."""
        self.x = np.array([*centre, 0.0, 0.0, *size], float)
        self.p = np.diag(covariance)

    def predict(self) -> None:
        self.x = self.f @ self.x  # x = F x
        self.p = self.f @ self.p @ self.f.T + self.q  # P = F P F^T + Q

    def update(self, z: np.ndarray, h: np.ndarray, r: np.ndarray) -> None:
        s = h @ self.p @ h.T + r  # S = H P H^T + R
        gain = self.p @ h.T @ np.linalg.inv(s)  # K = P H^T S^-1
        self.x = self.x + gain @ (z - h @ self.x)  # x = x + K (z - H x)
        self.p = (_EYE6 - gain @ h) @ self.p  # P = (I - K H) P

    def innovation(self, measurement: np.ndarray, noise: np.ndarray | None = None) -> float:
        """gamma^2 of the positional innovation (``eq:gates``, 2 DoF): ``nu^T S^-1 nu``."""
        noise = self.r[:2, :2] if noise is None else noise
        s = self.p[:2, :2] + noise  # S of the centre
        nu = measurement[:2] - self.x[:2]  # nu = z - H x
        return float(nu @ np.linalg.solve(s, nu))
