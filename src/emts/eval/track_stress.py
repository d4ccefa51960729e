"""Three stress protocols of ``emts eval track`` (:mod:`emts.eval.track_eval` applies them):

* **leave-and-return** (:func:`plan_leave`): a camera window of half the frame's width and
  height (zoomed in 2x: cropped and resized back to the input size) follows the person, pans
  so that they leave through one edge of the view, keeps them out of view while it pans
  around a corner, then brings them back in through another place and frames them again.
  The window's path is planned from the ground truth (a rate- and acceleration-limited pan
  toward the person's position shifted by the path's offset), so it works on any labelled
  clip where the geometry allows it.
* **enter** (:func:`plan_enter`): the same window starts with the person cut by one of its
  edges (a share :data:`ENTER_VISIBLE` of their box inside: the operator taps the part in
  view), then pans at the same limits to frame them and follows them -- a person walking
  into the view, or one the camera has not framed yet.
* **look-alike** (:func:`plan_lookalike`, :func:`paste_lookalike`): a second copy of the person
  (their current appearance under a feathered elliptical mask) walks across the tracked
  person along a straight path in the scene, at the person's own speed, perpendicular to
  their direction, crossing their position at the span's middle frame.

Both are deterministic. Boxes are ``[x, y, w, h]`` in pixels, edges (not pixel centres).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from emts.errors import BadInputError

# ----------------------------------------------------------------------------- leave
LEAVE_ZOOM = 2.0  # the window is 1 / LEAVE_ZOOM of the frame's width and height
# The pan, in output px (the delivered frame's) per second, on a frame wider than 640 px
# scaled with its width (a path is then the same at any such resolution of the same clip):
# 12 px a frame at 10 fps, 4 at 30, a gentle gimbal pan; a walker crosses the view at about
# 90 px/s at 10 fps on person12.
LEAVE_MAX_PAN = 120.0
LEAVE_MAX_ACCEL = 300.0  # output px/s^2: 3 px a frame per frame at 10 fps
LEAVE_REFERENCE_WIDTH = 640.0
LEAVE_VISIBLE_SHARE = 0.5  # a box with less of its area inside the window is out of view
_LAG = 0.5  # s: the pan closes the distance to its target with this time constant
_AROUND_SPEED = 1.0  # the target's speed around the corner, a share of LEAVE_MAX_PAN
_FOLLOW_MIN = 0.5  # s the window follows the person before the exit pan may start
_EXIT_MAX = 9.0  # s the exit pan may take before the person is out of view
_LONGEST = 6.0  # s out of view at the most
_SHORTEST_CLIP = 4.0  # s of labelled frames from the lock frame that any path needs
_FRAMED = 0.3  # the person is framed again within this share of the way to the edges
_MARGIN = 0.1  # out of view: the box this share of its height beyond the edge
_AFTER_FRAMED = 3  # frames after framing the path needs before the last frame evaluated


@dataclass(frozen=True)
class LeavePathSpec:
    """One leave-and-return path. Points are the person's centre relative to the window's
    centre, in window half-sizes (x right, y down); a coordinate of +-1 means "beyond that
    edge, the box wholly out of the view by a margin", both +-1 a point beyond that corner on
    its diagonal. ``(-1, -0.6)``: just past the left edge, in its upper part."""

    exit: str  # the edge or corner the person leaves through
    entry: str  # the edge or corner they come back through
    out: tuple[float, float]  # the exit pan's target
    back: tuple[float, float]  # where the window takes the person around to, out of view


LEAVE_PATHS = {  # 1-5 fit person12 (a walker in the frame's upper half); 6 needs the lower
    1: LeavePathSpec("left", "top", (-1, -0.55), (-0.75, -1)),
    2: LeavePathSpec("right", "top", (1, -0.55), (0.7, -1)),
    3: LeavePathSpec("top", "left", (-0.7, -1), (-1, -0.6)),
    4: LeavePathSpec("top-left", "left", (-1, -1), (-1, 0)),
    5: LeavePathSpec("top-right", "right", (1, -1), (1, 0)),
    6: LeavePathSpec("bottom", "left", (-0.6, 1), (-1, 0.5)),
}


def describe_leave_path(path: int) -> str:
    spec = LEAVE_PATHS[path]
    return f"{path}: out through the {_place(spec.exit)}, back through the {_place(spec.entry)}"


def _place(name: str) -> str:
    return f"{name} corner" if "-" in name else f"{name} edge"


@dataclass
class WindowPlan:
    """A planned camera window: per frame its top-left corner in the source frame.

    Attributes:
        size: the source frames' (w, h); the window is ``size / zoom``.
        corners: ``(n, 2)`` window top-left corners, source px, one per frame of the truth.
        sheet: frames worth a thumbnail.
    """

    size: tuple[int, int]
    zoom: float
    corners: np.ndarray

    @property
    def window(self) -> tuple[float, float]:
        return self.size[0] / self.zoom, self.size[1] / self.zoom

    @property
    def hidden(self) -> tuple[int, int] | None:
        """The frames (inclusive) the plan takes the person out of view on; None: none."""
        return None

    @property
    def sheet(self) -> list[int]:
        return []

    def corner(self, index: int) -> np.ndarray:
        return self.corners[min(index, len(self.corners) - 1)]

    def crop(self, frame: np.ndarray, index: int) -> np.ndarray:
        """The window of frame ``index`` resized to the frame's size (bilinear, as
        ``cv2.resize`` with INTER_LINEAR samples it, at sub-pixel positions)."""
        height, width = frame.shape[:2]
        zoom = self.zoom
        x0, y0 = self.corner(index)
        matrix = np.float32(
            [[zoom, 0, zoom * (0.5 - x0) - 0.5], [0, zoom, zoom * (0.5 - y0) - 0.5]]
        )
        return cv2.warpAffine(
            frame, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )

    def map_box(self, box: np.ndarray, index: int) -> np.ndarray:
        """``box`` (source px) in the delivered frame: truncated to the window, NaN when less
        than :data:`LEAVE_VISIBLE_SHARE` of it is inside."""
        if not np.all(np.isfinite(box)):
            return np.full(4, np.nan)
        share, clipped, _ = _inside(box, self.corner(index), self.window)
        if share < LEAVE_VISIBLE_SHARE:
            return np.full(4, np.nan)
        x0, y0 = self.corner(index)
        x, y, w, h = clipped
        return np.array([(x - x0) * self.zoom, (y - y0) * self.zoom, w * self.zoom, h * self.zoom])

    def max_pan(self) -> float:
        """The largest window move between consecutive frames, output px."""
        if len(self.corners) < 2:
            return 0.0
        return float(np.hypot(*np.diff(self.corners, axis=0).T).max() * self.zoom)


@dataclass(kw_only=True)
class LeavePlan(WindowPlan):
    """A leave-and-return window path (:func:`plan_leave`).

    Attributes:
        path: the path's number in :data:`LEAVE_PATHS`.
        start: the frame the exit pan starts; ``span``: the frames out of view (inclusive);
            ``framed``: the first frame the person is framed again.
        exit, entry: where the person actually left and came back (edge or corner names).
        moments: frames worth a thumbnail.
    """

    path: int
    start: int
    span: tuple[int, int]
    framed: int
    exit: str
    entry: str
    moments: list[int] = field(default_factory=list)

    @property
    def hidden(self) -> tuple[int, int]:
        return self.span

    @property
    def sheet(self) -> list[int]:
        return self.moments

    def summary(self) -> dict:
        return {
            "path": self.path,
            "planned": describe_leave_path(self.path),
            "exit": _place(self.exit),
            "entry": _place(self.entry),
            "pan_from": self.start,
            "out_of_view": list(self.span),
            "framed_again": self.framed,
            "zoom": self.zoom,
            "max_pan_px": round(self.max_pan(), 2),
        }


def _inside(box, corner, window) -> tuple[float, np.ndarray, set[str]]:
    """(share of the box's area inside the window, the box truncated to it, the sides where
    it sticks out)."""
    x, y, w, h = (float(v) for v in box)
    x0, y0 = float(corner[0]), float(corner[1])
    x1, y1 = x0 + window[0], y0 + window[1]
    left, top, right, bottom = max(x, x0), max(y, y0), min(x + w, x1), min(y + h, y1)
    iw, ih = max(0.0, right - left), max(0.0, bottom - top)
    sides = set()
    if x < x0:
        sides.add("left")
    if x + w > x1:
        sides.add("right")
    if y < y0:
        sides.add("top")
    if y + h > y1:
        sides.add("bottom")
    return iw * ih / (w * h), np.array([left, top, iw, ih]), sides


def _name(sides: set[str]) -> str:
    vertical = [s for s in ("top", "bottom") if s in sides]
    horizontal = [s for s in ("left", "right") if s in sides]
    return "-".join(vertical[:1] + horizontal[:1]) or "none"


class _Pan:
    """The window's centre, moved toward a target with a capped speed and acceleration and
    held inside the frame."""

    def __init__(self, centre, size, window, zoom, fps) -> None:
        self.lo = (window[0] / 2, window[1] / 2)
        self.hi = (size[0] - window[0] / 2, size[1] - window[1] / 2)
        scale = max(1.0, size[0] / LEAVE_REFERENCE_WIDTH)
        self.speed = scale * LEAVE_MAX_PAN / zoom / fps  # source px per frame
        self.accel = scale * LEAVE_MAX_ACCEL / zoom / fps**2
        self.gain = 1 - math.exp(-1 / (_LAG * fps))
        self.c = [min(max(centre[i], self.lo[i]), self.hi[i]) for i in (0, 1)]
        self.v = [0.0, 0.0]

    def copy(self) -> _Pan:
        other = object.__new__(_Pan)
        other.__dict__.update(self.__dict__)
        other.c, other.v = list(self.c), list(self.v)
        return other

    def step(self, target, velocity=(0.0, 0.0)) -> None:
        """One frame toward ``target`` moving at ``velocity`` (source px per frame)."""
        want = [velocity[i] + (target[i] - self.c[i]) * self.gain for i in (0, 1)]
        want = _capped(want, self.speed)
        change = _capped([want[i] - self.v[i] for i in (0, 1)], self.accel)
        self.v = _capped([self.v[i] + change[i] for i in (0, 1)], self.speed)
        for i in (0, 1):  # brake before the frame's edge: a gimbal does not stop dead
            room = self.hi[i] - self.c[i] if self.v[i] > 0 else self.c[i] - self.lo[i]
            a = self.accel  # the fastest speed that can still stop within the room left
            brake = math.sqrt(a * a / 4 + 2 * a * max(room, 0.0)) - a / 2
            self.v[i] = max(-brake, min(brake, self.v[i]))
            self.c[i] += self.v[i]
            if not self.lo[i] <= self.c[i] <= self.hi[i]:
                self.c[i] = min(max(self.c[i], self.lo[i]), self.hi[i])
                self.v[i] = 0.0


def _capped(vector, limit: float) -> list[float]:
    norm = math.hypot(*vector)
    return list(vector) if norm <= limit else [v * limit / norm for v in vector]


def _point(point, half, box_half, margin) -> np.ndarray:
    """A path point (window half-sizes, +-1 = beyond that edge) as an offset in px."""
    x, y = point
    if abs(x) == 1 and abs(y) == 1:  # beyond the corner, on its diagonal
        k = 1 + max((box_half[i] + margin) / half[i] for i in (0, 1))
        return np.array([x * k * half[0], y * k * half[1]])
    out = [half[i] + box_half[i] + margin for i in (0, 1)]
    return np.array([v * (out[i] if abs(v) == 1 else half[i]) for i, v in enumerate(point)])


def _around(start, end, half, box_half, margin) -> list[np.ndarray]:
    """The way (px offsets) from path point ``start`` to ``end`` that stays out of view:
    through the corner between them when they lie beyond different edges."""
    points = [_point(start, half, box_half, margin)]
    corner = [start[i] if abs(start[i]) == 1 else end[i] for i in (0, 1)]
    if all(abs(v) == 1 for v in corner) and tuple(corner) not in (tuple(start), tuple(end)):
        points.append(  # just beyond both edges
            np.array([corner[i] * (half[i] + box_half[i] + margin) for i in (0, 1)])
        )
    points.append(_point(end, half, box_half, margin))
    return points


def _along(points: list[np.ndarray], distance: float) -> np.ndarray:
    for a, b in zip(points, points[1:], strict=False):
        length = float(np.hypot(*(b - a)))
        if distance <= length:
            return a + (b - a) * (distance / max(length, 1e-9))
        distance -= length
    return points[-1]


def _length(points: list[np.ndarray]) -> float:
    return sum(float(np.hypot(*(b - a))) for a, b in zip(points, points[1:], strict=False))


def plan_leave(
    truth: np.ndarray,
    size: tuple[int, int],
    path: int,
    lock_frame: int,
    last: int,
    fps: float,
) -> LeavePlan:
    """Plan leave-and-return path ``path`` over frames ``lock_frame``..``last`` of ``truth``
    (source px, NaN = absent) for ``size`` (w, h) frames at ``fps``. The window follows the
    person, then pans toward the path's exit point; the plan takes the exit-pan start that
    gives the path's exit, a stretch out of view, the path's re-entry and framing with the
    quickest exit (then the earliest start; starts up to ``_EXIT_MAX`` after the first one
    that works are tried). Before the lock frame the window stands centred on the person's
    lock-frame box; after the path it follows them (and stands still where they are not
    labelled).

    Raises:
        BadInputError: an unknown path, the person unlabelled where the path needs them, a
            clip too short for the path, or a person the window cannot take out of view
            through the path's edge (it stays inside the frame).
    """
    if path not in LEAVE_PATHS:
        raise BadInputError(
            f"--leave {path}: no such path; the paths are "
            + "; ".join(describe_leave_path(p) for p in LEAVE_PATHS)
        )
    spec = LEAVE_PATHS[path]
    n = len(truth)
    labelled, end = _labelled_from(
        truth, lock_frame, last, f"--leave {path}", "the window starts centred on them there"
    )
    need = round(_SHORTEST_CLIP * fps)
    if end - lock_frame < need:
        gap = "" if end >= min(last, n - 1) else f" (frame {end + 1} is not labelled)"
        raise BadInputError(
            f"--leave {path}: the person is labelled on frames {lock_frame}-{end} only{gap}; the "
            f"path needs them labelled on every frame it runs, at least {need + 1} frames from "
            "the lock frame"
        )
    zoom = LEAVE_ZOOM
    window = (size[0] / zoom, size[1] / zoom)
    centres = truth[:, :2] + truth[:, 2:] / 2
    velocities = _velocities(centres, lock_frame, end)
    geometry = (
        np.array(window) / 2,
        truth[lock_frame, 2:] / 2,
        _MARGIN * float(truth[lock_frame, 3]),
    )
    pan = _Pan(centres[lock_frame], size, window, zoom, fps)
    follow = {lock_frame: pan.copy()}
    seen = {lock_frame: _inside(truth[lock_frame], _corner(pan, window), window)}
    for t in range(lock_frame + 1, end + 1):
        pan.step(centres[t], velocities[t])
        follow[t] = pan.copy()
        seen[t] = _inside(truth[t], _corner(pan, window), window)
    why: dict[str, int] = {}
    best = None  # the quickest exit (frames from the pan's start), then the earliest
    for start in range(lock_frame + max(1, round(_FOLLOW_MIN * fps)), end):
        if best is not None and start > best[0] + _EXIT_MAX * fps:
            break
        if seen[start - 1][0] < LEAVE_VISIBLE_SHARE:
            why = {f"the window lost the person while following them (frame {start - 1})": 1}
            break
        outcome = _try_leave(
            spec, start, follow[start - 1], truth, (centres, velocities), geometry, end, fps
        )
        if not isinstance(outcome, str) and outcome[2] + _AFTER_FRAMED > last:
            outcome = "the clip ended before the person was framed again"
        if isinstance(outcome, str):
            why[outcome] = why.get(outcome, 0) + 1
        elif best is None or outcome[1][0] - start < best[1][1][0] - best[0]:
            best = start, outcome
    if best is not None:
        start, (corners, span, framed, exit_name, entry_name) = best
        full = np.empty((n, 2))
        full[: lock_frame + 1] = _corner(follow[lock_frame], window)
        for t in range(lock_frame + 1, start):
            full[t] = _corner(follow[t], window)
        full[start : framed + 1] = corners
        pan = _Pan((0, 0), size, window, zoom, fps)
        pan.c = list(corners[-1] + np.array(window) / 2)
        pan.v = list(corners[-1] - corners[-2])
        _follow(pan, full, framed + 1, centres[framed], (centres, velocities), labelled, end)
        a, b = span
        sheet = [lock_frame, max(start, a - 2), (a + b) // 2, b + 1, (b + 1 + framed) // 2, framed]
        return LeavePlan(
            size=size,
            zoom=zoom,
            corners=full,
            path=path,
            start=start,
            span=span,
            framed=framed,
            exit=exit_name,
            entry=entry_name,
            moments=sorted(set(sheet)),
        )
    common = max(why, key=why.get) if why else "too few frames"
    raise BadInputError(
        f"--leave {describe_leave_path(path)}: not possible on frames {lock_frame}-{end} of this "
        f"clip (mostly: {common}). The window is 1/{zoom:g} of the frame and stays inside it, so "
        f"a person can leave it through the {_place(spec.exit)} only while they are in that part "
        "of the frame; try another path"
    )


def _follow(pan: _Pan, corners, first: int, target, motion, labelled, end: int) -> None:
    """From frame ``first`` on, ``pan`` follows the person -- their centre and, up to frame
    ``end``, their velocity; where they are not labelled, toward where they last were (at
    first ``target``) -- writing the window's top-left corners into ``corners``."""
    centres, velocities = motion
    window = (2 * pan.lo[0], 2 * pan.lo[1])
    for t in range(first, len(corners)):
        velocity = (0.0, 0.0)
        if labelled[t]:
            target = centres[t]
            velocity = velocities[t] if t <= end else velocity
        pan.step(target, velocity)
        corners[t] = _corner(pan, window)


def _labelled_from(
    truth: np.ndarray, lock_frame: int, last: int, option: str, why: str
) -> tuple[np.ndarray, int]:
    """(which frames of ``truth`` are labelled, the last frame of the unbroken run of them
    from ``lock_frame``, ``last`` at most). Raises BadInputError where the lock frame is not
    labelled (``option``: the command line's; ``why`` a window plan needs it)."""
    n = len(truth)
    labelled = np.isfinite(truth).all(axis=1)
    if not (0 <= lock_frame < n and labelled[lock_frame]):
        raise BadInputError(
            f"{option}: the person is not labelled on the lock frame {lock_frame}; {why}"
        )
    end = lock_frame
    while end + 1 <= min(last, n - 1) and labelled[end + 1]:
        end += 1
    return labelled, end


def _corner(pan: _Pan, window) -> np.ndarray:
    return np.array([pan.c[0] - window[0] / 2, pan.c[1] - window[1] / 2])


def _allowed_entries(spec: LeavePathSpec) -> set[str]:
    allowed = {spec.entry}
    if "-" in spec.entry:
        allowed |= set(spec.entry.split("-"))
    return allowed - {spec.exit}


def _velocities(centres: np.ndarray, first: int, last: int) -> np.ndarray:
    """The person's velocity per frame (px per frame) over ``first``..``last``, smoothed over
    5 frames; zero elsewhere."""
    out = np.zeros_like(centres)
    if last > first:
        track = centres[first : last + 1]
        kernel = np.ones(5) / 5
        padded = np.pad(track, ((2, 2), (0, 0)), mode="edge")
        smooth = np.stack([np.convolve(padded[:, i], kernel, "valid") for i in (0, 1)], 1)
        out[first : last + 1] = np.gradient(smooth, axis=0)
    return out


def _try_leave(spec, start, pan, truth, motion, geometry, end, fps):
    """The path with its exit pan starting at ``start``: (corners, span, framed, exit, entry)
    or why it fails."""
    centres, velocities = motion
    half = geometry[0]
    window = 2 * half
    pan = pan.copy()
    out = _point(spec.out, *geometry)
    around = _around(spec.out, spec.back, *geometry)
    step = _AROUND_SPEED * pan.speed
    around_frames = math.ceil(_length(around) / step)
    corners, sides = [], []
    gone = back = framed = None
    for t in range(start, end + 1):
        if gone is None:
            offset, moving = out, np.zeros(2)
        elif t - gone < around_frames:
            offset = _along(around, (t - gone + 1) * step)
            moving = offset - _along(around, (t - gone) * step)
        else:
            offset, moving = np.zeros(2), np.zeros(2)
        pan.step(centres[t] - offset, velocities[t] - moving)
        corner = _corner(pan, window)
        corners.append(corner)
        share, _, stuck_out = _inside(truth[t], corner, window)
        sides.append(stuck_out)
        visible = share >= LEAVE_VISIBLE_SHARE
        if gone is None:
            if not visible:
                gone = t
            elif t - start > _EXIT_MAX * fps:
                return "the exit pan did not take the person out of view"
        elif back is None:
            if visible:
                if t - gone < around_frames:
                    return "the person came back into view while the window went around"
                back = t
            elif t - gone > _LONGEST * fps:
                return "the person did not come back into view"
        else:
            if not visible:
                return "the person left the view again after coming back"
            relative = (centres[t] - (corner + half)) / half
            if np.all(np.abs(relative) <= _FRAMED):
                framed = t
                break
    if framed is None:
        return "the clip ended before the person was framed again"
    i = gone - start
    exit_name = _name(sides[i - 1] | (sides[i - 2] if i >= 2 else set()))
    j = back - start
    entry_name = _name(sides[j] | (sides[j + 1] if j + 1 < len(sides) else set()))
    if exit_name != spec.exit:
        return f"the person left through the {_place(exit_name)}"
    if entry_name not in _allowed_entries(spec):
        return f"the person came back through the {_place(entry_name)}"
    return np.array(corners), (gone, back - 1), framed, exit_name, entry_name


# ----------------------------------------------------------------------------- enter
ENTER_EDGES = ("left", "right", "top", "bottom")
ENTER_VISIBLE = 0.6  # the share of the person's box inside the window on the lock frame
_ENTER_SLACK = 0.1  # ... give or take this much where the frame's edge holds the window back


@dataclass(kw_only=True)
class EnterPlan(WindowPlan):
    """A window path that starts with the person cut by one of its edges (:func:`plan_enter`).

    Attributes:
        edge: the window's edge that cuts the person on the lock frame.
        visible: the share of their box inside the window then.
        framed: the first frame the person is framed (their centre within
            :data:`_FRAMED` of the window's half-sizes from its centre); None: not before
            the truth ends.
        lock_frame: the frame the window starts from.
    """

    edge: str
    visible: float
    framed: int | None
    lock_frame: int

    @property
    def sheet(self) -> list[int]:
        framed = self.framed if self.framed is not None else self.lock_frame
        return sorted({self.lock_frame, (self.lock_frame + framed) // 2, framed})

    def summary(self) -> dict:
        return {
            "edge": _place(self.edge),
            "visible_on_lock_frame": round(self.visible, 3),
            "framed": self.framed,
            "zoom": self.zoom,
            "max_pan_px": round(self.max_pan(), 2),
        }


def plan_enter(
    truth: np.ndarray,
    size: tuple[int, int],
    edge: str,
    lock_frame: int,
    last: int,
    fps: float,
) -> EnterPlan:
    """Plan an enter path over frames ``lock_frame``..``last`` of ``truth`` (source px, NaN =
    absent) for ``size`` (w, h) frames at ``fps``: on the lock frame the window
    (1 / :data:`LEAVE_ZOOM` of the frame) holds :data:`ENTER_VISIBLE` of the person's box,
    the rest beyond ``edge``; from the next frame on it pans toward the person at the leave
    paths' speed and acceleration limits, frames them and follows them (and stands still
    where they are not labelled). Before the lock frame it stands where it starts.

    Raises:
        BadInputError: an unknown edge, the person unlabelled on the lock frame, or a person
            the window cannot cut that way there (it stays inside the frame: a person in the
            frame's upper half cannot be cut by the window's bottom edge).
    """
    if edge not in ENTER_EDGES:
        raise BadInputError(f"--enter {edge}: no such edge; the edges are {', '.join(ENTER_EDGES)}")
    n = len(truth)
    labelled, end = _labelled_from(
        truth, lock_frame, last, f"--enter {edge}", "the window starts from their box there"
    )
    zoom = LEAVE_ZOOM
    window = (size[0] / zoom, size[1] / zoom)
    centres = truth[:, :2] + truth[:, 2:] / 2
    box = truth[lock_frame]
    axis = 0 if edge in ("left", "right") else 1
    sign = -1.0 if edge in ("left", "top") else 1.0
    # the person's centre (ENTER_VISIBLE - 0.5) of their size inside the cutting edge
    start = centres[lock_frame].copy()
    start[axis] -= sign * (window[axis] / 2 - (ENTER_VISIBLE - 0.5) * box[2 + axis])
    pan = _Pan(start, size, window, zoom, fps)
    share, _, sides = _inside(box, _corner(pan, window), window)
    if sides != {edge} or abs(share - ENTER_VISIBLE) > _ENTER_SLACK:
        raise BadInputError(
            f"--enter {edge}: not possible on frame {lock_frame} of this clip (the window would "
            f"hold {share:.0%} of the person, cut by its {_name(sides)} edge). The window is "
            f"1/{zoom:g} of the frame and stays inside it, so its {edge} edge can cut a person "
            f"only while they are in that part of the frame; try another edge or lock frame"
        )
    velocities = _velocities(centres, lock_frame, end)
    corners = np.empty((n, 2))
    corners[: lock_frame + 1] = _corner(pan, window)
    _follow(pan, corners, lock_frame + 1, centres[lock_frame], (centres, velocities), labelled, end)
    half = np.array(window) / 2
    with np.errstate(invalid="ignore"):  # unlabelled frames: NaN, never framed
        framing = labelled & np.all(np.abs(centres - (corners + half)) <= _FRAMED * half, axis=1)
    framing[: lock_frame + 1] = False
    framed = int(np.argmax(framing)) if framing.any() else None
    return EnterPlan(
        size=size,
        zoom=zoom,
        corners=corners,
        edge=edge,
        visible=share,
        framed=framed,
        lock_frame=lock_frame,
    )


# ----------------------------------------------------------------------------- look-alike
_LOOKALIKE_MIN_SPEED = 1.0  # px per frame: a person standing still sends a copy walking slowly
_MASK_AXES = (0.62, 0.56)  # the mask's ellipse semi-axes, in box widths and heights
_MASK_FEATHER = 0.12  # its feathering (Gaussian sigma), in box widths


def chain(homographies: list[np.ndarray], a: int, t: int) -> np.ndarray:
    """Homography frame a -> frame t (t >= a) from frame-to-frame ones (t-1 -> t)."""
    h = np.eye(3)
    for i in range(a + 1, min(t, len(homographies) - 1) + 1):
        h = homographies[i] @ h
    return h


def carry(homographies: list[np.ndarray] | None, a: int, t: int) -> np.ndarray:
    """Homography frame a -> frame t, either order; identity without homographies."""
    if homographies is None:
        return np.eye(3)
    if t >= a:
        return chain(homographies, a, t)
    return np.linalg.inv(chain(homographies, t, a))


def _moved(h: np.ndarray, point) -> np.ndarray:
    x, y, w = h @ np.array([point[0], point[1], 1.0])
    return np.array([x / w, y / w])


@dataclass
class LookalikePlan:
    """A copy of the person crossing them on frames ``span``: its boxes (source px, one per
    frame of the span) and its path in the middle frame's scene coordinates."""

    span: tuple[int, int]
    boxes: np.ndarray
    direction_deg: float  # image angle of the copy's walk, degrees (0 = right, 90 = down)
    speed: float  # px per frame, in the middle frame's pixels
    person_direction_deg: float

    def box(self, index: int) -> np.ndarray | None:
        a, b = self.span
        return self.boxes[index - a] if a <= index <= b else None

    def summary(self) -> dict:
        return {
            "frames": list(self.span),
            "direction_deg": round(self.direction_deg, 1),
            "person_direction_deg": round(self.person_direction_deg, 1),
            "speed_px_per_frame": round(self.speed, 2),
        }


def require_labelled(truth: np.ndarray, span: tuple[int, int]) -> None:
    """A look-alike span needs the person labelled on each of its frames (BadInputError)."""
    a, b = span
    missing = [t for t in range(a, b + 1) if t >= len(truth) or not np.isfinite(truth[t]).all()]
    if missing:
        raise BadInputError(
            f"--lookalike {a}:{b}: the person is not labelled on frame {missing[0]}; the copy is "
            "cut from their box on every frame of the span"
        )


def plan_lookalike(
    truth: np.ndarray,
    span: tuple[int, int],
    homographies: list[np.ndarray] | None = None,
    turn: int = 1,
) -> LookalikePlan:
    """The copy's path on frames ``span`` (a, b): a straight walk in the scene (carried by the
    ``homographies``, frame t-1 -> t; None: a still camera) through the person's position on
    the middle frame, at the person's own speed over the span, at right angles to their
    direction (``turn`` +1: turned clockwise on the image, -1: counter-clockwise).

    Raises:
        BadInputError: the person is not labelled on every frame of the span.
    """
    require_labelled(truth, span)
    a, b = span
    mid = (a + b) // 2
    centres = truth[a : b + 1, :2] + truth[a : b + 1, 2:] / 2
    scene = np.array([_moved(carry(homographies, t, mid), centres[t - a]) for t in range(a, b + 1)])
    k = min(5, b - a)
    speed = _LOOKALIKE_MIN_SPEED
    heading = np.array([1.0, 0.0])
    if k > 0:
        steps = np.hypot(*(scene[k:] - scene[:-k]).T) / k
        speed = max(speed, float(np.mean(steps)))
        net = scene[-1] - scene[0]
        if np.hypot(*net) > 1e-6:
            heading = net / np.hypot(*net)
    direction = np.array([-heading[1], heading[0]]) * turn
    boxes = np.empty((b - a + 1, 4))
    for t in range(a, b + 1):
        where = scene[mid - a] + direction * speed * (t - mid)
        x, y = _moved(carry(homographies, mid, t), where)
        w, h = truth[t, 2:]
        boxes[t - a] = [x - w / 2, y - h / 2, w, h]
    return LookalikePlan(
        (a, b),
        boxes,
        math.degrees(math.atan2(direction[1], direction[0])),
        speed,
        math.degrees(math.atan2(heading[1], heading[0])),
    )


def paste_lookalike(frame: np.ndarray, source: np.ndarray, person, copy) -> np.ndarray:
    """``frame`` with the person of ``source`` (their box ``person``) pasted at box ``copy``
    under a feathered elliptical mask weighted by how much each pixel differs from the ground
    behind the person (inpainted), so that the ground around them barely comes along."""
    x, y, w, h = (float(v) for v in person)
    pad_x, pad_y = math.ceil(0.5 * w), math.ceil(0.3 * h)
    x0, y0 = max(0, math.floor(x) - pad_x), max(0, math.floor(y) - pad_y)
    x1 = min(source.shape[1], math.ceil(x + w) + pad_x)
    y1 = min(source.shape[0], math.ceil(y + h) + pad_y)
    if x1 <= x0 or y1 <= y0:
        return frame
    patch = np.ascontiguousarray(source[y0:y1, x0:x1])
    centre = (x + w / 2 - x0, y + h / 2 - y0)
    ellipse = np.zeros(patch.shape[:2], np.float32)
    cv2.ellipse(
        ellipse,
        (round(centre[0] * 4), round(centre[1] * 4)),
        (round(_MASK_AXES[0] * w * 4), round(_MASK_AXES[1] * h * 4)),
        0,
        0,
        360,
        1.0,
        -1,
        cv2.LINE_AA,
        2,
    )
    ellipse = cv2.GaussianBlur(ellipse, (0, 0), max(0.5, _MASK_FEATHER * w))
    hole = np.zeros(patch.shape[:2], np.uint8)
    cv2.rectangle(
        hole,
        (math.floor(x - x0 - 0.15 * w), math.floor(y - y0 - 0.05 * h)),
        (math.ceil(x + w - x0 + 0.15 * w), math.ceil(y + h - y0 + 0.05 * h)),
        255,
        -1,
    )
    ground = cv2.inpaint(patch, hole, 3, cv2.INPAINT_TELEA)
    diff = np.abs(patch.astype(np.float32) - ground.astype(np.float32))
    diff = diff.max(axis=2) if diff.ndim == 3 else diff
    person_alpha = cv2.GaussianBlur(np.clip((diff - 6.0) / 18.0, 0, 1), (0, 0), 0.8)
    alpha = ellipse * person_alpha
    cx, cy = float(copy[0]) + float(copy[2]) / 2, float(copy[1]) + float(copy[3]) / 2
    dx, dy = round(cx - (x + w / 2)), round(cy - (y + h / 2))
    return _blend(frame, patch, alpha, x0 + dx, y0 + dy)


def _blend(frame: np.ndarray, patch: np.ndarray, alpha: np.ndarray, x0: int, y0: int):
    """``patch`` over ``frame`` at (x0, y0) with per-pixel ``alpha`` (clipped to the frame)."""
    height, width = frame.shape[:2]
    ph, pw = patch.shape[:2]
    fx0, fy0, fx1, fy1 = max(0, x0), max(0, y0), min(width, x0 + pw), min(height, y0 + ph)
    if fx1 <= fx0 or fy1 <= fy0:
        return frame
    out = frame.copy()
    px0, py0 = fx0 - x0, fy0 - y0
    piece = patch[py0 : py0 + fy1 - fy0, px0 : px0 + fx1 - fx0].astype(np.float32)
    weight = alpha[py0 : py0 + fy1 - fy0, px0 : px0 + fx1 - fx0]
    if piece.ndim == 3:
        weight = weight[..., None]
    below = out[fy0:fy1, fx0:fx1].astype(np.float32)
    out[fy0:fy1, fx0:fx1] = np.clip(weight * piece + (1 - weight) * below + 0.5, 0, 255).astype(
        out.dtype
    )
    return out
