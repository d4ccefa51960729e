"""The single-object trackers a user would install instead of EMTS -- OpenCV's VitTrack and
NanoTrack v2 -- built from their weights and put behind the pipeline's interface
(``lock(x, y, box)``, ``step(frame)``), for ``emts bench --peers`` and
``benchmarks/peers_track.py``.

The weights are never shipped: they are read from a folder laid out as ``../shared/peers``
(:data:`PEER_FILES`, relative to it). Only OpenCV is needed (>= 4.9: ``cv2.TrackerVit``,
``cv2.TrackerNano`` in the plain ``opencv-python-headless`` wheel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from emts.errors import BadInputError

# name -> the tracker's cv2 Params field -> its weight file, relative to the peers folder
PEER_FILES = {
    "VitTrack": {"net": "vittrack/object_tracking_vittrack_2023sep.onnx"},
    "NanoTrack v2": {
        "backbone": "nanotrackv2/nanotrack_backbone_sim.onnx",
        "neckhead": "nanotrackv2/nanotrack_head_sim.onnx",
    },
}
PEER_FACTORIES = {"VitTrack": "TrackerVit", "NanoTrack v2": "TrackerNano"}  # cv2.<kind>_create
NOT_RUN = {
    "NanoTrack v3": "cv2.TrackerNano cannot run it: its head gives a 15x15 score map, OpenCV "
    "expects 16x16 (it needs a port of the reference procedure)",
}


class PeerSetupError(BadInputError):
    """The peers' weights or OpenCV's trackers are missing."""


@dataclass(frozen=True)
class PeerTarget:
    """A peer's target as the scorer reads it: ``box`` ``[x, y, w, h]`` in input px."""

    box: tuple[float, float, float, float]
    measured_by: str | None = None
    p_human: float | None = None


@dataclass(frozen=True)
class PeerResult:
    """One frame of a peer, shaped as :class:`emts.pipeline.FrameResult` for the scorer."""

    mode: str
    target: PeerTarget | None
    event: str | None = None
    lock_source: str | None = None


class PeerTracker:
    """A cv2-style single-object tracker (``init(frame, rect)``, ``update(frame) -> (ok,
    rect)``) behind the pipeline interface that ``evaluate_track`` drives.

    On the frame after :meth:`lock`, :meth:`step` creates a fresh tracker and calls
    ``init(frame, box)`` with the lock's box (the given one, or ``tap_box`` for a tap given as a
    point only: the caller sets it to the box EMTS derived from the same tap); the mode is
    ``locked`` and the target is that box. On later frames it calls ``update(frame)``: ``ok``
    gives ``locked`` and the tracker's box; not ``ok`` gives ``reacquire`` with no target (the
    tracker said it lost the person: its box is not scored), and the tracker keeps updating, so
    a later ``ok`` is a relock. Events as the pipeline's: ``lock``, ``lost``, ``relock``.
    VitTrack reports a loss below its score threshold; NanoTrack never does, and stays locked.

    Args:
        make: builds a fresh cv2 tracker (``cv2.TrackerVit_create(params)``, ...).
        name: written as the target's ``measured_by``.
        tap_box: ``[x, y, w, h]`` input px used when :meth:`lock` gets no box.

    Example:
        >>> tracker = PeerTracker(lambda: cv2.TrackerVit_create(params), "VitTrack")
        >>> tracker.lock(120.0, 80.0, box=(110, 60, 20, 40))
        >>> tracker.step(frame).mode
        'locked'
    """

    def __init__(
        self,
        make: Callable[[], object],
        name: str = "peer",
        tap_box: tuple[float, float, float, float] | None = None,
    ) -> None:
        self.make = make
        self.name = name
        self.tap_box = tap_box
        self.fps: float | None = None  # set by the scorer; the peers do not use it
        self._tracker = None
        self._pending: tuple[float, float, float, float] | None = None
        self._mode = "search"

    def lock(self, x: float, y: float, box=None) -> None:
        """Lock on ``box`` (input px) with the next :meth:`step`; a point only uses ``tap_box``.

        Raises:
            ValueError: a point only and no ``tap_box``: a peer cannot lock on a point.
        """
        if box is None:
            if self.tap_box is None:
                raise ValueError(
                    f"{self.name} needs a box to lock on (a tap gives only ({x}, {y}))"
                )
            box = self.tap_box
        self._pending = tuple(float(v) for v in box)

    def step(self, frame: np.ndarray) -> PeerResult:
        if self._pending is not None:
            box, self._pending = self._pending, None
            self._tracker = self.make()
            self._tracker.init(frame, to_rect(box))
            self._mode = "locked"
            return PeerResult("locked", PeerTarget(box, self.name), "lock", "tap:box")
        if self._tracker is None:
            return PeerResult("search", None)
        ok, rect = self._tracker.update(frame)
        before, self._mode = self._mode, "locked" if ok else "reacquire"
        event = None
        if self._mode != before:
            event = "relock" if ok else "lost"
        target = PeerTarget(tuple(float(v) for v in rect), self.name) if ok else None
        return PeerResult(self._mode, target, event, "tap:box")


def to_rect(box) -> tuple[int, int, int, int]:
    """``[x, y, w, h]`` float px -> the integer rect OpenCV's trackers take (w, h >= 1)."""
    x, y, w, h = box
    return round(x), round(y), max(1, round(w)), max(1, round(h))


def peer_weight_files(peers: Path) -> list[Path]:
    """Every weight file the peers read from the folder ``peers`` (:data:`PEER_FILES`)."""
    return [Path(peers) / path for files in PEER_FILES.values() for path in files.values()]


def peer_factories(peers: Path) -> dict[str, Callable[[], object]]:
    """Name -> a function building a fresh cv2 tracker with the weights under ``peers``.

    Raises:
        PeerSetupError: the folder or a weight file is missing, or OpenCV lacks the tracker.
    """
    import cv2

    peers = Path(peers)
    if not peers.is_dir():
        raise PeerSetupError(f"{peers}: no peers folder (the peer trackers' weights)")
    out = {}
    for name, files in PEER_FILES.items():
        for path in files.values():
            if not (peers / path).is_file():
                raise PeerSetupError(f"{peers / path}: missing weight file of {name}")
        kind = PEER_FACTORIES[name]
        if not hasattr(cv2, f"{kind}_create") or not hasattr(cv2, f"{kind}_Params"):
            raise PeerSetupError(
                f"OpenCV {cv2.__version__} has no cv2.{kind} ({name}): need >= 4.9"
            )

        def make(kind=kind, files=files):
            params = getattr(cv2, f"{kind}_Params")()
            for field_name, path in files.items():
                setattr(params, field_name, str(peers / path))
            return getattr(cv2, f"{kind}_create")(params)

        out[name] = make
    return out
