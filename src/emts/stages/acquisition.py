"""Lock acquisition: how a lock starts (operator tap, §6.7 auto-lock) and whether it stands.

This stage sits between the detector (C) and the tracker (D). Each frame it returns an
:class:`AcquisitionDecision`, which the pipeline hands to
:meth:`emts.stages.d_track.tracker.TargetTracker.update` -- the tracker applies a lock *after* the
frame's camera motion, so nothing outside the stages calls into D or E.

* **Operator tap** (SPEC §0): locks at once, on the frame the tap refers to, on the person
  under the point: the detection whose box holds the point if there is one (unless its box is
  more than 1.5x as wide as the blob under the point: then the blob's box, with the
  detection's embedding), else the appearance blob around the point (a dark or bright region
  that stands out from the local ground), else the strongest of the detector's faint sightings
  under it (down to ``tap_faint``; source ``"tap:faint"``: the operator points at a person the
  detector barely sees, in deep shade). A tap with none of these under the point is tried
  again on each of the next ``tap_retry_frames`` frames (``tap="waiting"`` meanwhile), the
  point followed by its own optical flow (the person under it walks), else carried by the
  camera motion: a stream's first frame has no motion for the detector, and a person walking
  into the view beside their shadow may stand out from neither until they move. Where none
  of those frames finds anything either it locks on nothing: the decision says
  ``refused="no_target"``, the tap is spent and a lock the operator had is kept unchanged (a
  tap on empty ground gave a lock a gimbal would follow; issue 56). A tap with a box (a drag,
  or a ground station's rectangle) uses the box as given. A tap made on the frame last shown
  is carried to the next frame by that frame's camera motion. A lock made where nothing was
  detected (a stream's first frame: nothing has moved yet) waits up to ``tap_wait_frames``
  frames for a detection under the tapped point, carried with the track,
  and moves onto it where it overlaps the track's box by less than ``tap_wait_max_iou`` --
  not onto a slice of the person tapped (``tap_wait_min_height``, ``tap_wait_part_width``:
  their upper body, found alone under a gust). The move reaches the tracker as a
  :class:`~emts.stages.d_track.types.LockCommand` with ``moves`` set, and on colour frames
  the tracker keeps the lock it has where that detection holds a smaller share of the
  person's own samples than its box does (``TrackerConfig.tap_wait_own_share``: their
  shadow or ground beside them).
* **Auto-lock** (§6.7): the strongest detection, spatially stable (carried by the camera
  motion) for 3 consecutive frames, is locked *provisionally*; the lock is reported only once
  the verifier accepts it (P(human) >= 0.35) and the track walked (covered
  ``autolock_min_travel`` of its heights over the ground in the verifier's window; not in the
  paper), and released if not. A re-lock the
  tracker makes on its own after losing an automatic lock is provisional the same way
  (reported as ``reacquire`` until the verifier accepts it): nobody chose that target, so only
  the verifier can say it is the person again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from emts.config import AcquisitionConfig
from emts.errors import BadInputError
from emts.geometry import Frame, FrameGeometry, box_iou
from emts.stages.d_track.types import Candidate, LockCommand, Mode


@dataclass(frozen=True)
class Tap:
    """An operator tap in INPUT px: a point, or a box ``[x, y, w, h]`` around the person.

    ``on_last_frame``: the tap was made on the frame last processed (a live display), not on
    the next frame given to the pipeline.
    """

    point: tuple[float, float]
    box: tuple[float, float, float, float] | None = None
    on_last_frame: bool = False

    @classmethod
    def make(cls, x, y, box=None, on_last_frame: bool = False) -> Tap:
        """Validated tap (BadInputError on non-numbers, NaN, or a box without area)."""
        try:
            point = (float(x), float(y))
            box = None if box is None else tuple(float(v) for v in box)
        except (TypeError, ValueError):
            raise BadInputError(f"lock point must be two numbers, got {x!r}, {y!r}") from None
        if not all(np.isfinite(point)):
            raise BadInputError(f"lock point must be finite, got {point}")
        if box is not None and (len(box) != 4 or not all(np.isfinite(box)) or min(box[2:]) <= 0):
            raise BadInputError(f"lock box must be finite x, y, w, h with w, h > 0; got {box}")
        return cls(point, box, bool(on_last_frame))  # type: ignore[arg-type]


@dataclass(frozen=True)
class AcquisitionDecision:
    """What the acquisition stage asks of the tracker this frame.

    Attributes:
        lock: lock on this target now (this frame's WORKING px), or None.
        release: drop the current lock (a provisional auto-lock the verifier rejected).
        refused: ``"no_target"`` when an operator tap found nothing under the point on its
            frame and on the ``tap_retry_frames`` frames after it: no lock was made for it
            (the rest of the decision is the frame's own, as if no tap had come), else None.
        tap: what became of an operator tap this frame: ``"lock"`` (``lock`` is its lock),
            ``"no_target"`` (``refused``), ``"waiting"`` (nothing under the point yet: tried
            again on the next frame) or None (no tap to decide this frame).

    Whether the current lock is still provisional (awaiting the verifier, reported as not
    locked yet) is :attr:`LockAcquisition.provisional`.
    """

    lock: LockCommand | None = None
    release: bool = False
    refused: str | None = None
    tap: str | None = None


NOTHING = AcquisitionDecision()


def _under(point: np.ndarray, candidates: list[Candidate], margin: float) -> list[Candidate]:
    """The candidates whose box, grown by ``margin`` of its size, holds ``point``."""
    return [k for k in candidates if np.all(np.abs(point - k.centre) <= k.size / 2 * (1 + margin))]


def _followed(
    previous: np.ndarray, working: np.ndarray, point: np.ndarray, motion: np.ndarray
) -> np.ndarray:
    """Where ``point`` (WORKING px of the frame ``previous``) went in ``working``: followed by
    its own optical flow (the person under a tapped point walks: at 10 fps a walker cut by the
    view's edge, tapped on the first frame, was 40 px from where the camera motion alone
    carried the point 4 frames later), where pyramidal LK tracks it there and back to within
    a pixel; else carried by the camera motion ``motion`` (2x3) as the ground is."""
    carried = motion[:, :2] @ point + motion[:, 2]
    if previous.shape != working.shape or previous.ndim != 2 or previous.dtype != np.uint8:
        return carried
    start = np.asarray(point, np.float32).reshape(1, 1, 2)
    guess = np.asarray(carried, np.float32).reshape(1, 1, 2)
    flags = cv2.OPTFLOW_USE_INITIAL_FLOW
    lk = {"winSize": (21, 21), "maxLevel": 3, "flags": flags}
    end, status, _ = cv2.calcOpticalFlowPyrLK(previous, working, start, guess.copy(), **lk)
    if not status[0, 0]:
        return carried
    back, status, _ = cv2.calcOpticalFlowPyrLK(working, previous, end, start.copy(), **lk)
    if not status[0, 0] or float(np.hypot(*(back - start).ravel())) > 1.0:
        return carried
    return end.reshape(2).astype(float)


def blob_box(
    working: np.ndarray,
    point: np.ndarray,
    config: AcquisitionConfig,
    content: tuple[int, int, int, int] | None = None,
) -> np.ndarray | None:
    """``[cx, cy, w, h]`` (WORKING px) of the region under ``point`` that stands out from the
    local ground, or None when nothing there does.

    The ground level is the median of a window around the point; pixels that differ from it
    by more than the larger of a fixed floor and half the difference at the point form the
    mask, and the connected component under (or nearest to) the point is the blob.
    ``content``: ``(x0, y0, x1, y1)`` of the frame's own pixels in ``working`` (the letterbox's
    padding, replicated edge pixels, lies outside it); None: all of it. The window lies
    inside it.
    """
    window_w, window_h = config.tap_window
    half_w, half_h = window_w // 2, window_h // 2
    left, top, right, bottom = content or (0, 0, working.shape[1], working.shape[0])
    # a point off the frame (a person half out of it, or a tap carried out by the camera's
    # motion) is measured at the nearest pixel of the frame
    x = int(np.clip(round(point[0]), left, right - 1))
    y = int(np.clip(round(point[1]), top, bottom - 1))
    # A window the frame's edge would cut is moved inside it instead, whole: cut, it is as
    # narrow as the tap is near the edge, and a person cut by the edge with their shadow
    # beside them runs out of it like ground texture (a walker half out of the left edge of
    # person12's view: the tap found nothing). Nor does it reach into the letterbox's
    # padding, whose replicated edge pixels are streaks the person at the edge joins.
    x0 = max(min(x - half_w, right - window_w), left)
    y0 = max(min(y - half_h, bottom - window_h), top)
    x1, y1 = min(x0 + window_w, right), min(y0 + window_h, bottom)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    window = cv2.GaussianBlur(working[y0:y1, x0:x1], (3, 3), 0).astype(np.float32)
    difference = window - float(np.median(window))
    px, py = x - x0, y - y0
    core = difference[max(py - 2, 0) : py + 3, max(px - 2, 0) : px + 3]
    at_point = float(core.flat[np.argmax(np.abs(core))])
    if abs(at_point) < config.tap_min_contrast:
        return None
    # Both polarities: a person is often a light shirt over dark legs beside a dark shadow.
    mask = np.abs(difference) > max(config.tap_min_contrast, 0.5 * abs(at_point))
    mask = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    if count <= 1:
        return None
    near = labels[max(py - 2, 0) : py + 3, max(px - 2, 0) : px + 3]
    ids = [i for i in np.unique(near) if i != 0]
    if not ids:
        return None
    best = max(ids, key=lambda i: stats[i, cv2.CC_STAT_AREA])
    bx, by, bw, bh = stats[best, :4]
    if bw >= window.shape[1] - 2 or bh >= window.shape[0] - 2:
        return None  # runs out of the window: ground texture, not an object
    low, high = config.tap_size_limits
    centre = np.array([x0 + bx + (bw - 1) / 2.0, y0 + by + (bh - 1) / 2.0])
    if bw > config.tap_max_aspect * bh:
        # Wider than a person: the blob holds the cast shadow too. Keep a person-shaped box
        # on the tapped column; the operator tapped the person, not the shadow.
        bw = config.tap_max_aspect * bh
        centre[0] = point[0]
    # A shadow cast below (or above) the person makes the blob reach much farther from the
    # tap on that side (person12 frames 125-200: 63-69 px for a 42-px person, centred 11 px
    # below them). The operator tapped the person: the box reaches no farther on the long
    # side than on the short one, but may be w / tap_min_aspect tall, then growing from the
    # short side's end (a tap on the head).
    top, bottom = y0 + by - 0.5, y0 + by + bh - 0.5
    up, down = point[1] - top, bottom - point[1]
    tallest = max(2.0 * min(up, down), bw / config.tap_min_aspect)
    if bh > tallest and min(up, down) > 0:
        bh = tallest
        if 2.0 * min(up, down) >= bw / config.tap_min_aspect:
            centre[1] = point[1]
        else:
            centre[1] = top + bh / 2.0 if up < down else bottom - bh / 2.0
    size = np.clip([bw, bh], low, high).astype(float)
    return np.array([*centre, *size])


def around_tap(
    point: np.ndarray, centre: np.ndarray, size: np.ndarray, config: AcquisitionConfig
) -> tuple[np.ndarray, np.ndarray]:
    """The box ``centre, size`` (WORKING px) re-centred on the tapped ``point`` where it lies
    off the box's centre by more than ``tap_recentre_offset`` of its size on either axis: the
    largest box centred on the point inside the box, at least ``tap_recentre_floor`` of its
    size per axis; else the box unchanged.

    Two people walking close together are often one detection and one blob, centred between
    them; the operator tapped one of them. Centred on the tap, the lock's template and its
    Kalman state start on that one, and keep to them when the two part. (A tap's lock on a
    colour frame skips this: :class:`emts.config.AcquisitionConfig`.)

    Example:
        >>> from emts.config import AcquisitionConfig
        >>> centre, size = around_tap(
        ...     np.array([94.0, 100.0]), np.array([100.0, 100.0]), np.array([24.0, 20.0]),
        ...     AcquisitionConfig(),
        ... )
        >>> centre.tolist(), size.tolist()
        ([94.0, 100.0], [12.0, 20.0])
    """
    offset = np.abs(np.asarray(point, float) - centre)
    if config.tap_recentre_offset <= 0 or np.all(offset <= config.tap_recentre_offset * size):
        return centre, size
    inside = np.maximum(size - 2.0 * offset, config.tap_recentre_floor * size)
    return np.asarray(point, float).copy(), inside


class LockAcquisition:
    """Turns operator taps and the auto-lock rule into lock decisions for the tracker.

    Args:
        auto_lock: lock on its own (§6.7) when there is no lock and no tap.
        verify_auto_locks: an auto-lock waits for the verifier (False when there is none).
        config: tap and auto-lock parameters.
    """

    def __init__(
        self,
        auto_lock: bool = True,
        verify_auto_locks: bool = True,
        config: AcquisitionConfig | None = None,
    ) -> None:
        self.auto_lock = auto_lock
        self.verify_auto_locks = verify_auto_locks
        self.config = config or AcquisitionConfig()
        self.reset()

    def reset(self) -> None:
        self._tap: Tap | None = None
        # a tap that found nothing yet, tried again: (the point, WORKING px of the last frame,
        # frames left, re-centre on the point, the last working frame)
        self._retry: tuple[np.ndarray, int, bool, np.ndarray] | None = None
        self._history: list[np.ndarray] = []  # auto-lock: recent top detections, WORKING px
        # a tap's lock made where nothing was detected, waiting for a detection:
        # (tapped point - lock centre, frames left, re-centre on the point, the lock's size)
        self._waiting: tuple[np.ndarray, int, bool, np.ndarray] | None = None
        self.provisional = False
        self.relocking = False  # the provisional lock is the tracker's re-lock of an auto-lock
        self.last_source: str | None = None

    def request(self, tap: Tap) -> None:
        """Queue an operator tap; it is applied on the next :meth:`step`."""
        self._tap = tap

    @property
    def pending(self) -> bool:
        """An operator tap is to be decided on the next :meth:`step` (a new one, or one that
        found nothing yet and is tried again)."""
        return self._tap is not None or self._retry is not None

    @property
    def waiting(self) -> bool:
        """A tap's lock made where nothing was detected is waiting for a detection: the next
        :meth:`step` wants the track's box (``track``)."""
        return self._waiting is not None

    def track_event(self, event: str | None) -> None:
        """The tracker's event this frame: its own re-lock of an automatic lock is provisional
        until the verifier accepts it, as the auto-lock itself was."""
        if event == "relock" and self.last_source == "auto" and self.verify_auto_locks:
            self.provisional = self.relocking = True

    def step(
        self,
        geometry: FrameGeometry,
        working: np.ndarray,
        motion: np.ndarray,
        candidates: list[Candidate],
        tracker_mode: Mode,
        p_human: float | None,
        colour: bool = False,
        track: tuple[np.ndarray, np.ndarray] | None = None,
        travel: float | None = None,
        faint: list[Candidate] | None = None,
    ) -> AcquisitionDecision:
        """Decide for this frame.

        Args:
            geometry: this frame's geometry.
            working: this frame's working frame.
            motion: Stage A's ``M_t`` on this frame.
            candidates: this frame's detections (WORKING px).
            tracker_mode: the tracker's mode after the previous frame.
            p_human: the verifier's probability if it classified the track on the previous
                frame, else None.
            colour: the frame has colour (:func:`emts.modality.frame_modality`; read where
                a tap is :attr:`pending`): a tap's box is then not re-centred on the point
                (:func:`around_tap`) unless ``tap_recentre_colour``.
            track: the locked track's (centre, size) after the previous frame (WORKING px
                of that frame), or None: after a tap that found no detection under the
                point, the lock may move onto the first detection under the same point of
                the track (``tap_wait_frames``).
            travel: with ``p_human``, the ground the track covered over the verifier's window,
                in its heights (:meth:`emts.stages.e_verify.VerificationSchedule.travel_now`); an
                auto-lock that went less than ``autolock_min_travel`` is released.
            faint: this frame's sightings below the detector's threshold (read where a tap is
                :attr:`pending`; down to ``tap_faint``): a tap with neither a detection nor a
                blob under the point takes the strongest of them under it.
        """
        outcome, command = None, None
        if self._tap is not None or self._retry is not None:
            outcome, command = self._tapped(
                geometry, working, motion, candidates, colour, faint or []
            )
            if command is not None:
                return AcquisitionDecision(lock=command, tap=outcome)
        decision = self._untapped(
            geometry, working, motion, candidates, tracker_mode, p_human, track, travel
        )
        if outcome is None:
            return decision
        refused = outcome if outcome == "no_target" else None
        return replace(decision, refused=refused, tap=outcome)

    def _tapped(
        self, geometry, working, motion, candidates, colour, faint
    ) -> tuple[str, LockCommand | None]:
        """This frame's tap (a new one, else the one tried again): ``("lock", its lock)``,
        ``("waiting", None)`` (tried again on the next frame) or ``("no_target", None)``
        (nothing there: what was locked, or waiting, stays so)."""
        if self._tap is not None:
            tap, self._tap = self._tap, None
            self._retry = None
            if tap.box is not None:
                return "lock", self._start(self._box_lock(tap, geometry, motion), None, True)
            point = geometry.points([tap.point], Frame.INPUT, Frame.WORKING)[0]
            if tap.on_last_frame:  # carried by this frame's camera motion
                point = motion[:, :2] @ point + motion[:, 2]
            left = self.config.tap_retry_frames
            recentre = not colour or self.config.tap_recentre_colour
        else:
            point, left, recentre, previous = self._retry
            point = _followed(previous, working, point, motion)
            left -= 1
        command = self._tap_lock(point, geometry, working, candidates, recentre, faint)
        if command is not None:
            self._retry = None
            return "lock", self._start(command, point, recentre)
        # (a copy: a caller's 640x512 gray frame is the working frame itself, and a camera
        # may fill the same buffer again)
        self._retry = (point, left, recentre, working.copy()) if left > 0 else None
        return ("waiting" if left > 0 else "no_target"), None

    def _untapped(
        self, geometry, working, motion, candidates, tracker_mode, p_human, track, travel
    ) -> AcquisitionDecision:
        """The decision of a frame without a tap's lock (see :meth:`step`)."""
        if self._waiting is not None:
            command = None
            if tracker_mode == "locked":
                command = self._waited_lock(geometry, working, motion, candidates, track)
            else:  # lost meanwhile: the track no longer says where the tapped point is
                self._waiting = None
            if command is not None:
                self.last_source = command.source
                return AcquisitionDecision(lock=command)
        if self.provisional:
            if tracker_mode == "search":
                self.provisional = self.relocking = False
            elif p_human is not None:
                self.provisional = self.relocking = False
                floor = self.config.autolock_min_travel
                still = floor is not None and travel is not None and travel < floor
                if p_human < self.config.autolock_threshold or still:
                    return AcquisitionDecision(release=True)
            return NOTHING
        if not self.auto_lock or tracker_mode != "search":
            return NOTHING
        return self._auto_lock(motion, candidates)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _box_lock(tap: Tap, geometry, motion) -> LockCommand:
        """The lock on a tap's box, as given (this frame's WORKING px)."""
        box = geometry.boxes([tap.box], Frame.INPUT, Frame.WORKING)[0]
        centre = box[:2] + box[2:] / 2
        if tap.on_last_frame:
            centre = motion[:, :2] @ centre + motion[:, 2]
        return LockCommand(centre, box[2:], None, "tap:box")

    def _tap_lock(
        self, point, geometry, working, candidates, recentre, faint=()
    ) -> LockCommand | None:
        """The lock for a tap at ``point`` (this frame's WORKING px), or None: nothing under
        the point."""
        c = self.config
        if not recentre:
            c = replace(c, tap_recentre_offset=0.0)
        command = self._point_lock(point, working, geometry, candidates, c)
        return command if command is not None else self._faint_lock(point, faint, c)

    def _start(self, command: LockCommand, point, recentre: bool) -> LockCommand:
        """The acquisition state a tap's lock starts (``point``: the tapped point, None for
        a box); returns ``command``."""
        self.provisional = self.relocking = False
        self._history = []
        self._waiting = None
        self.last_source = command.source
        if point is not None and command.embedding is None and self.config.tap_wait_frames > 0:
            # nobody detected under the finger yet (the first frame of a stream has no
            # motion): look for the detection under the same point of the track a while
            # (not where a detection was set aside as far wider than the person: the blob's
            # box with its embedding)
            size = np.asarray(command.size, float).copy()
            self._waiting = (point - command.centre, self.config.tap_wait_frames, recentre, size)
        return command

    def _waited_lock(self, geometry, working, motion, candidates, track) -> LockCommand | None:
        """Within ``tap_wait_frames`` frames of a tap that found nobody detected, the first
        detection under the tapped point (carried with the track: its offset from the lock's
        centre kept) ends the wait; the lock moves onto it where it overlaps the track's box
        by less than ``tap_wait_max_iou`` (the region under the finger held something else
        than the person the detector sees), and not onto a slice of the tapped person (a
        detection at least ``tap_wait_part_width`` of the tapped lock's width whose box, as the
        lock would take it, is under ``tap_wait_min_height`` of its height). None: no new lock
        this frame."""
        offset, left, recentre, tapped = self._waiting
        self._waiting = (offset, left - 1, recentre, tapped) if left > 1 else None
        if track is None:
            return None
        as_detected = replace(self.config, tap_recentre_offset=0.0)
        centre = motion[:, :2] @ track[0] + motion[:, 2]  # last frame's track, carried
        point = centre + offset
        command = self._point_lock(point, working, geometry, candidates, as_detected)
        if command is None or command.source != "tap:detection":
            return None
        self._waiting = None
        box = np.array([*(command.centre - command.size / 2), *command.size])
        held = np.array([[*(centre - track[1] / 2), *track[1]]])
        if box_iou(box, held)[0] >= self.config.tap_wait_max_iou:
            return None  # the lock holds what the detector sees
        width = float(command.size[0])  # (as detected)
        if recentre:  # without colour, on the tapped point (around_tap), as a tap's lock is
            detected = float(np.prod(command.size))
            centre, size = around_tap(point, command.centre, command.size, self.config)
            command = replace(command, centre=centre, size=size)
            # ... and where that box lies within the track's and the detection is about as
            # large as the track's box, the lock holds the region the detector sees (a gray
            # person12 tap: the detection of walker and shadow, 13 px to the shadow's side,
            # recentred to half the walker's box in the middle of the lock's; the look
            # captured there slid onto the shadow, lock recall 0.39). A detection far smaller
            # than the track's box still moves it (a blob grown into its surroundings).
            hold = self.config.tap_wait_hold_area
            large = detected >= hold * float(np.prod(track[1]))
            if hold > 0 and large and _within(centre, size, held[0]):
                return None
        # a detection about as wide as the tapped person whose box is far shorter is a part of
        # them (the upper body of a walker blurred by a gust, the tapped point -- their middle
        # -- at its lower edge: re-centred there, a 16x16 sliver of a 24x54 walker; the track
        # held it and slid off them). A blob grown into its surroundings (thermal: 36x40 for
        # a 13x19 person beside another) is wider than the person detected in it: moved
        c = self.config
        sliced = width >= c.tap_wait_part_width * float(tapped[0])
        if sliced and float(command.size[1]) < c.tap_wait_min_height * float(tapped[1]):
            return None
        return replace(command, moves=True)

    def _point_lock(self, point, working, geometry, candidates, c) -> LockCommand | None:
        """The lock for a tap at ``point`` (WORKING px): the detection under it, the blob
        under it, or None when there is neither (see the module's doc)."""
        under = _under(point, candidates, c.tap_detection_margin)
        blob = blob_box(working, point, c, geometry.input_to_working.content_box)
        if blob is not None and np.hypot(*(blob[:2] - point)) > blob[3]:
            blob = None  # not the person under the point
        if under and blob is not None:
            # a detection whose centre lies off the blob under the finger is the neighbour's
            # (two people close together, the tapped one undetected this frame)
            reach = blob[2:] / 2 * (1 + c.tap_detection_margin)
            under = [k for k in under if np.all(np.abs(k.centre - blob[:2]) <= reach)]
        if under:
            nearest = min(under, key=lambda k: float(np.hypot(*(k.centre - point))))
            if blob is None or nearest.size[0] <= c.tap_detection_max_widen * blob[2]:
                centre, size = around_tap(point, nearest.centre, nearest.size, c)
                return LockCommand(centre, size, nearest.embedding, "tap:detection")
            # the detection's box is far wider than the person: the blob's box, its embedding
            centre, size = around_tap(point, blob[:2], blob[2:], c)
            return LockCommand(centre, size, nearest.embedding, "tap:blob")
        if blob is not None:
            centre, size = around_tap(point, blob[:2], blob[2:], c)
            return LockCommand(centre, size, None, "tap:blob")
        return None

    @staticmethod
    def _faint_lock(point, faint, c) -> LockCommand | None:
        """The lock on the strongest faint sighting (at least ``tap_faint``) whose box holds
        ``point`` (grown by ``tap_detection_margin``), or None: its size, centred on the
        point (a box the detector barely sees is loose: on person12 at 1280x720 the walker in
        the canopy's shade was sighted on their legs and shadow, 23 px below the finger, and
        the lock followed the shadow)."""
        if c.tap_faint <= 0:
            return None
        strong = [k for k in faint if k.score >= c.tap_faint]
        under = _under(point, strong, c.tap_detection_margin)
        if not under:
            return None
        best = max(under, key=lambda k: k.score)
        return LockCommand(np.asarray(point, float), best.size.copy(), best.embedding, "tap:faint")

    def _auto_lock(self, motion: np.ndarray, candidates: list[Candidate]) -> AcquisitionDecision:
        # §6.7: the strongest detection, spatially stable for 3 consecutive frames.
        if not candidates:
            self._history = []
            return NOTHING
        top = max(candidates, key=lambda k: k.score)
        moved = [motion[:, :2] @ c + motion[:, 2] for c in self._history]
        if moved and np.hypot(*(moved[-1] - top.centre)) > max(top.size[1], 8.0):
            moved = []
        self._history = [*moved, top.centre][-self.config.autolock_frames :]
        if len(self._history) < self.config.autolock_frames:
            return NOTHING
        self._history = []
        self.provisional = self.verify_auto_locks
        self.last_source = "auto"
        return AcquisitionDecision(lock=LockCommand.from_candidate(top, "auto"))


def _within(centre: np.ndarray, size: np.ndarray, box: np.ndarray) -> bool:
    """Does the box ``size`` around ``centre`` lie wholly within ``box`` ([x, y, w, h])?"""
    low, high = centre - size / 2, centre + size / 2
    return bool(np.all(low >= box[:2]) and np.all(high <= box[:2] + box[2:]))
