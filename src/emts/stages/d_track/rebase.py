"""Stage D's stabilized frame kept at the current frame's scale (``TrackerConfig.rebase_scale``;
a part of :class:`~emts.stages.d_track.tracker.TargetTracker`).

``G_t`` (stabilized -> current image) composes Stage A's frame-to-frame similarities, and on a
long flight its scale drifts: a tilting oblique camera sees the ground shrink or grow at the
image's centre (uav123-person12: 3.2 by frame 200, 10.7 by frame 480, while the walker keeps
their size). Every distance the tracker keeps in stabilized px -- the Kalman's Q and R, the
search and re-lock bounds, the walking speeds, the re-find chains' reach -- then means that
many times more px of the image. Re-based, the stabilized frame is rescaled on every frame so
that ``G_t`` has scale 1 (its rotation and translation stay): stabilized px are px of the
current frame, and the state held in them (the Kalman's position and velocity and their
covariance, the trail, the chains, the look-alike's path, the positions stored with a ``G``)
is rescaled with it. The sizes are kept in image px already.
"""

from __future__ import annotations

import numpy as np


def _scaled(point: np.ndarray | None, s: float) -> np.ndarray | None:
    return None if point is None else point * s


class ScaleRebase:
    """The re-basing of :class:`~emts.stages.d_track.tracker.TargetTracker` (its state lives
    there)."""

    def _rebase(self) -> None:
        """Rescale the stabilized frame by ``s`` = G's scale (new = s x old, about its origin),
        so that G has scale 1; every quantity kept in stabilized px follows."""
        s = self._scale()
        if abs(s - 1.0) < 1e-9:
            return
        unscale = np.diag([1.0 / s, 1.0 / s, 1.0])
        self.g = self.g @ unscale
        self._g_inverse = np.diag([s, s, 1.0]) @ self._g_inverse  # (G S^-1)^-1 = S G^-1
        t = np.array([s, s, s, s, 1.0, 1.0])
        self.kf.x = self.kf.x * t
        self.kf.p = self.kf.p * np.outer(t, t)
        self._lost_velocity = self._lost_velocity * s
        if self._last_seen is not None:
            position, g = self._last_seen
            self._last_seen = (position * s, g @ unscale)
        if self._previous is not None:
            working, g = self._previous
            self._previous = (working, g @ unscale)
        trail = [(p * s, v * s, look, d) for p, v, look, d in self._trail]
        self._trail.clear()
        self._trail.extend(trail)
        self._crossing_walk = self._crossing_walk * s
        self._rival = _scaled(self._rival, s)
        self._rival_distance *= s
        self._path_distance *= s
        if self._rival_path is not None:
            seen, velocity, frames = self._rival_path
            self._rival_path = (seen * s, velocity * s, frames)
        self._anchor_offsets = [o * s for o in self._anchor_offsets]
        self._still_streak = [p * s for p in self._still_streak]
        self._appearance_streak = [[p * s for p in chain] for chain in self._appearance_streak]
        for refinder in (self._refinder, self._colour_refinder):
            refinder.chains = [[(p * s, i, f) for p, i, f in chain] for chain in refinder.chains]
