"""``emts eval track``: how well the lock holds on a real clip with ground truth.

Protocol (the real-footage issue's): a tap at the person's centre on the lock frame (or a
given point or box); **lock recall** = share of frames, from the tap on, where the person is
visible and the reported target centre lies within ``max(20 px, h/2)`` of the truth (input
px); **false-lock frames** = mode ``locked`` with the centre outside that radius, or with no
visible person at all; **box overlap** (:func:`box_overlap`) = how well the ``locked`` box
covers the person: UAV123's success AUC, the median IoU and the box's shape over theirs.
Stress tests, applied to the frames before the pipeline sees them:

* ``occlude=[(a, b)]``: the person walks behind an obstacle on frames a..b: a patch of the
  scene (inpainted at frame a from its surroundings, covering the person's whole path over
  a..b) anchored in the scene -- it moves with the camera, carried by a homography chain
  estimated with ORB features (independent of Stage A).
* ``remove=[(a, b)]``: the person is gone on frames a..b (inpainted out frame by frame, as if
  out of view).
* ``gust=SEED``: every frame (and its ground truth) is warped along a gusty camera path of
  the curriculum's camera model (``emts.synth.camera.CameraPath``).
* ``leave=PATH``: leave-and-return (:mod:`emts.eval.track_stress`): the frames are a camera
  window of half their width and height (zoomed in 2x) that follows the person, pans so that
  they leave the view through one edge or corner, goes around out of view and brings them
  back through another (path 1: out left, back through the top; 2: out right, back through
  the top; 3: out the top, back from the left; 4: out the top-left corner, back from the left;
  5: out the top-right corner, back from the right; 6: out the bottom, back from the left),
  then frames them again. The path is planned from the ground truth; the frames out of view
  are a hidden span of kind ``leave``; a box partly outside the window is truncated to it.
* ``enter=EDGE``: the same window starts with the person cut by its EDGE (``left``,
  ``right``, ``top``, ``bottom``; 60 % of their box in view: the tap lands on that part),
  then pans to frame them and follows them -- a person walking into the view. Nothing is
  hidden; the box is truncated to the window while they are cut by it.
* ``lookalike=[(a, b)]``: on frames a..b a copy of the person (cut from the current frame
  under a feathered mask) walks across them: a straight walk in the scene (carried by ORB
  homographies) at their own speed, at right angles to their direction, over their position
  on the span's middle frame. The person stays visible; per span it reports the frames the
  target was on the copy (nearer it than the person, and not a hit) and whether the span
  ended locked on the person.

For each hidden span it reports how many frames the mode stayed ``locked`` after the person
vanished, whether anything else was locked meanwhile, and the **recovery**: frames from the
person's reappearance until the lock is back on them.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.errors import BadInputError
from emts.eval.track_stress import (
    LookalikePlan,
    WindowPlan,
    chain,
    paste_lookalike,
    plan_enter,
    plan_leave,
    plan_lookalike,
    require_labelled,
)
from emts.geometry import box_iou
from emts.io import open_source
from emts.pipeline import Pipeline

log = logging.getLogger(__name__)

MIN_RADIUS = 20.0  # px: the success radius is max(20, h / 2) in the input's pixels
_OCCLUDER_MARGIN = 0.35  # the occluder covers the person's path grown by this fraction of h
_ORB_FEATURES = 1500
# the most frames a MOTChallenge file may number (9 h at 30 fps; its rows take 32 MB)
MAX_GT_FRAMES = 1_000_000
_REMOVE_MARGIN = 1.0  # a removed person's box grows by this fraction of h: their shadow goes
THUMBNAIL_SCALE = 0.5  # the contact sheet's thumbnails: delivered frames at this scale


# ----------------------------------------------------------------------------- ground truth
def read_ground_truth(path: str | Path, target_id: int | None = None) -> np.ndarray:
    """Boxes ``(n, 4)`` ``[x, y, w, h]`` per frame (input px, 0-based rows), NaN = absent.

    Reads UAV123/OTB files (one ``x,y,w,h`` line per frame; commas, tabs or spaces; ``NaN``
    for an absent target) or MOTChallenge ``gt.txt`` (``frame, id, x, y, w, h, ...`` with
    1-based frames; ``target_id`` picks the person).
    """
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{path}: no such ground-truth file")
    try:
        text = path.read_text()
    except UnicodeDecodeError as error:
        raise BadInputError(
            f"{path}: not a text file ({error.reason} at byte {error.start}); expected x,y,w,h "
            "lines (UAV123/OTB) or MOTChallenge rows"
        ) from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append([float(v) for v in line.replace(",", " ").split()])
        except ValueError:
            raise BadInputError(f"{path}:{number}: not numbers: {line.strip()!r}") from None
    if not rows:
        raise BadInputError(f"{path}: empty ground truth")
    widths = {len(r) for r in rows}
    if widths == {4}:
        boxes = np.array(rows, float)
    elif min(widths) >= 6:
        if target_id is None:
            raise BadInputError(f"{path}: MOTChallenge ground truth; say which --target-id")
        for number, r in enumerate(rows, 1):
            if not (1 <= r[0] <= MAX_GT_FRAMES and r[0] == int(r[0]) and np.isfinite(r[1])):
                raise BadInputError(
                    f"{path}: row {number}: frame {r[0]:g}, id {r[1]:g}; MOTChallenge frames are "
                    f"whole numbers from 1 to {MAX_GT_FRAMES:,}, ids finite numbers"
                )
        mine = [r for r in rows if int(r[1]) == target_id]
        if not mine:
            raise BadInputError(f"{path}: no rows for target id {target_id}")
        frame, rows_on_it = Counter(int(r[0]) for r in mine).most_common(1)[0]
        if rows_on_it > 1:
            raise BadInputError(
                f"{path}: target id {target_id} has {rows_on_it} rows on frame {frame}; a "
                "MOTChallenge id is one box a frame"
            )
        boxes = np.full((int(max(r[0] for r in rows)), 4), np.nan)
        for r in mine:
            boxes[int(r[0]) - 1] = r[2:6]
    else:
        raise BadInputError(f"{path}: expected x,y,w,h lines (UAV123/OTB) or MOTChallenge rows")
    # a row with a NaN or infinite value or an empty box is "absent"
    boxes[~np.all(np.isfinite(boxes), axis=1) | np.any(boxes[:, 2:] <= 0, axis=1)] = np.nan
    _require_a_usable_row(boxes, f"in {path} ")
    return boxes


def _require_a_usable_row(truth: np.ndarray, where: str = "") -> None:
    if not np.isfinite(truth).all(axis=1).any():
        raise BadInputError(
            f"no usable ground-truth row {where}({len(truth)} rows, each NaN, infinite or "
            "with a width or height <= 0)"
        )


def parse_span(text: str) -> tuple[int, int]:
    """``"A:B"`` -> (A, B), inclusive frame numbers (0-based, JSON frame numbers)."""
    first, sep, last = text.partition(":")
    try:
        a, b = int(first), int(last)
    except ValueError:
        raise BadInputError(f"{text!r}: expected A:B, two frame numbers") from None
    if not sep or a < 0 or b < a:
        raise BadInputError(f"{text!r}: expected A:B with 0 <= A <= B")
    return a, b


# ----------------------------------------------------------------------------- stress tests
class _SceneChain:
    """Frame-to-frame homographies from ORB features + RANSAC (independent of Stage A)."""

    def __init__(self) -> None:
        self.orb = cv2.ORB_create(_ORB_FEATURES)
        self.matcher = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True)
        self._previous = None

    def step(self, frame: np.ndarray) -> np.ndarray:
        """Homography previous frame -> this frame (identity on the first frame or failure)."""
        gray = frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        keypoints, descriptors = self.orb.detectAndCompute(gray, None)
        previous, self._previous = self._previous, (keypoints, descriptors)
        if previous is None or descriptors is None or previous[1] is None:
            return np.eye(3)
        matches = self.matcher.match(previous[1], descriptors)
        if len(matches) < 12:
            return np.eye(3)
        src = np.float32([previous[0][m.queryIdx].pt for m in matches])
        dst = np.float32([keypoints[m.trainIdx].pt for m in matches])
        h, _ = cv2.findHomography(src, dst, cv2.RANSAC, 3.0)
        return np.eye(3) if h is None else h


def _box_corners(box: np.ndarray) -> np.ndarray:
    x, y, w, h = box
    return np.float32([[x, y], [x + w, y], [x + w, y + h], [x, y + h]])


def _project(h: np.ndarray, points: np.ndarray) -> np.ndarray:
    return cv2.perspectiveTransform(points.reshape(-1, 1, 2).astype(np.float32), h).reshape(-1, 2)


def _inpaint(frame: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return cv2.inpaint(frame, mask, 5, cv2.INPAINT_TELEA)


def _person_mask(shape, box: np.ndarray, grow: float) -> np.ndarray:
    mask = np.zeros(shape[:2], np.uint8)
    if not np.all(np.isfinite(box)):
        return mask
    x, y, w, h = box
    pad = grow * h
    cv2.rectangle(
        mask,
        (int(math.floor(x - pad / 2)), int(math.floor(y - pad / 2))),
        (int(math.ceil(x + w + pad / 2)), int(math.ceil(y + h + pad / 2))),
        255,
        -1,
    )
    return mask


@dataclass
class StressedClip:
    """Frames with the stress tests applied, and the ground truth as the pipeline sees it.

    Attributes:
        truth: ``(n, 4)`` boxes in the delivered frames' px (NaN = absent).
        hidden: per frame, True where the person is hidden by a stress test.
        spans: the hidden spans, ``(kind, first, last)``.
        copies: ``(n, 4)`` the look-alike's boxes in the delivered frames' px (NaN: none), or
            None without look-alikes; ``lookalike_spans``: their frames ``(first, last)``.
        sheet: frames worth a thumbnail (the leave path's and look-alikes' moments).
    """

    truth: np.ndarray
    hidden: np.ndarray
    spans: list[tuple[str, int, int]] = field(default_factory=list)
    copies: np.ndarray | None = None
    lookalike_spans: list[tuple[int, int]] = field(default_factory=list)
    sheet: list[int] = field(default_factory=list)


def scene_homographies(frames: Iterable[np.ndarray], upto: int) -> list[np.ndarray]:
    """Homographies frame t-1 -> t for t = 0..upto (identity at 0), from ORB + RANSAC."""
    chain = _SceneChain()
    out = []
    for index, frame in enumerate(frames):
        if index > upto:
            break
        out.append(chain.step(np.ascontiguousarray(frame)))
    return out


def stressed_frames(
    frames: Iterable[np.ndarray],
    truth: np.ndarray,
    occlude: list[tuple[int, int]] = (),
    remove: list[tuple[int, int]] = (),
    gust: int | None = None,
    homographies: list[np.ndarray] | None = None,
    window: WindowPlan | None = None,
    lookalike: list[LookalikePlan] = (),
) -> tuple[Iterator[np.ndarray], StressedClip]:
    """Apply the stress tests lazily; the returned clip's arrays are filled as frames pass.

    ``homographies`` (frame t-1 -> t, from :func:`scene_homographies`) anchor occluders in
    the scene; they are needed when ``occlude`` is given. ``window`` (:func:`plan_leave`,
    :func:`plan_enter`) and ``lookalike`` (:func:`plan_lookalike`) are planned beforehand.
    Order: the occluders, removals and look-alikes edit the source frame (a look-alike is cut
    from the unedited one), then the window crops it, then the gust warps it.
    """
    n = len(truth)
    clip = StressedClip(truth.copy(), np.zeros(n, bool))
    for a, b in occlude:
        clip.spans.append(("occlude", a, b))
        clip.hidden[a : b + 1] = True
    for a, b in remove:
        clip.spans.append(("remove", a, b))
        clip.hidden[a : b + 1] = True
    if window is not None:
        if window.hidden is not None:
            a, b = window.hidden
            clip.spans.append(("leave", a, b))
            clip.hidden[a : b + 1] = True
        clip.sheet += window.sheet
    if lookalike:
        clip.copies = np.full((n, 4), np.nan)
        for plan in lookalike:
            a, b = plan.span
            clip.lookalike_spans.append((a, b))
            mid = (a + b) // 2
            clip.sheet += [a, (a + mid) // 2, max(a, mid - 2), mid, (mid + b + 1) // 2, b]
    clip.sheet = sorted(set(clip.sheet))
    if occlude and homographies is None:
        raise ValueError("occluders need the scene homographies")

    def generate() -> Iterator[np.ndarray]:
        path = None
        patches: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for index, frame in enumerate(frames):
            frame = original = np.ascontiguousarray(frame)
            for a, b in occlude:
                if index == a:
                    patches[a] = _occluder(frame, truth, a, b, homographies)
                if a <= index <= b and a in patches:
                    frame = _paste(frame, *patches[a], chain(homographies, a, index))
            for a, b in remove:
                if a <= index <= b and index < n:
                    mask = _person_mask(frame.shape, truth[index], _REMOVE_MARGIN)
                    frame = _inpaint(frame, mask)
            copy = None
            for plan in lookalike:
                if plan.box(index) is not None:
                    copy = plan.box(index)
                    frame = paste_lookalike(frame, original, truth[index], copy)
            if window is not None:
                frame = window.crop(frame, index)
                if index < n:
                    clip.truth[index] = window.map_box(truth[index], index)
                if copy is not None:
                    copy = window.map_box(copy, index)
            if gust is not None:
                if path is None:
                    path = _gust_path(frame.shape, gust)
                    pose = path.pose()
                else:
                    pose = path.step()
                size = (frame.shape[1], frame.shape[0])
                frame = cv2.warpAffine(frame, pose[:2], size, borderMode=cv2.BORDER_REFLECT_101)
                if index < n:
                    clip.truth[index] = _warped_box(clip.truth[index], pose, size)
                if copy is not None:
                    copy = _warped_box(copy, pose, size)
            if copy is not None and index < n:
                clip.copies[index] = copy
            yield frame

    return generate(), clip


def _warped_box(box: np.ndarray, pose: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``box`` carried by the affine ``pose``: the bounds of its corners; NaN when its centre
    is shaken out of the ``size`` view (not visible)."""
    if not np.all(np.isfinite(box)):
        return np.full(4, np.nan)
    corners = _box_corners(box) @ pose[:2, :2].T + pose[:2, 2]
    low, high = corners.min(axis=0), corners.max(axis=0)
    centre = (low + high) / 2
    if not (0 <= centre[0] < size[0] and 0 <= centre[1] < size[1]):
        return np.full(4, np.nan)
    return np.array([*low, *(high - low)])


def _occluder(frame: np.ndarray, truth: np.ndarray, a: int, b: int, homographies):
    """(patch, mask) in frame a's coordinates: a scene patch over the person's whole path on
    frames a..b (each box carried back into frame a), grown, inpainted from around it."""
    mask = np.zeros(frame.shape[:2], np.uint8)
    for t in range(a, min(b, len(truth) - 1) + 1):
        box = truth[t]
        if not np.all(np.isfinite(box)):
            continue
        back = np.linalg.inv(chain(homographies, a, t))
        corners = _project(back, _box_corners(box))
        low, high = corners.min(axis=0), corners.max(axis=0)
        mask |= _person_mask(frame.shape, np.array([*low, *(high - low)]), _OCCLUDER_MARGIN)
    if not mask.any():
        raise BadInputError(f"--occlude {a}:{b}: the person is not labelled on those frames")
    patch = _inpaint(frame, cv2.dilate(mask, np.ones((5, 5), np.uint8)))
    return patch, mask


def _paste(frame: np.ndarray, patch: np.ndarray, mask: np.ndarray, h: np.ndarray) -> np.ndarray:
    size = (frame.shape[1], frame.shape[0])
    warped = cv2.warpPerspective(patch, h, size, flags=cv2.INTER_LINEAR)
    cover = cv2.warpPerspective(mask, h, size, flags=cv2.INTER_NEAREST) > 0
    out = frame.copy()
    out[cover] = warped[cover]
    return out


def _gust_path(shape, seed: int):
    """The curriculum's camera model as a hovering drone shaken by frequent gusts: small
    smooth drift held to the view's centre, gusts (3x the smooth maxima, ringing) every
    ~20 frames, zoomed in 1.25x so the view mostly stays on the footage."""
    from emts.synth.camera import CameraMotionConfig, CameraPath

    size = (shape[1], shape[0])
    config = CameraMotionConfig(max_drift=1.0, hover_stiffness=0.1, gust_rate=1.0 / 20.0)
    return CameraPath(size, size, config, rng=np.random.default_rng(seed), zoom=1.25)


# ----------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class TrackEvalConfig:
    lock_frame: int = 0
    lock_point: tuple[float, float] | None = None  # None: the truth's centre on lock_frame
    lock_box: tuple[float, float, float, float] | None = None
    auto: bool = False  # no tap: the pipeline auto-locks (§6.7) from the first frame on
    first: int = 0
    last: int | None = None  # inclusive; None: the last labelled frame
    occlude: tuple[tuple[int, int], ...] = ()
    remove: tuple[tuple[int, int], ...] = ()
    gust: int | None = None
    leave: int | None = None  # a leave-and-return path (emts.eval.track_stress.LEAVE_PATHS)
    enter: str | None = None  # the window's edge cutting the person on the lock frame
    lookalike: tuple[tuple[int, int], ...] = ()
    fps: float | None = None
    lost_grace: int = 8  # frames the mode may stay "locked" after the person vanished
    recovery_limit: int = 5  # frames after reappearance within which the lock must be back


def _centre(box) -> np.ndarray:
    return np.asarray(box[:2], float) + np.asarray(box[2:], float) / 2


def evaluate_track(
    source,
    truth: np.ndarray,
    config: TrackEvalConfig,
    pipeline: Pipeline | None = None,
    records_path: Path | None = None,
) -> dict:
    """Run the pipeline over ``source`` with the stress tests; return the report dict."""
    c = config
    _require_a_usable_row(truth)
    last = c.last if c.last is not None else int(np.flatnonzero(np.isfinite(truth[:, 0]))[-1])
    upto = max((b for _, b in (*c.remove, *c.lookalike)), default=0)
    windowed = c.leave is not None or c.enter is not None
    if c.leave is not None and c.enter is not None:
        raise BadInputError("--leave and --enter: one camera window at a time; give one")
    size, count, fps = _clip_extent(source, c.fps, last if windowed else upto)
    truth = _in_view(truth, size)
    last = c.last if c.last is not None else int(np.flatnonzero(np.isfinite(truth[:, 0]))[-1])
    if not 0 <= c.first <= c.lock_frame <= last:
        raise BadInputError(f"the lock frame {c.lock_frame} is outside --frames {c.first}:{last}")
    _check_spans(c, last)
    _check_spans_in_clip("remove", c.remove, count)
    _check_spans_in_clip("lookalike", c.lookalike, count)
    for span in c.lookalike:
        require_labelled(truth, span)
    if size is not None and (c.lock_point is not None or c.lock_box is not None):
        from emts.apps.track import LockRequest  # a tap off the image: refused as emts track does

        x, y = c.lock_point if c.lock_point is not None else _centre(c.lock_box)
        LockRequest(False, x, y, c.lock_frame, c.lock_box).check_inside(size, c.lock_frame)
    window = None
    if windowed and size is None:
        option = "--leave" if c.leave is not None else "--enter"
        raise BadInputError(f"{option}: the clip has no readable frame")
    if c.leave is not None:
        window = plan_leave(truth, size, c.leave, c.lock_frame, min(last, count - 1), fps)
    elif c.enter is not None:
        window = plan_enter(truth, size, c.enter, c.lock_frame, min(last, count - 1), fps)
    lock_box = c.lock_box
    point = c.lock_point
    if (
        not c.auto
        and point is None
        and lock_box is None
        and not np.all(np.isfinite(truth[c.lock_frame]))
    ):
        raise BadInputError(f"the person is not labelled on the lock frame {c.lock_frame}")
    pipeline = pipeline or Pipeline.default(auto_lock=False)
    per_frame = []
    homographies = None
    if c.occlude or c.lookalike:
        with open_source(source, fps=c.fps) as frames:
            homographies = scene_homographies(frames, max(b for _, b in (*c.occlude, *c.lookalike)))
        _check_spans_in_clip("occlude", c.occlude, len(homographies))
    lookalikes = [
        plan_lookalike(truth, span, homographies, turn=1 - 2 * (i % 2))
        for i, span in enumerate(c.lookalike)
    ]
    thumbnails: dict[int, np.ndarray] = {}
    sink = records_path.open("w") if records_path else None
    seen = -1  # the last frame the clip delivered
    with open_source(source, fps=c.fps) as frames:
        pipeline.fps = frames.fps
        stream, clip = stressed_frames(
            frames,
            truth,
            list(c.occlude),
            list(c.remove),
            c.gust,
            homographies,
            window,
            lookalikes,
        )
        try:
            for index, frame in enumerate(
                tqdm(stream, total=last + 1, desc="eval track", unit="frame", disable=None)
            ):
                if index > last:
                    break
                seen = index
                if index == c.lock_frame and not c.auto:
                    if lock_box is None and point is None:  # tap: the truth's centre, as delivered
                        point = tuple(_centre(clip.truth[index]))
                    if lock_box is not None:
                        point = tuple(_centre(lock_box))
                    pipeline.lock(*point, box=lock_box)
                result = pipeline.step(frame)
                if index < c.first or index < c.lock_frame:
                    continue
                if index in clip.sheet:
                    thumbnails[index] = _thumbnail(frame)
                row = _judge(index, result, clip)
                per_frame.append(row)
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
        finally:
            if sink:
                sink.close()
    if seen < last:  # a clip shorter than its ground truth (or --frames)
        if seen < c.lock_frame:
            raise BadInputError(
                f"the clip ends at frame {seen}, before the lock frame {c.lock_frame}: "
                "nothing to score"
            )
        log.warning("the clip ends at frame %d; the ground truth goes on to frame %d", seen, last)
        last = seen
    report = _summarize(per_frame, clip, c)
    report["lock"] = {
        "frame": c.lock_frame,
        "point": [round(float(v), 2) for v in point] if point is not None else None,
        "box": list(lock_box) if lock_box is not None else None,
        "source": next((r["lock_source"] for r in per_frame if r["lock_source"]), None),
    }
    report["frames"] = [c.first, last]
    report["stress"] = {
        "occlude": list(c.occlude),
        "remove": list(c.remove),
        "gust": c.gust,
        "leave": c.leave,
        "enter": c.enter,
        "lookalike": [list(span) for span in c.lookalike],
    }
    if window is not None:
        report["leave" if c.leave is not None else "enter"] = window.summary()
    for plan, span in zip(lookalikes, report["lookalike_spans"], strict=True):
        span["copy"] = plan.summary()
    report["per_frame"] = per_frame
    report["thumbnails"] = thumbnails  # delivered frames, half size; not written to JSON
    return report


def _thumbnail(frame: np.ndarray) -> np.ndarray:
    small = cv2.resize(
        frame, None, fx=THUMBNAIL_SCALE, fy=THUMBNAIL_SCALE, interpolation=cv2.INTER_AREA
    )
    return small if small.ndim == 3 else cv2.cvtColor(small, cv2.COLOR_GRAY2BGR)


def _clip_extent(source, fps: float | None, upto: int):
    """(w, h) of the clip's first readable frame (None: none), how many of its frames
    0..``upto`` there are (a pass over those frames only) and its frame rate."""
    size, count = None, 0
    with open_source(source, fps=fps) as frames:
        for frame in frames:
            if size is None and isinstance(frame, np.ndarray):
                size = (frame.shape[1], frame.shape[0])
            count += 1
            if count > upto and size is not None:
                break
        rate = frames.fps
    return size, count, rate


def _in_view(truth: np.ndarray, size: tuple[int, int] | None) -> np.ndarray:
    """``truth`` with every box wholly outside the ``size`` frame marked absent (a box partly
    outside is a person at the edge, kept); none left in view is bad input: the boxes are
    not in this clip's pixels."""
    if size is None:
        return truth
    width, height = size
    x, y, w, h = truth.T
    labelled = np.isfinite(truth).all(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):  # x + w of 1e308s: inf, outside
        outside = labelled & ((x >= width) | (y >= height) | (x + w <= 0) | (y + h <= 0))
    if not outside.any():
        return truth
    first = int(np.flatnonzero(outside)[0])
    example = f"frame {first}: " + ",".join(f"{v:g}" for v in truth[first])
    if outside.sum() == labelled.sum():
        raise BadInputError(
            f"every ground-truth box lies wholly outside the clip's {width}x{height} frames "
            f"({example}); the boxes must be in this clip's input pixels"
        )
    log.warning(
        "%d of %d ground-truth boxes lie wholly outside the %dx%d frames (%s): scored as absent",
        outside.sum(),
        labelled.sum(),
        width,
        height,
        example,
    )
    truth = truth.copy()
    truth[outside] = np.nan
    return truth


def _check_spans(c: TrackEvalConfig, last: int) -> None:
    """Every --occlude/--remove/--lookalike span within the frames evaluated,
    ``c.first``..``last``."""
    why = "--frames" if c.last is not None else "to the ground truth's last labelled frame"
    for kind, spans in (("occlude", c.occlude), ("remove", c.remove), ("lookalike", c.lookalike)):
        for a, b in spans:
            if a < c.first or b > last:
                raise BadInputError(
                    f"--{kind} {a}:{b} is outside the frames evaluated, {c.first}:{last} ({why})"
                )


def _check_spans_in_clip(kind: str, spans, count: int) -> None:
    """Every span within the clip's ``count`` frames (counted up to the last span's end)."""
    for a, b in spans:
        if b >= count:
            raise BadInputError(f"--{kind} {a}:{b} ends after the clip's last frame {count - 1}")


def _judge(index: int, result, clip: StressedClip) -> dict:
    truth = clip.truth[index] if index < len(clip.truth) else np.full(4, np.nan)
    visible = bool(np.all(np.isfinite(truth)) and not clip.hidden[index])
    error = None
    radius = None
    if np.all(np.isfinite(truth)):
        radius = max(MIN_RADIUS, float(truth[3]) / 2)
    if result.target is not None and np.all(np.isfinite(truth)):
        error = float(np.hypot(*(_centre(result.target.box) - _centre(truth))))
    on_person = visible and error is not None and error <= radius
    overlap = None
    if visible and result.target is not None:
        box = np.asarray(result.target.box, float)
        overlap = float(box_iou(box, truth[None].astype(float))[0])
    row = {
        "frame": index,
        "mode": result.mode,
        "visible": visible,
        "hidden": bool(clip.hidden[index]),
        "error": None if error is None else round(error, 2),
        "radius": None if radius is None else round(radius, 2),
        "hit": bool(on_person),
        "iou": None if overlap is None else round(overlap, 4),
        "false_lock": bool(result.mode == "locked" and not on_person),
        "box": None if result.target is None else [round(float(v), 2) for v in result.target.box],
        "truth": None if not np.all(np.isfinite(truth)) else [round(float(v), 2) for v in truth],
        "measured_by": None if result.target is None else result.target.measured_by,
        "p_human": None if result.target is None else result.target.p_human,
        "event": result.event,
        "lock_source": result.lock_source,
    }
    if clip.copies is not None:  # look-alikes: where the copy is, and whether it holds the lock
        copy = clip.copies[index] if index < len(clip.copies) else np.full(4, np.nan)
        row["copy"] = None
        row["on_copy"] = False
        if np.all(np.isfinite(copy)):
            row["copy"] = [round(float(v), 2) for v in copy]
            if result.target is not None and error is not None:
                # nearer the copy than the person, and not a hit: where the two overlap, a
                # target on either is on the person
                to_copy = float(np.hypot(*(_centre(result.target.box) - _centre(copy))))
                row["on_copy"] = to_copy < error and not on_person
    return row


# IoU thresholds of the success curve (OTB / UAV123's success plot: 0, 0.05, ..., 1)
SUCCESS_THRESHOLDS = np.linspace(0.0, 1.0, 21)


def box_overlap(visible: list[dict]) -> dict:
    """How well the reported box covers the person over the ``visible`` frames' rows: the IoU
    of a ``locked`` target's box with the truth, 0 where the mode is not ``locked`` (a lock
    that says it lost the person frames no one). ``success_auc``: the area under the success
    curve, the share of frames whose IoU exceeds t averaged over t in 0, 0.05, ..., 1
    (UAV123's success score; = the mean IoU up to the thresholds' spacing);
    ``iou_median_on_hits``: the median IoU where the lock is on the person (its box's fit,
    whatever the losses); ``size_ratio_on_hits``: the median box width and height over the
    truth's there (1, 1: the person's size)."""
    ious = np.array(
        [r["iou"] if r["mode"] == "locked" and r["iou"] is not None else 0.0 for r in visible]
    )
    hits = [r for r in visible if r["hit"] and r["mode"] == "locked" and r["box"] is not None]
    ratios = np.array(
        [[r["box"][k] / max(r["truth"][k], 1e-6) for k in (2, 3)] for r in hits]
    ).reshape(-1, 2)
    return {
        "iou_mean": round(float(ious.mean()), 4) if ious.size else None,
        "success_auc": round(float(np.mean([(ious > t).mean() for t in SUCCESS_THRESHOLDS])), 4)
        if ious.size
        else None,
        "iou_median_on_hits": round(float(np.median([r["iou"] for r in hits])), 4)
        if hits
        else None,
        "size_ratio_on_hits": [round(float(v), 3) for v in np.median(ratios, axis=0)]
        if hits
        else None,
    }


def _summarize(rows: list[dict], clip: StressedClip, c: TrackEvalConfig) -> dict:
    visible = [r for r in rows if r["visible"]]
    hits = sum(r["hit"] for r in visible)
    errors = [r["error"] for r in visible if r["error"] is not None]
    first_lock = next((r["frame"] for r in rows if r["mode"] == "locked"), None)
    spans = []
    by_frame = {r["frame"]: r for r in rows}
    for kind, a, b in clip.spans:
        hidden = [by_frame[i] for i in range(a, b + 1) if i in by_frame]
        still_locked = 0
        for r in hidden:  # frames the mode stayed locked from the start of the span
            if r["mode"] != "locked":
                break
            still_locked += 1
        locked_late = sum(r["mode"] == "locked" for r in hidden[c.lost_grace :])
        relocked_meanwhile = sum(r["event"] == "relock" for r in hidden)
        recovery = None
        i = b + 1
        while i in by_frame:
            if by_frame[i]["hit"] and by_frame[i]["mode"] == "locked":
                recovery = i - (b + 1)
                break
            i += 1
        spans.append(
            {
                "kind": kind,
                "frames": [a, b],
                "locked_frames_after_vanishing": still_locked,
                "locked_frames_after_grace": locked_late,
                "relocks_while_hidden": relocked_meanwhile,
                "recovery_frames": recovery,
                "ok": still_locked <= c.lost_grace
                and locked_late == 0
                and relocked_meanwhile == 0
                and recovery is not None
                and recovery <= c.recovery_limit,
            }
        )
    lookalikes = []
    for a, b in clip.lookalike_spans:
        inside = [by_frame[i] for i in range(a, b + 1) if i in by_frame]
        end = by_frame.get(b)
        ended = None if end is None else bool(end["hit"] and end["mode"] == "locked")
        on_copy = sum(r["on_copy"] for r in inside)
        lookalikes.append(
            {
                "kind": "lookalike",
                "frames": [a, b],
                "frames_on_copy": on_copy,
                "locked_on_person_frames": sum(r["hit"] and r["mode"] == "locked" for r in inside),
                "first_frame_on_copy": next((r["frame"] for r in inside if r["on_copy"]), None),
                "ended_on_person": ended,
                "ok": on_copy == 0 and ended is True,
            }
        )
    p_values = [r["p_human"] for r in rows if r["p_human"] is not None]
    return {
        "lock_recall": round(hits / max(len(visible), 1), 4),
        "box_overlap": box_overlap(visible),
        "visible_frames": len(visible),
        "false_lock_frames": sum(r["false_lock"] for r in rows),
        "centre_error_px": {
            "median": round(float(np.median(errors)), 2) if errors else None,
            "mean": round(float(np.mean(errors)), 2) if errors else None,
            "p90": round(float(np.percentile(errors, 90)), 2) if errors else None,
        },
        "first_lock_frame": first_lock,
        "lost_events": sum(r["event"] == "lost" for r in rows),
        "relock_events": sum(r["event"] == "relock" for r in rows),
        "measured_by": {
            k: sum(r["measured_by"] == k for r in rows)
            for k in ("detection", "appearance", "both", "relock", None)
        },
        "p_human": {
            "median": round(float(np.median(p_values)), 4) if p_values else None,
            "share_verified": round(float(np.mean([p >= 0.5 for p in p_values])), 4)
            if p_values
            else None,
        },
        "hidden_spans": spans,
        "lookalike_spans": lookalikes,
    }
