"""Stage D's identity check: is this region *the* person that was locked?

Not in the paper (SPEC §0: "re-finding searches the whole frame for *the* tapped person").
On colour frames a person's look is summed up by a **colour signature**: the colours of
their own pixels (:func:`emts.stages.own_target.own_target`: neither the ground nor a
shadow on it), upper and lower half of the box apart (shirt and trousers), as two HSV
histograms (8 hues x 3 saturations x 3 values, the usual re-identification colour
descriptor). Two signatures compare by their Bhattacharyya coefficient (1: the same colours
in the same proportions; a bush, a post or a cast shadow: far less). On uav123-person12
(development data) detections of the walker scored 0.35 or more on 90 % of frames against
the tapped look, other detections (bushes, posts, shadows) 0.21 or less on 90 %, at most 0.26
(AUC 0.98; BGR histograms: 0.86-0.93).

The :class:`Refinder` uses it to find the person again anywhere in the frame while the track
is lost: a chain of detections, one per frame, that keeps the look of the person at the
lock, walks (covers ground at a walker's pace and moves against the ground around it) and
lasts ``TrackerConfig.refind_frames`` frames re-locks the track there.

On gray frames (thermal) there is no signature: the check passes and the re-find is off
(the NCC of the look near the prediction remains the re-lock's measure there).
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from emts.config import AppearanceConfig
from emts.stages.appearance import AppearanceView, strongest_first
from emts.stages.own_target import own_target_in_view, sample_region

_BINS = (8, 3, 3)  # hue, saturation, value bins
_MIN_OWN = 12  # own-target pixels a half needs for a signature
# a relative signature's values are read as if the local ground's were this (a sunlit ground:
# person12's paving reads 150-190), so that the value bins' edges (85, 170) lie at 0.57 and
# 1.13 of the ground's value
_GROUND_VALUE = 150.0


def colour_signature(
    view: AppearanceView,
    centre: np.ndarray,
    size: np.ndarray,
    look: AppearanceConfig | None = None,
    relative: bool = False,
) -> np.ndarray | None:
    """The colour signature of the box ``size`` around ``centre`` (WORKING px) in a colour
    ``view``: two normalized 72-bin HSV histograms (upper, lower half) concatenated, each
    weighted 1/2; None on a gray view or where a half holds too few own-target pixels.

    ``relative``: each value read relative to the local ground's (the median value of the
    box grown by its size each way, scaled so that it reads ``_GROUND_VALUE``): a shade
    darkens a person and the ground around them alike, so their relative signature is the
    one they had in the sun (person12's walker in a building's shade, against their look as
    tapped in the sun: 0.45-0.55, the re-find's other places 0.28 or less; absolute values:
    0.45-0.48 against up to 0.36; reports/real/shade)."""
    found = _own_mask(view, centre, size, look)
    if found is None:
        return None
    mask, (w, h), context = found
    # (the box is the context's middle, on the same grid: its samples are not cut again)
    if relative:  # (its median value the ground's)
        hsv = cv2.cvtColor(np.clip(context, 0, 255).astype(np.uint8), cv2.COLOR_BGR2HSV)
        ground = np.float32(np.median(hsv[::2, ::2, 2]))
        hsv = _relative_value(hsv[h : 2 * h, w : 2 * w], ground)
    else:
        pixels = context[h : 2 * h, w : 2 * w]
        hsv = cv2.cvtColor(np.clip(pixels, 0, 255).astype(np.uint8), cv2.COLOR_BGR2HSV)
    halves = []
    for rows in (slice(0, h // 2), slice(h // 2, h)):
        own = hsv[rows].reshape(-1, 3)[mask[rows].ravel() > 0]
        if len(own) < _MIN_OWN:
            return None
        histogram = np.bincount(_bins(own), minlength=int(np.prod(_BINS))).astype(float)
        halves.append(histogram / (2.0 * histogram.sum()))
    return np.concatenate(halves)


def _own_mask(view: AppearanceView, centre: np.ndarray, size: np.ndarray, look):
    """(own-target mask, (w, h), the context it was judged in) of the box ``size`` around
    ``centre``; None on a gray view."""
    if view.image.ndim != 3:
        return None
    look = look or AppearanceConfig()
    w, h = (max(int(round(float(v))), 4) for v in size)
    top_left = np.asarray(centre, float) - 0.5 * np.array([w, h], float)
    found = own_target_in_view(view, top_left, (w, h), look)
    return None if found is None else (found[0], (w, h), found[1])


def has_signature(
    view: AppearanceView,
    centre: np.ndarray,
    size: np.ndarray,
    look: AppearanceConfig | None = None,
) -> bool:
    """Would :func:`colour_signature` give one here (a colour view, each half of the box with
    enough own-target pixels)? Half its time: no histograms."""
    found = _own_mask(view, centre, size, look)
    if found is None:
        return False
    mask, (_, h), _ = found
    return all(
        np.count_nonzero(mask[rows]) >= _MIN_OWN for rows in (slice(0, h // 2), slice(h // 2, h))
    )


def _relative_value(hsv: np.ndarray, ground) -> np.ndarray:
    """``hsv`` (uint8) with its value scaled so that ``ground`` (a number, or an array of
    ``hsv``'s shape without channels) reads ``_GROUND_VALUE``."""
    scale = np.float32(_GROUND_VALUE) / np.maximum(ground, np.float32(1.0))
    value = np.clip(hsv[..., 2] * scale, 0, 255)
    out = hsv.copy()
    out[..., 2] = value.astype(np.uint8)
    return out


def _channel_bins(levels: int, top: int, scale: int) -> np.ndarray:
    """uint8 lookup of an 8-bit HSV channel's bin (``levels`` over 0..``top``-1) times
    ``scale``."""
    return (np.arange(256) * levels // top * scale).astype(np.uint8)


# (1, 256, 3): cv2.LUT maps each channel through its own table
_CHANNEL_BINS = np.stack(
    [
        _channel_bins(_BINS[0], 180, _BINS[1] * _BINS[2]),
        _channel_bins(_BINS[1], 256, _BINS[2]),
        _channel_bins(_BINS[2], 256, 1),
    ],
    axis=-1,
)[None]


def _bins(hsv: np.ndarray) -> np.ndarray:
    """Each 8-bit HSV pixel's (``hsv``: (..., 3) uint8) signature bin (hue, saturation,
    value), as uint8 (at most 71: the channels' bins summed, no saturation)."""
    pixels = np.ascontiguousarray(hsv).reshape(-1, 1, 3)
    hue, saturation, value = cv2.split(cv2.LUT(pixels, _CHANNEL_BINS))
    return cv2.add(cv2.add(hue, saturation), value).reshape(hsv.shape[:-1])


def colour_proposals(
    view: AppearanceView,
    signature: np.ndarray,
    content: tuple[float, float, float, float],
    size: np.ndarray,
    count: int = 4,
    relative: bool = False,
) -> list[np.ndarray]:
    """Centres (WORKING px) of up to ``count`` boxes of ``size`` within ``content`` (x0, y0,
    x1, y1, WORKING px) whose colours are most the ``signature``'s, strongest first
    (``relative``: a relative signature, :func:`colour_signature`; each sample's value read
    against the median value of the samples within 1.5 box heights of it).

    A box scores the lesser of its two halves' likeness to the signature's halves (upper,
    lower: shirt and trousers): the Bhattacharyya coefficient of the half's HSV histogram,
    all its pixels, to the signature's, from one box filter per signature bin. Sampled so
    that the box is ~16 samples tall (12 cost person12's shade 260 three false-lock frames;
    8 put the walker below a shadow's places on 3 of 8 frames of leave path 1's return).
    The lesser half: a region of one colour (a tree's shadow, dark as the trousers) is like
    one half only. (Was Swain and Ballard's ratio histogram back-projected and summed over
    the box: it scores a box by how much of it has the signature's rarer colours, and on
    person12 leave path 1 a tree's shadow, wholly dark, outscored the walker re-entering the
    view, whose trousers fill a third of their box: on two frames no place lay within 50 px
    of them; by the likeness the walker's place is the first on every frame of their
    return.)

    A box cut by the content's edge scores by its part inside (outside counts as no colour
    at all): a person coming into the view is placed where they are, not pinned half a box
    inside the edge (the ratio histogram's sum did that, and their places' chain covered no
    ground while they came in: ``refind_colour_edge``, now gone). Empty on a gray view."""
    if view.image.ndim != 3:
        return []
    x0, y0, x1, y1 = content
    step = max(1.0, float(size[1]) / 16.0)
    samples = (int((x1 - x0) / step), int((y1 - y0) / step))
    if samples[0] < 3 or samples[1] < 3:
        return []
    pixels = sample_region(view.image, view.from_working, (x0, y0), samples, step)
    hsv = cv2.cvtColor(pixels.astype(np.uint8), cv2.COLOR_BGR2HSV)
    if relative:
        across = min(max(int(round(3.0 * float(size[1]) / step)) | 1, 3), 255)
        ground = cv2.medianBlur(np.ascontiguousarray(hsv[..., 2]), across).astype(np.float32)
        hsv = _relative_value(hsv, ground)
    bins = _bins(hsv)
    n = _BINS[0] * _BINS[1] * _BINS[2]
    w = max(int(round(float(size[0]) / step)), 1)
    half = max(int(round(float(size[1]) / step / 2)), 1)
    shift = max(half // 2, 1)  # a half's centre from the box's (samples)

    def moved(mass: np.ndarray, dy: int) -> np.ndarray:
        """``mass`` of the half boxes centred ``dy`` samples from each sample (the box
        centred at y: its upper half's centre at y - shift, its lower half's at y + shift)."""
        out = np.zeros_like(mass)
        if dy < 0:
            out[-dy:] = mass[:dy]
        else:
            out[:-dy] = mass[dy:]
        return out

    def half_mean(values: np.ndarray) -> np.ndarray:
        # (float32 means; outside the content counts as none of any colour)
        return cv2.boxFilter(values, cv2.CV_32F, (w, half), borderType=cv2.BORDER_CONSTANT)

    weights = (np.sqrt(2.0 * signature[:n]), np.sqrt(2.0 * signature[n:]))  # halves sum to 1
    sums = [np.zeros(bins.shape, np.float32), np.zeros(bins.shape, np.float32)]
    # (a bin the view has no sample of adds nothing: its box filter is skipped)
    present = cv2.calcHist([bins], [0], None, [n], [0, n]).ravel() > 0
    for b in np.flatnonzero((weights[0] + weights[1] > 0) & present):
        root = cv2.sqrt(half_mean((bins == b).view(np.uint8)))
        for into, weight in zip(sums, weights, strict=True):
            if weight[b] > 0:
                cv2.scaleAdd(root, float(weight[b]), into, dst=into)
    upper, lower = moved(sums[0], -shift), moved(sums[1], shift)
    score = np.minimum(upper, lower)
    kernel = np.ones((2 * half + 1, w | 1), np.uint8)
    ys, xs = np.nonzero((score >= cv2.dilate(score, kernel)) & (score > 0.05))
    # (a partial sort: a flat stretch is a local maximum at every sample, and a full sort of
    # them was a fifth of a coasting frame at 1280x720)
    order = strongest_first(score[ys, xs], count)
    return [np.array([x0, y0], float) + step * np.array([xs[i], ys[i]], float) for i in order]


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Bhattacharyya coefficient of two signatures (0..1)."""
    return float(np.sqrt(a * b).sum())


def half_similarities(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The Bhattacharyya coefficients of two signatures' upper halves and of their lower
    halves, each half's histogram on its own (0..1; :func:`similarity` is their mean)."""
    half = len(a) // 2
    upper = 2.0 * float(np.sqrt(a[:half] * b[:half]).sum())
    return upper, 2.0 * float(np.sqrt(a[half:] * b[half:]).sum())


class Refinder:
    """Chains of look-alike detections while the track is lost (stabilized px).

    Each frame :meth:`step` extends the chains with this frame's detections whose signature
    is like the lock's (a chain may miss ``gap`` frames: the detector does not fire on every
    frame); a chain with ``frames`` links that keeps the look and walks is returned (the
    caller re-locks on it)."""

    def __init__(self, frames: int, least: float, gap: int = 2):
        self.frames = frames  # links a chain needs
        self.least = least  # each link's similarity to the lock's signature at least
        self.gap = gap  # frames a chain may go without a link
        # set by the caller each frame (they follow the person's size and the frame rate):
        self.pace = 1.0  # stabilized px/frame, first to last link, at least
        # a link lies at most reach[0] + reach[1] x (frames since the chain's last link)
        # stabilized px from it (detection jitter + a walker's steps)
        self.reach = (8.0, 6.0)
        self.chains: list[list[tuple[np.ndarray, int, int]]] = []  # (position, index, frame)
        self.frame = 0

    def reset(self) -> None:
        self.chains = []

    def step(
        self,
        positions: list[np.ndarray],
        similarities: list[float | None],
        walks: Callable[[np.ndarray, np.ndarray], bool],
        starts: list[bool] | None = None,
    ) -> tuple[int, np.ndarray] | None:
        """(candidate index, velocity) of a chain that re-finds the person, or None.

        Args:
            positions: each candidate's stabilized centre.
            similarities: each candidate's similarity to the lock's signature (None: none).
            walks: ``walks(before, after)``: does a region moving from stabilized ``before``
                (last frame) to ``after`` (this frame) move against its ground?
            starts: whether each candidate may start a chain (False: it may only extend
                one); None: all may.
        """
        self.frame += 1
        now = self.frame
        extended, used = [], set()
        for index, (position, sim) in enumerate(zip(positions, similarities, strict=True)):
            if sim is None or sim < self.least:
                continue
            best = None
            for number, chain in enumerate(self.chains):
                last, _, then = chain[-1]
                distance = float(np.hypot(*(position - last)))
                reach = self.reach[0] + self.reach[1] * (now - then)
                if distance <= reach and (best is None or distance < best[0]):
                    best = (distance, number)
            if best is None and starts is not None and not starts[index]:
                continue
            earlier = self.chains[best[1]] if best else []
            if best:
                used.add(best[1])
            extended.append([*earlier, (position, index, now)][-self.frames :])
        waiting = [
            chain
            for number, chain in enumerate(self.chains)
            if number not in used and now - chain[-1][2] <= self.gap
        ]
        self.chains = extended + waiting
        found = None
        for chain in extended:
            if len(chain) < self.frames:
                continue
            (first, _, start), (last, _, _) = chain[0], chain[-1]
            pace = float(np.hypot(*(last - first))) / (now - start)
            # the last step moves against its ground (only a step from the frame before can
            # be checked: the ground motion is known between consecutive frames)
            before = chain[-2]
            if pace < self.pace or (before[2] == now - 1 and not walks(before[0], last)):
                continue
            # the walk of the chain as a whole: the longest (a look-alike chain standing
            # beside a walking one loses to it)
            if found is None or pace > found[0]:
                found = (pace, chain)
        if found is None:
            return None
        chain = found[1]
        velocity = (chain[-1][0] - chain[0][0]) / (now - chain[0][2])
        return chain[-1][1], velocity
