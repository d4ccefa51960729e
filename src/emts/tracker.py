"""Stage D: the locked target in stabilized coordinates (§3.5, eqs. 6-7).

``G_t = H(M_t) G_{t-1}`` accumulates the camera motion since lock (``G_0 = I``). Detections are
mapped through ``G_t^-1`` into the stabilized frame, where a constant-velocity Kalman filter
on ``[x, y, vx, vy, w, h]`` models the *person*: a wind gust changes ``G_t``, not the state.
Association needs two keys: the Mahalanobis gate on position and the scale-aware embedding
gate (eq. 7); among admissible detections the one minimizing ``gamma^2 - 4 s`` wins.

Modes: ``"search"`` (no lock), ``"locked"``, ``"reacquire"`` (coasting after 8 consecutive
gate failures or a verifier veto; re-locks on frozen-template similarity > 0.65, or on a
detection inside ``gamma^2 < 16`` for 3 consecutive frames, rebuilding the template).

All boxes here are ``[cx, cy, w, h]`` (centre and size) in WORKING pixels (640x512) unless
named stabilized.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from emts.config import TrackerConfig
from emts.geometry import lift

Mode = Literal["search", "locked", "reacquire"]


@dataclass(frozen=True)
class Candidate:
    """A detection as the tracker sees it (WORKING px, centre and size)."""

    centre: np.ndarray  # (2,)
    size: np.ndarray  # (2,) w, h
    score: float
    embedding: np.ndarray  # (8,) unit vector


@dataclass(frozen=True)
class TrackState:
    """The tracker's output for one frame."""

    mode: Mode
    centre: np.ndarray | None  # WORKING px (None in search)
    size: np.ndarray | None
    score: float | None  # score of the associated detection, None when coasting
    associated: int | None  # index of the associated candidate, if any
    misses: int


def _normalize(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


class TargetTracker:
    """Tracks one locked target. Stages hold only their own state; the verifier's verdict
    comes in as an argument of :meth:`update`.

    Example:
        >>> import numpy as np
        >>> tracker = TargetTracker()
        >>> e = np.eye(8)[0]
        >>> tracker.lock(Candidate(np.array([100., 80.]), np.array([10., 24.]), 0.9, e))
        >>> seen = Candidate(np.array([101., 80.]), np.array([10., 24.]), 0.8, e)
        >>> state = tracker.update(np.eye(2, 3), [seen])
        >>> state.mode, state.associated
        ('locked', 0)
    """

    def __init__(self, config: TrackerConfig | None = None) -> None:
        self.config = c = config or TrackerConfig()
        q = c.process_noise
        self._f = np.eye(6)
        self._f[0, 2] = self._f[1, 3] = 1.0  # constant velocity, one frame per step
        self._q = np.diag([q, q, 4 * q, 4 * q, q / 4, q / 4])  # §3.5: Q
        self._r = np.diag(c.measurement_noise)  # §3.5: R
        self._h = np.zeros((4, 6))
        self._h[0, 0] = self._h[1, 1] = self._h[2, 4] = self._h[3, 5] = 1.0
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Drop the lock (mode ``search``)."""
        self.mode: Mode = "search"
        self.x = np.zeros(6)
        self.p = np.eye(6)
        self.g = np.eye(3)  # G_t: stabilized -> current image
        self.template = np.zeros(8)
        self.frozen_template = np.zeros(8)
        self.lock_height = 0.0
        self.misses = 0
        self._spatial_streak = 0

    def lock(self, candidate: Candidate) -> None:
        """Lock on ``candidate`` (operator tap or auto-lock): G_0 = I, template from it."""
        self.reset()
        self.mode = "locked"
        self.x = np.array([*candidate.centre, 0.0, 0.0, *candidate.size], float)
        self.p = np.diag([4.0, 4.0, 25.0, 25.0, 9.0, 9.0])
        self.template = _normalize(candidate.embedding)
        self.lock_height = float(candidate.size[1])

    @property
    def locked(self) -> bool:
        return self.mode != "search"

    # -------------------------------------------------------------- geometry
    def _scale(self) -> float:
        return float(np.sqrt(abs(np.linalg.det(self.g[:2, :2]))))

    def _to_stabilized(self, candidate: Candidate) -> np.ndarray:
        inverse = np.linalg.inv(self.g)
        centre = inverse[:2, :2] @ candidate.centre + inverse[:2, 2]
        return np.array([*centre, *(candidate.size / self._scale())])

    def image_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Current estimate mapped back to the image (WORKING px): (centre, size)."""
        centre = self.g[:2, :2] @ self.x[:2] + self.g[:2, 2]
        return centre, self.x[4:6] * self._scale()

    # ------------------------------------------------------------------ gates
    def embedding_gate(self, height: float) -> float:
        """eq. 7: tau_e(h), scale-aware."""
        c = self.config
        if height <= c.scale_gate_ratio * self.lock_height:
            return c.embedding_threshold
        return max(
            c.embedding_floor,
            c.scale_gate_ratio * c.embedding_threshold * self.lock_height / height,
        )

    def _innovation(self, measurement: np.ndarray) -> float:
        """gamma^2 of the positional innovation (eq. 6, 2 DoF)."""
        s = (self._h @ self.p @ self._h.T + self._r)[:2, :2]
        nu = measurement[:2] - self.x[:2]
        return float(nu @ np.linalg.solve(s, nu))

    # ------------------------------------------------------------------ update
    def update(
        self, motion: np.ndarray, candidates: list[Candidate], verdict: bool | None = None
    ) -> TrackState:
        """Advance one frame.

        Args:
            motion: Stage A's ``M_t`` (2x3, WORKING px, frame t-1 -> t).
            candidates: this frame's detections.
            verdict: the verifier's verdict on this track this frame: True (moves like a
                human), False (veto) or None (not classified this frame).
        """
        if self.mode == "search":
            return TrackState("search", None, None, None, None, 0)
        c = self.config
        self.g = lift(motion) @ self.g  # G_t = H(M_t) G_{t-1}
        self.x = self._f @ self.x  # x = F x
        self.p = self._f @ self.p @ self._f.T + self._q  # P = F P F^T + Q
        measurements = [self._to_stabilized(k) for k in candidates]
        gammas = [self._innovation(m) for m in measurements]
        vetoed = verdict is False and self.mode == "locked"
        if vetoed:  # the verifier says this track does not move like a human: coast
            self._enter_reacquire()
        chosen = None
        if self.mode == "locked":
            best = np.inf
            for i, (k, gamma) in enumerate(zip(candidates, gammas, strict=True)):
                similarity = float(self.template @ k.embedding)
                if gamma < c.gate_mahalanobis and similarity > self.embedding_gate(k.size[1]):
                    cost = gamma - c.association_embedding_weight * similarity
                    if cost < best:
                        best, chosen = cost, i
            if chosen is None:
                self.misses += 1
                if self.misses >= c.reacquire_after_misses:
                    self._enter_reacquire()
            else:
                self._accept(candidates[chosen], measurements[chosen], verdict)
        elif self.mode == "reacquire" and not vetoed:
            chosen = self._try_relock(candidates, measurements, gammas)
        centre, size = self.image_box()
        score = candidates[chosen].score if chosen is not None else None
        return TrackState(self.mode, centre, size, score, chosen, self.misses)

    def _accept(self, candidate: Candidate, measurement: np.ndarray, verdict: bool | None) -> None:
        c = self.config
        s = self._h @ self.p @ self._h.T + self._r
        gain = self.p @ self._h.T @ np.linalg.inv(s)  # K = P H^T S^-1
        self.x = self.x + gain @ (measurement - self._h @ self.x)  # x = x + K (z - H x)
        self.p = (np.eye(6) - gain @ self._h) @ self.p  # P = (I - K H) P
        e = candidate.embedding
        self.template = _normalize(
            c.slow_template_keep * self.template + (1 - c.slow_template_keep) * e
        )
        if verdict:  # fast update only on verifier-approved frames (template hygiene)
            self.template = _normalize(
                c.fast_template_keep * self.template + (1 - c.fast_template_keep) * e
            )
        keep = c.lock_height_keep
        self.lock_height = keep * self.lock_height + (1 - keep) * float(candidate.size[1])
        self.misses = 0

    def _enter_reacquire(self) -> None:
        self.mode = "reacquire"
        self.frozen_template = self.template.copy()
        self._spatial_streak = 0

    def _try_relock(self, candidates, measurements, gammas) -> int | None:
        c = self.config
        self.misses += 1
        if not candidates:
            self._spatial_streak = 0
            return None
        similarities = [float(self.frozen_template @ k.embedding) for k in candidates]
        best = int(np.argmax(similarities))
        if similarities[best] > c.relock_similarity:  # appearance path
            self._relock(candidates[best], measurements[best], rebuild=False)
            return best
        inside = [i for i, g in enumerate(gammas) if g < c.relock_gate]
        if inside:  # spatial path: persistence inside the coasted gate
            self._spatial_streak += 1
            nearest = min(inside, key=lambda i: gammas[i])
            if self._spatial_streak >= c.relock_frames:
                self._relock(candidates[nearest], measurements[nearest], rebuild=True)
                return nearest
        else:
            self._spatial_streak = 0
        return None

    def _relock(self, candidate: Candidate, measurement: np.ndarray, rebuild: bool) -> None:
        self.mode = "locked"
        self._accept(candidate, measurement, verdict=None)
        if rebuild:
            self.template = _normalize(candidate.embedding)
        self._spatial_streak = 0
        self.misses = 0
