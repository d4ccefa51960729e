"""Procedural moving actors of the synthetic curriculum (§4.1, SPEC §3 "Actors").

Three kinds of actor walk or drive over the ground plane of a plate and draw themselves,
frame by frame, into frame pixels through the camera pose:

* :class:`~emts.synth.actors.walker.Walker` (kind ``"person"``) -- an articulated person, and
  :class:`~emts.synth.actors.walker.MeshWalker`, the same drawn as a posed MakeHuman body;
* :class:`~emts.synth.actors.quadruped.Quadruped` (kind ``"animal"``) -- a dog-to-cow sized
  four-legged walker, composited *unlabeled* as a moving hard negative;
* :class:`~emts.synth.actors.rigid_mover.RigidMover` (kind ``"vehicle"`` or ``"bicycle"``) --
  a rigid shape that translates and steers without articulation.

The modules: ``base`` (the common :class:`~emts.synth.actors.base.Actor`: motion, behaviour
schedule, sun, projection and shadows; its coordinates), ``raster`` (the supersampled fill
into a feathered sprite), ``gait`` (the leg cycle), one module per kind, and here
:func:`random_actor`, which samples any kind.

Example:
    >>> rng = np.random.default_rng(0)
    >>> person = random_actor(rng, "person", np.array([400.0, 300.0]), 40.0, np.radians(45), 1)
    >>> person.step()
    >>> sprite = person.render(np.eye(3), (640, 512))
    >>> sprite.kind, sprite.alpha.shape == sprite.contrast.shape
    ('person', True)
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from emts.synth.actors.base import Actor, Sunlight
from emts.synth.actors.quadruped import Quadruped
from emts.synth.actors.rigid_mover import RigidMover
from emts.synth.actors.walker import MeshWalker, Walker

# Sunlight and Walker: the names emts.apps.demo uses through ``emts.synth.actors``
__all__ = [
    "ActorKind",
    "MeshWalker",
    "Quadruped",
    "RigidMover",
    "Sunlight",
    "Walker",
    "random_actor",
]

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
