"""Stage D: the locked target in stabilized coordinates (§3.5, eqs. 6-7).

``G_t = H(M_t) G_{t-1}`` accumulates the camera motion since lock (``G_0 = I``). Measurements
are mapped through ``G_t^-1`` into the stabilized frame, where a constant-velocity Kalman
filter on ``[x, y, vx, vy, w, h]`` models the *person*: a wind gust changes ``G_t``, not the
state.

Two measurements feed the filter under the same Mahalanobis gate (eq. ``eq:gates``):

* **detections** (Stage C), which also need the scale-aware embedding key (``eq:scalegate``);
  among admissible detections the one minimizing ``gamma^2 - 4 s`` wins;
* **appearance** (SPEC §0, not in the paper): a colour or gray template of the target (of an
  operator's lock: its upper part, ``TrackerConfig.appearance_upper``; a walker's cast shadow
  joins them at the feet and pulled a whole-box template onto itself), cut in image
  coordinates at lock (in an oblique view a followed walker keeps their apparent size and
  orientation while the ground plane's G_t scales and turns), searched by normalized
  cross-correlation around the prediction -- on colour frames blended with the correlation
  over the template's *own-target* samples (:func:`object_pixels`: neither the ground nor a
  shadow on it), since the walker's shadow walks with them and outmatched them. It keeps the
  lock when the detector is silent; it learns slowly from confident matches, never from
  vetoed frames or from a sudden drop of the NCC peak or of the matched region's contrast
  (an occluder). On colour frames neither a re-anchor nor an appearance re-lock goes onto a
  region with far fewer own-target samples than the target's (a shadow, a canopy's edge).

A vetoed operator's lock is not dropped (the operator decides) but may be **re-anchored**: a
detection of the whole person held beside the track for a few frames, where the target's
look at the tap fits better than at the track, becomes its new origin (the template had slid
onto the walker's legs and shadow). The same re-anchor opens, unvetoed, after
``TrackerConfig.reanchor_after_appearance`` frames measured by the appearance match alone
(after an occlusion the match had re-made the lock on the walker's shadow and held it there).

**Two people merging** (not in the paper; frames without colour, ``LockCommand.colour``): a
detection at least ``TrackerConfig.merge_area_ratio`` times the track's area is the target and
someone walking past or across them in one blob. For ``merge_hold_frames`` frames after it the
measurements move the estimate but the velocity stays the walk's before the merge (the
covariance is left as the updates made it), so that the walk, not the pair's blob, carries the
track out of the merge.

Modes: ``"search"`` (no lock), ``"locked"``, ``"reacquire"`` (coasting after 8 consecutive
frames without a measurement, a verifier veto, or the target leaving the image). A re-lock
(frozen template found again on consecutive frames near the coasted prediction, ahead of the
walk before the loss, in a region as textured as the person, a detection
with the frozen embedding inside the re-lock gate, or a detection held inside that gate for
3 frames) **re-initializes** position and velocity: it is a new origin, never a Kalman
innovation across the image. Reacquisition gives up (back to ``"search"``, event
``"dropped"``) after ``TrackerConfig.give_up_after`` frames, or, for an automatic lock, once
its coasted prediction has been off the image for ``auto_give_up_outside`` seconds: its person
walked out of view, and auto-lock takes no one else while a track coasts.

A lock arrives as a :class:`LockCommand` in the coordinates of the frame being updated; the
tracker applies it *after* that frame's camera motion, so the motion is never applied twice.

All boxes here are ``[cx, cy, w, h]`` (centre and size) in WORKING pixels (640x512) unless
named stabilized.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import cv2
import numpy as np

from emts.config import WORKING_SIZE, TrackerConfig
from emts.geometry import lift
from emts.io import DEFAULT_FPS

Mode = Literal["search", "locked", "reacquire"]
# Initial state covariance of a (re-)lock: position px^2, velocity (px/frame)^2, size px^2.
_LOCK_COVARIANCE = (4.0, 4.0, 25.0, 25.0, 9.0, 9.0)
# Re-lock by appearance: consecutive matches must agree within this many stabilized px.
_RELOCK_CONSISTENCY = 4.0
_WHOLE_FRAME = (-0.5, -0.5, WORKING_SIZE[0] - 0.5, WORKING_SIZE[1] - 0.5)


@dataclass(frozen=True)
class Candidate:
    """A detection as the tracker sees it (WORKING px, centre and size)."""

    centre: np.ndarray  # (2,)
    size: np.ndarray  # (2,) w, h
    score: float
    embedding: np.ndarray  # (8,) unit vector


@dataclass(frozen=True)
class LockCommand:
    """Lock on a target on the frame being updated (WORKING px, centre and size).

    Attributes:
        centre, size: the target on this frame.
        embedding: the detector's embedding of it, or None (a tap with no detection there).
        source: how the lock was made: ``"tap:detection"``, ``"tap:blob"``, ``"tap:box"``,
            ``"tap:default"`` or ``"auto"``.
        colour: the camera sees colour (:func:`emts.modality.frame_modality`; the pipeline
            sets it): the merge hold (``TrackerConfig.merge_area_ratio``) is off.
    """

    centre: np.ndarray
    size: np.ndarray
    embedding: np.ndarray | None
    source: str
    colour: bool = False

    @classmethod
    def from_candidate(cls, candidate: Candidate, source: str) -> LockCommand:
        return cls(candidate.centre, candidate.size, candidate.embedding, source)


@dataclass(frozen=True)
class TrackState:
    """The tracker's output for one frame.

    Attributes:
        mode: ``"search"``, ``"locked"`` or ``"reacquire"``.
        centre, size: the estimate in WORKING px (None in search); the centre is kept inside
            the image content.
        score: score of the associated detection, None when no detection was associated.
        associated: index of the associated candidate, if any.
        misses: consecutive frames without a measurement.
        appearance: the NCC peak of the appearance match this frame (None: not searched).
        measured_by: ``"detection"``, ``"appearance"``, ``"both"`` or None (coasting).
        event: ``"lock"``, ``"relock"``, ``"lost"`` (locked -> reacquire) or ``"dropped"``
            (reacquire gave up -> search) on the frame where that happened, else None.
    """

    mode: Mode
    centre: np.ndarray | None
    size: np.ndarray | None
    score: float | None
    associated: int | None
    misses: int
    appearance: float | None = None
    measured_by: str | None = None
    event: str | None = None


def _normalize(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


@dataclass(frozen=True)
class AppearanceView:
    """The image the appearance measurement samples, and the map WORKING px -> its px.

    The working frame itself (gray) by default; the pipeline passes colour input frames, since
    colour separates a person from a shadow that gray does not.
    """

    image: np.ndarray  # (h, w) or (h, w, 3) uint8
    from_working: np.ndarray = field(default_factory=lambda: np.eye(3))  # 3x3
    working: np.ndarray | None = None  # the gray working frame (local ground motion)

    @classmethod
    def of(cls, working: np.ndarray) -> AppearanceView:
        return cls(working, np.eye(3), working)


class AppearanceTemplate:
    """A template of the target, matched by normalized cross-correlation (NCC).

    Coordinates are those of the map ``g`` the caller passes (the tracker passes WORKING ->
    view image, so the template lives in image coordinates). A large target is sampled every
    ``step`` px so that the template's longer side is at most ``max_side`` samples: the cost
    of a search stays bounded whatever the target's size.
    """

    def __init__(self, max_side: int = 64, object_weight: float = 0.7) -> None:
        self.max_side = max_side
        # the weight of the NCC over the target's own pixels (colour views; 0: never)
        self.object_weight = object_weight
        self.patch: np.ndarray | None = None  # float32 samples
        # per-sample weight of the target's own pixels (:func:`object_pixels`), running like
        # the patch; None: every sample counts (gray views, no chroma, too few such pixels)
        self.weight: np.ndarray | None = None
        self.step = 1.0  # px per sample
        self.offset = np.zeros(2)  # the template's centre minus the target's (g's domain px)
        self.inner = (0.0, 0.0)  # the margin's share of the template's width, height
        self._blends = 0

    @staticmethod
    def sample(
        image: np.ndarray,
        g: np.ndarray,
        top_left: np.ndarray,
        size: tuple[int, int],
        step: float = 1.0,
    ) -> np.ndarray:
        """``size`` samples, ``step`` px apart from ``top_left`` (coordinates of ``g``'s
        domain), cut from ``image`` (``g``: 3x3, that domain -> image px)."""
        a = g[:2, :2]
        inverse_map = np.empty((2, 3))  # sample -> image px (np.hstack: ~4x the time)
        np.multiply(a, step, out=inverse_map[:, :2])
        inverse_map[:, 2] = a @ top_left + g[:2, 2]
        return cv2.warpAffine(
            image,
            inverse_map,
            size,
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=0,
        ).astype(np.float32)

    def capture(
        self,
        image: np.ndarray,
        g: np.ndarray,
        centre: np.ndarray,
        size: np.ndarray,
        config: TrackerConfig,
        upper: float = 1.0,
    ) -> None:
        """Take the template around ``centre``: the box ``size``'s upper ``upper`` part,
        grown by ``config.appearance_margin`` a side; searches report the box's centre."""
        grow = 1.0 + 2.0 * config.appearance_margin
        w = max(float(config.appearance_min_size), float(size[0]) * grow)
        h = max(float(config.appearance_min_size), float(size[1]) * upper * grow)
        self.offset = np.array([0.0, -(1.0 - upper) * float(size[1]) / 2.0])
        self.step = max(1.0, max(w, h) / self.max_side)
        samples = (max(int(round(w / self.step)), 3), max(int(round(h / self.step)), 3))
        top_left = self._top_left(centre + self.offset, samples)
        patch = self.sample(image, g, top_left, samples, self.step)
        self.patch = patch if float(patch.std()) > 1e-3 else None  # a flat patch matches anything
        self.weight = None
        # the margin's samples are the ground around the target, not the target
        self.inner = (config.appearance_margin / grow, config.appearance_margin / grow)
        if self.patch is not None and self.object_weight > 0:
            self.weight = self._object_weight(image, g, top_left, samples)

    def _object_weight(
        self, image: np.ndarray, g: np.ndarray, top_left: np.ndarray, samples: tuple[int, int]
    ) -> np.ndarray | None:
        """The target's own pixels (:func:`object_pixels`) over the template's samples, from
        a window reaching one template size farther each way (the local ground)."""
        mask = _own_target(image, g, top_left, samples, self.step)
        w, h = samples
        if mask is not None:
            bx, by = (int(round(f * n)) for f, n in zip(self.inner, (w, h), strict=True))
            keep = np.zeros_like(mask)
            keep[by : h - by, bx : w - bx] = 1.0
            mask *= keep
        return mask

    def copy(self) -> AppearanceTemplate:
        """An independent copy (the patch, its weight, sampling step and offset)."""
        twin = AppearanceTemplate(self.max_side, self.object_weight)
        twin.patch = None if self.patch is None else self.patch.copy()
        twin.weight = None if self.weight is None else self.weight.copy()
        twin.step, twin.offset, twin.inner = self.step, self.offset.copy(), self.inner
        return twin

    def own_share_at(self, image: np.ndarray, g: np.ndarray, centre: np.ndarray) -> float | None:
        """The share of own-target samples the template would hold placed at the target
        ``centre`` (``g``'s domain) of ``image``; None without a template or colour."""
        if self.patch is None:
            return None
        h, w = self.patch.shape[:2]
        top_left = self._top_left(centre + self.offset, (w, h))
        here = self._object_weight(image, g, top_left, (w, h))
        return None if here is None else _share_own(here)

    def state(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The look as it is now (patch, weight), for :meth:`restore` (shared, not copied:
        both are replaced, never changed in place)."""
        return self.patch, self.weight

    def restore(self, state: tuple[np.ndarray | None, np.ndarray | None]) -> None:
        """Go back to a look taken by :meth:`state` (same sampling step and offset)."""
        self.patch, self.weight = state

    def _mask(self) -> np.ndarray | None:
        """matchTemplate's mask: the samples that are mostly the target's own pixels, where
        enough of them are (else None: the whole template counts)."""
        if self.weight is None:
            return None
        mask = (self.weight >= _OWN).astype(np.float32)
        return (
            mask if mask.sum() >= max(_MIN_OBJECT_SAMPLES, _MIN_OBJECT_SHARE * mask.size) else None
        )

    def _top_left(self, centre: np.ndarray, samples: tuple[int, int]) -> np.ndarray:
        return centre - self.step * (np.array(samples, float) - 1.0) / 2.0

    def blend(self, image: np.ndarray, g: np.ndarray, centre: np.ndarray, alpha: float) -> None:
        if self.patch is None:
            return
        samples = (self.patch.shape[1], self.patch.shape[0])
        top_left = self._top_left(centre + self.offset, samples)
        current = self.sample(image, g, top_left, samples, self.step)
        if current.shape == self.patch.shape:
            self.patch = (1.0 - alpha) * self.patch + alpha * current
            # the weight follows the patch at the same pace, taken every few blends (its
            # ground statistics cost ~0.5 ms)
            self._blends += 1
            if self.weight is not None and self._blends % _WEIGHT_EVERY == 0:
                now = self._object_weight(image, g, top_left, samples)
                if now is not None:
                    pace = 1.0 - (1.0 - alpha) ** _WEIGHT_EVERY
                    self.weight = (1.0 - pace) * self.weight + pace * now

    def _window(self, image, g, centre, radius):
        """(window, its origin, r): the samples within ``radius`` (``r`` samples) of
        ``centre`` that a template placed there can cover; None without a template or
        where the window is flat."""
        if self.patch is None:
            return None
        h, w = self.patch.shape[:2]
        r = int(np.ceil(radius / self.step))
        top_left = self._top_left(centre, (w, h)) - self.step * r
        window = self.sample(image, g, top_left, (w + 2 * r, h + 2 * r), self.step)
        if window.shape[2:] != self.patch.shape[2:] or float(window.std()) < 1e-3:
            return None
        return window, top_left, r

    def _response(self, image, g, centre, radius, with_window=False, masked=True):
        """NCC over the window within ``radius`` of ``centre``: (response, its origin), and
        the window itself if asked; ``masked``: blended with the NCC over the target's own
        samples where the template has them (:func:`object_pixels`)."""
        sampled = self._window(image, g, centre, radius)
        if sampled is None:
            return (None, None, None) if with_window else (None, None)
        window, top_left, _ = sampled
        response = self._match(window, self._mask() if masked else None)
        return (response, top_left, window) if with_window else (response, top_left)

    def _match(self, window: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """The NCC of the template at every position of ``window``, blended with the NCC over
        the target's own samples where there is a ``mask`` (:meth:`_mask`)."""
        response = cv2.matchTemplate(window, self.patch, cv2.TM_CCOEFF_NORMED)
        if mask is None:
            return response
        k = self.object_weight
        return (1.0 - k) * response + k * _masked_ncc(window, self.patch, mask)

    def _centre(self, response: np.ndarray, top_left: np.ndarray, px: int, py: int) -> np.ndarray:
        h, w = self.patch.shape[:2]
        dx = _parabola_offset(response[py, max(px - 1, 0) : px + 2]) if px > 0 else 0.0
        dy = _parabola_offset(response[max(py - 1, 0) : py + 2, px]) if py > 0 else 0.0
        offset = np.array([px + dx + (w - 1) / 2.0, py + dy + (h - 1) / 2.0])
        return top_left + self.step * offset

    def search(
        self,
        image: np.ndarray,
        g: np.ndarray,
        centre: np.ndarray,
        radius: float,
        prior: float = 0.0,
    ) -> tuple[float, np.ndarray, float] | None:
        """(NCC peak, matched centre, contrast) within ``radius`` of ``centre``, or None.

        The contrast is the standard deviation of the matched region's samples: a person
        replaced by flat ground or a smooth occluder loses most of it. ``prior`` > 0 picks
        the maximum of ``NCC - prior * (d / radius)^2`` (``d``: distance from ``centre``)
        instead of the bare NCC maximum; the peak returned is still the NCC there. A window
        wider than :data:`_FINE_SEARCH_MAX` positions is searched coarse to fine
        (:meth:`_coarse_search`).
        """
        if self._wide(radius):
            return self._coarse_search(image, g, centre, radius, prior)
        response, top_left, window = self._response(
            image, g, centre + self.offset, radius, with_window=True
        )
        if response is None:
            return None
        if prior > 0.0:
            _, _, _, (px, py) = cv2.minMaxLoc(response - prior * _squared_offset(response.shape))
            peak = float(response[py, px])
        else:
            _, peak, _, (px, py) = cv2.minMaxLoc(response)
        h, w = self.patch.shape[:2]
        contrast = float(window[py : py + h, px : px + w].std())
        return float(peak), self._centre(response, top_left, px, py) - self.offset, contrast

    def peaks(
        self,
        image: np.ndarray,
        g: np.ndarray,
        centre: np.ndarray,
        radius: float,
        floor: float,
        count: int = 5,
    ) -> list[tuple[float, np.ndarray, float]]:
        """Up to ``count`` local NCC maxima above ``floor`` within ``radius``: (peak, centre,
        contrast), as :meth:`search` but by the plain NCC (re-locks search far, and there the
        blend with the few own-target samples also matched the ground 140 px off: person12
        --occlude 100:125 re-locked on it, lock recall 0.99 -> 0.57)."""
        if self._wide(radius):
            return self._coarse_peaks(image, g, centre, radius, floor, count)
        response, top_left, window = self._response(
            image, g, centre + self.offset, radius, with_window=True, masked=False
        )
        if response is None:
            return []
        h, w = self.patch.shape[:2]
        return [
            (
                float(response[y, x]),
                self._centre(response, top_left, x, y) - self.offset,
                float(window[y : y + h, x : x + w].std()),
            )
            for x, y in _local_maxima(response, floor, count)
        ]

    def _wide(self, radius: float) -> bool:
        """Is a search within ``radius`` wider than :data:`_FINE_SEARCH_MAX` positions (and so
        coarse to fine)?"""
        positions = (2 * np.ceil(radius / self.step) + 1) ** 2
        return self.patch is not None and positions > _FINE_SEARCH_MAX

    def _half_resolution_ncc(self, window: np.ndarray, r: int) -> np.ndarray:
        """The plain NCC of the template over a search ``window`` (radius ``r`` samples) at
        half resolution: a 16th of the work."""
        h, w = self.patch.shape[:2]
        small = cv2.resize(
            window,
            (max((w + 2 * r) // 2, 3), max((h + 2 * r) // 2, 3)),
            interpolation=cv2.INTER_AREA,
        )
        small_patch = cv2.resize(
            self.patch, (max(w // 2, 2), max(h // 2, 2)), interpolation=cv2.INTER_AREA
        )
        return cv2.matchTemplate(small, small_patch, cv2.TM_CCOEFF_NORMED)

    def _around(self, window: np.ndarray, r: int, cx: int, cy: int):
        """(x0, y0, the part of ``window``) whose full-resolution positions lie within 3
        samples of the half-resolution position (cx, cy); part None if it cannot hold the
        template."""
        h, w = self.patch.shape[:2]
        x0, y0 = max(2 * cx - 3, 0), max(2 * cy - 3, 0)
        x1, y1 = min(2 * cx + 4, 2 * r + 1), min(2 * cy + 4, 2 * r + 1)
        part = window[y0 : y1 + h - 1, x0 : x1 + w - 1]
        return x0, y0, (None if part.shape[0] < h or part.shape[1] < w else part)

    def _coarse_search(self, image, g, centre, radius, prior):
        """:meth:`search` over a wide window: the plain NCC at half resolution proposes its
        strongest local maxima and the window's centre (the prediction), and the match the
        search scores (blended, with the prior) is computed at full resolution within 3
        samples of each; the best of those wins."""
        sampled = self._window(image, g, centre + self.offset, radius)
        if sampled is None:
            return None
        window, top_left, r = sampled
        h, w = self.patch.shape[:2]
        coarse = self._half_resolution_ncc(window, r)
        candidates = [(r // 2, r // 2), *_local_maxima(coarse, -1.0, _COARSE_CANDIDATES)]
        mask = self._mask()
        offsets = _squared_offset((2 * r + 1, 2 * r + 1))
        best = None
        for cx, cy in candidates:
            x0, y0, part = self._around(window, r, cx, cy)
            if part is None:
                continue
            local = self._match(part, mask)
            scored = local - prior * offsets[y0 : y0 + local.shape[0], x0 : x0 + local.shape[1]]
            _, value, _, (px, py) = cv2.minMaxLoc(scored if prior > 0.0 else local)
            if best is None or value > best[0]:
                best = (value, local, x0, y0, px, py)
        if best is None:
            return None
        _, local, x0, y0, px, py = best
        origin = top_left + self.step * np.array([x0, y0], float)
        contrast = float(window[y0 + py : y0 + py + h, x0 + px : x0 + px + w].std())
        return float(local[py, px]), self._centre(local, origin, px, py) - self.offset, contrast

    def _coarse_peaks(self, image, g, centre, radius, floor, count):
        """:meth:`peaks` over a wide window: candidates from the NCC at half resolution (a
        16th of the work), each then matched at full resolution within 3 samples."""
        sampled = self._window(image, g, centre + self.offset, radius)
        if sampled is None:
            return []
        window, top_left, r = sampled
        h, w = self.patch.shape[:2]
        coarse = self._half_resolution_ncc(window, r)
        found: list[tuple[float, np.ndarray, float]] = []
        for cx, cy in _local_maxima(coarse, floor - _COARSE_SLACK, 2 * count):
            x0, y0, part = self._around(window, r, cx, cy)
            if part is None:
                continue
            local = cv2.matchTemplate(part, self.patch, cv2.TM_CCOEFF_NORMED)
            _, peak, _, (px, py) = cv2.minMaxLoc(local)
            if peak < floor:
                continue
            origin = top_left + self.step * np.array([x0, y0], float)
            matched = self._centre(local, origin, px, py) - self.offset
            if any(np.hypot(*(matched - f[1])) < 2 * self.step for f in found):
                continue
            contrast = float(window[y0 + py : y0 + py + h, x0 + px : x0 + px + w].std())
            found.append((float(peak), matched, contrast))
        return sorted(found, key=lambda f: -f[0])[:count]


# The target's own pixels (colour views). A walker's cast shadow joins them at the feet, walks
# with them and, dark and sharp on sunlit paving, matched a gray or colour template of the
# walker better than the walker did: person12 beyond its labels, tapped at frame 200, the
# lock slid down onto the shadow by frame ~250 whatever the template's extent. A shadow is
# the ground darkened with its colour kept; the person's shirt, skin and hair are not.
_GROUND_PERCENTILES = (50, 90)  # the lit ground: context samples in this brightness band
_OBJECT_CONTRAST = 30.0  # a sample differs from the ground by this much in some channel ...
_SHADOW_RATIO = 0.85  # ... and is a shadow when darker than this fraction of the ground ...
_SHADOW_CHROMA = 0.25  # ... with its channels' ratios to the ground within this of their mean
_MIN_CHROMA = 2.0  # a context whose channels never differ by this much is gray: no mask
_MIN_OBJECT_SAMPLES = 12  # the mask needs this many object samples ...
_MIN_OBJECT_SHARE = 0.03  # ... and this share of the template
_WEIGHT_EVERY = 4  # the weight is refreshed on every 4th blend of the patch
_OWN = 0.5  # a template sample is the target's own where its running weight reaches this
# Searches wider than this many positions look at half resolution first: late in person12
# (G_t scaled ~3x) a reacquire frame matched the frozen template over most of the image and
# cost 60-140 ms, and a locked search widened by the Kalman uncertainty up to 92 ms.
_FINE_SEARCH_MAX = 161 * 161
_COARSE_SLACK = 0.15  # half-resolution candidates may score this much below the floor
_COARSE_CANDIDATES = 5  # a wide locked search refines this many half-resolution maxima


def object_pixels(context: np.ndarray, inner: tuple[int, int, int, int] | None = None):
    """1 where a sample of the colour ``context`` (h, w, 3) differs from the local lit ground
    and is not a shadow on it (a darker sample of the ground's colour), 0 elsewhere, grown
    by one sample; None for a context without colour. ``inner`` = (y0, y1, x0, x1): the
    mask of that part only (the ground is still the whole context's)."""
    context = np.asarray(context, np.float32)
    if context.ndim != 3 or context.shape[2] != 3:
        return None
    sparse = context[::2, ::2]  # the ground level from every other sample: a quarter the work
    if float(np.abs(sparse[..., 0] - sparse[..., 2]).max()) < _MIN_CHROMA:
        return None  # a gray frame (thermal in three equal channels): brightness only
    brightness = (sparse[..., 0] + sparse[..., 1] + sparse[..., 2]).ravel()
    low, high = _percentiles(brightness, _GROUND_PERCENTILES)
    ground = _column_medians(sparse.reshape(-1, 3)[(brightness >= low) & (brightness <= high)])
    y0, y1, x0, x1 = inner or (0, context.shape[0], 0, context.shape[1])
    # one sample more each side, for the growing
    top, left = max(y0 - 1, 0), max(x0 - 1, 0)
    # channel by channel (numpy's reductions over a last axis of 3 are slow: 4x the time)
    channels = cv2.split(np.ascontiguousarray(context[top : y1 + 1, left : x1 + 1]))
    inverse = (1.0 / np.maximum(ground, 1.0)).astype(np.float32)
    ratio = [c * k for c, k in zip(channels, inverse, strict=True)]
    level = (ratio[0] + ratio[1] + ratio[2]) / np.float32(3.0)
    chroma = np.maximum(
        np.maximum(np.abs(ratio[0] - level), np.abs(ratio[1] - level)), np.abs(ratio[2] - level)
    )
    floor = ground.astype(np.float32)
    differs = np.zeros(level.shape, bool)
    for c, g in zip(channels, floor, strict=True):
        differs |= np.abs(c - g) > _OBJECT_CONTRAST
    shadow = (level < _SHADOW_RATIO) & (chroma < _SHADOW_CHROMA * np.maximum(level, 1e-3))
    grown = cv2.dilate((differs & ~shadow).astype(np.uint8), np.ones((3, 3), np.uint8))
    return grown[y0 - top : y0 - top + (y1 - y0), x0 - left : x0 - left + (x1 - x0)].astype(
        np.float32
    )


def _share_own(weight: np.ndarray) -> float:
    """The share of a template's samples that are the target's own (weight >= :data:`_OWN`)."""
    return float((weight >= _OWN).mean())


def _percentiles(values: np.ndarray, qs) -> list[float]:
    """``np.percentile(values, qs)`` (linear interpolation) of a 1-D array by one partition:
    a fifth of numpy's time on the ~2,000 samples here (15 against 79 us)."""
    last = values.size - 1
    positions = [q / 100.0 * last for q in qs]
    below = [int(p) for p in positions]
    part = np.partition(values, sorted({*below, *(min(i + 1, last) for i in below)}))
    return [
        float(part[i]) + (float(part[min(i + 1, last)]) - float(part[i])) * (p - i)
        for p, i in zip(positions, below, strict=True)
    ]


def _column_medians(rows: np.ndarray) -> np.ndarray:
    """``np.median(rows, axis=0)`` of an (n, 3) array by one partition (half numpy's time)."""
    n = len(rows)
    middle = n // 2
    part = np.partition(rows, [middle - 1, middle] if n % 2 == 0 else [middle], axis=0)
    if n % 2:
        return part[middle]
    return (part[middle - 1] + part[middle]) / rows.dtype.type(2)  # numpy's, in the rows' type


def _masked_ncc(window: np.ndarray, patch: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The NCC of ``patch`` over its samples where ``mask`` is 1, at every position of
    ``window``, in gray (the mask already carries the colour): OpenCV's masked
    TM_CCOEFF_NORMED on the gray images, from three plain correlations -- a third of the
    time of the masked colour match; -1 where the window's masked samples are flat."""
    gray = cv2.cvtColor(window, cv2.COLOR_BGR2GRAY) if window.ndim == 3 else window
    template = cv2.cvtColor(patch, cv2.COLOR_BGR2GRAY) if patch.ndim == 3 else patch
    gray = gray - 128.0  # smaller squares: less cancellation in the variance below
    n = float(mask.sum())
    centred = mask * (template - float((template * mask).sum()) / n)
    norm = float(np.sqrt((centred * centred).sum()))
    numerator = cv2.matchTemplate(gray, centred, cv2.TM_CCORR)
    first = cv2.matchTemplate(gray, mask, cv2.TM_CCORR)
    second = cv2.matchTemplate(gray * gray, mask, cv2.TM_CCORR)
    spread = second - first * first / n  # n x the variance of the masked samples
    flat = spread <= 1e-3 * n
    ncc = numerator / np.maximum(norm * np.sqrt(np.maximum(spread, 0.0)), 1e-6)
    ncc[flat] = -1.0
    return np.clip(ncc, -1.0, 1.0) if norm > 1e-3 else np.full_like(ncc, -1.0)


def _own_share(view: AppearanceView, centre: np.ndarray, size: np.ndarray) -> float | None:
    """The share of own-target samples (:func:`object_pixels`) in the box ``size`` (WORKING
    px) around ``centre`` (WORKING px) of a colour ``view``; None on gray views."""
    w, h = (max(int(round(float(v))), 3) for v in size)
    top_left = np.asarray(centre, float) - 0.5 * np.array([w, h], float)
    mask = _own_target(view.image, view.from_working, top_left, (w, h))
    return None if mask is None else float(mask.mean())


def _own_target(image, g, top_left, samples, step=1.0) -> np.ndarray | None:
    """:func:`object_pixels` over the ``samples`` (w, h) region from ``top_left`` (``g``'s
    domain, ``step`` px apart), judged against a window one region farther each way (the
    local ground); None on gray images."""
    if image.ndim != 3:
        return None
    w, h = samples
    origin = np.asarray(top_left, float) - step * np.array([w, h], float)
    context = AppearanceTemplate.sample(image, g, origin, (3 * w, 3 * h), step)
    return object_pixels(context, (h, 2 * h, w, 2 * w))


@cache
def _squared_offset(shape: tuple[int, int]) -> np.ndarray:
    """(d / r)^2 over a (2r+1)-square response: squared distance from its centre, 1 at r.
    Built once per response shape (a search window's size repeats frame after frame); the
    array is shared: read it, never write it."""
    rows, cols = shape
    half_y, half_x = (rows - 1) / 2.0, (cols - 1) / 2.0
    y, x = np.mgrid[0:rows, 0:cols].astype(np.float32)
    return ((x - half_x) ** 2 + (y - half_y) ** 2) / max(half_x * half_y, 1.0)


def _local_maxima(response: np.ndarray, floor: float, count: int) -> list[tuple[int, int]]:
    """(x, y) of up to ``count`` strongest 5x5 local maxima of ``response`` above ``floor``."""
    dilated = cv2.dilate(response, np.ones((5, 5), np.uint8))
    ys, xs = np.nonzero((response >= dilated) & (response >= floor))
    order = np.argsort(-response[ys, xs])[:count]
    return [(int(xs[i]), int(ys[i])) for i in order]


def _parabola_offset(values: np.ndarray) -> float:
    """Sub-pixel offset of a peak from three samples (0 at the middle one)."""
    if len(values) != 3:
        return 0.0
    left, middle, right = (float(v) for v in values)
    denominator = left - 2.0 * middle + right
    if abs(denominator) < 1e-9:
        return 0.0
    # (builtin min/max: np.clip on a scalar costs ~10 us, twice a frame)
    return float(min(max(0.5 * (left - right) / denominator, -0.5), 0.5))


_EYE6 = np.eye(6)  # the Kalman filter's identity (state: x, y, vx, vy, w, h)
_EYE6.setflags(write=False)


class TargetTracker:
    """Tracks one locked target. Stages hold only their own state; the lock and the
    verifier's verdict come in as arguments of :meth:`update`.

    Example:
        >>> import numpy as np
        >>> tracker = TargetTracker()
        >>> e = np.eye(8)[0]
        >>> start = LockCommand(np.array([100., 80.]), np.array([10., 24.]), e, "auto")
        >>> tracker.update(np.eye(2, 3), [], lock=start).mode
        'locked'
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
        self._h_position = self._h[:2]
        self._r_appearance = np.eye(2) * c.appearance_noise
        self.fps = DEFAULT_FPS  # the stream's frame rate (the pipeline sets it)
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Drop the lock (mode ``search``)."""
        self.mode: Mode = "search"
        self.x = np.zeros(6)
        self.p = np.eye(6)
        self.g = np.eye(3)  # G_t: stabilized -> current image
        self._g_inverse = np.eye(3)
        self.template = np.zeros(8)
        self.frozen_template = np.zeros(8)
        self.has_embedding = False
        self.appearance = AppearanceTemplate(object_weight=self.config.appearance_object_weight)
        # the look when the lock was lost: AppearanceTemplate.state(), (patch, weight)
        self.frozen_appearance: tuple[np.ndarray, np.ndarray | None] | None = None
        self._lost_velocity = np.zeros(2)  # stabilized px/frame when the lock was lost
        self.lock_height = 0.0
        self.misses = 0
        self._spatial_streak = 0
        self._appearance_streak: list[np.ndarray] = []
        self._veto_drops = True
        self._operator = False  # the lock is an operator's (a tap), not an automatic one
        self.typical_peak: float | None = None  # running NCC peak of this track's matches
        self.typical_contrast: float | None = None  # running contrast of the matched region
        self.reference_contrast: float | None = None  # the same, slow: the target's own
        self._occluded = False  # the last match dropped suddenly: wait for a strong one
        self._detected_only = 0  # consecutive locked frames measured by a detection alone
        self._appearance_only = 0  # ... by the appearance match alone
        self._merge_hold = 0  # frames left in which the velocity stays (two people merged)
        self._outside = 0  # consecutive lost frames with the coasted prediction off the image
        self._colour = False  # the lock was made on a colour frame: no merge hold
        self._previous: tuple[np.ndarray, np.ndarray] | None = None  # (working, G) at t-1
        # Stall check: (stabilized position, velocity, template, a detection took part) after
        # each of the last stall_frames + 1 measured locked frames.
        self._trail: deque[tuple[np.ndarray, np.ndarray, np.ndarray | None, bool]] = deque(
            maxlen=self.config.stall_frames + 1
        )
        self._walk_pace: float | None = None  # image px/frame while the track walked
        self._vetoes = 0  # consecutive vetoes of this lock
        self._verified = False  # the verifier has passed this lock at least once
        self._anchor_offsets: list[np.ndarray] = []  # re-anchor streak: detection - prediction
        self._first_look: AppearanceTemplate | None = None  # the operator's lock, as tapped

    def lock(self, candidate: Candidate | LockCommand, view: AppearanceView | None = None) -> None:
        """Lock now, on the current frame (``G_0 = I``); see also ``update(lock=...)``."""
        if isinstance(candidate, Candidate):
            candidate = LockCommand.from_candidate(candidate, "auto")
        c = self.config
        self.reset()
        self.mode = "locked"
        self.x = np.array([*candidate.centre, 0.0, 0.0, *candidate.size], float)
        self.p = np.diag(_LOCK_COVARIANCE)
        # A veto drops an automatic lock; an operator's lock is the operator's to drop, unless
        # configured otherwise (a veto then only stops template refreshes).
        self._operator = candidate.source.startswith("tap")
        self._colour = candidate.colour
        self._veto_drops = c.veto_drops_operator_locks or not self._operator
        if candidate.embedding is not None:
            self.template = _normalize(np.asarray(candidate.embedding, float))
            self.has_embedding = True
        self.lock_height = float(candidate.size[1])
        if view is not None:
            self._capture(view)
            if not self._veto_drops and self.appearance.patch is not None:
                self._first_look = self.appearance.copy()

    @property
    def locked(self) -> bool:
        return self.mode != "search"

    @property
    def _doubted(self) -> bool:
        """The verifier's last classification of this lock was a veto."""
        return self._vetoes > 0

    # -------------------------------------------------------------- geometry
    def _from_image(self, point: np.ndarray) -> np.ndarray:
        inverse = self._g_inverse
        return inverse[:2, :2] @ point + inverse[:2, 2]

    # The appearance lives in image coordinates: in an oblique view a walker's apparent size
    # and orientation follow the camera, not the ground plane that G_t models.
    def _capture(self, view: AppearanceView) -> None:
        centre = self._to_image(self.x[:2])
        # An operator's lock: the upper part (TrackerConfig.appearance_upper); an automatic
        # one keeps the whole box, whose template also drives re-locks only the verifier vets
        # (cut, false verified auto-locks rose: 6 -> 9 on person-free footage, 86 -> 123
        # false-lock frames over person12's 16 auto-lock runs).
        upper = self.config.appearance_upper if self._operator else 1.0
        self.appearance.capture(
            view.image, view.from_working, centre, self.x[4:6], self.config, upper
        )

    def _blend(self, view: AppearanceView, centre: np.ndarray, alpha: float) -> None:
        image_centre = self._to_image(centre)
        self.appearance.blend(view.image, view.from_working, image_centre, alpha)

    def _search(
        self, view: AppearanceView, radius: float
    ) -> tuple[float, np.ndarray, float] | None:
        """(NCC peak, matched centre in stabilized px, contrast) within ``radius`` stabilized
        px."""
        match = self.appearance.search(
            view.image,
            view.from_working,
            self._to_image(self.x[:2]),
            radius * self._scale(),
            self.config.appearance_prior,
        )
        return None if match is None else (match[0], self._from_image(match[1]), match[2])

    def _scale(self) -> float:
        return float(np.sqrt(abs(np.linalg.det(self.g[:2, :2]))))

    def _to_stabilized(self, candidate: Candidate) -> np.ndarray:
        inverse = self._g_inverse
        centre = inverse[:2, :2] @ candidate.centre + inverse[:2, 2]
        return np.array([*centre, *candidate.size])

    def _to_image(self, stabilized: np.ndarray) -> np.ndarray:
        return self.g[:2, :2] @ stabilized + self.g[:2, 2]

    def image_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Current estimate mapped back to the image (WORKING px): (centre, size)."""
        return self._to_image(self.x[:2]), self.x[4:6].copy()

    # ------------------------------------------------------------------ gates
    def embedding_gate(self, height: float) -> float:
        """``eq:scalegate``: tau_e(h), scale-aware."""
        c = self.config
        if height <= c.scale_gate_ratio * self.lock_height:
            return c.embedding_threshold
        return max(
            c.embedding_floor,
            c.scale_gate_ratio * c.embedding_threshold * self.lock_height / height,
        )

    def _innovation(self, measurement: np.ndarray, noise: np.ndarray | None = None) -> float:
        """gamma^2 of the positional innovation (``eq:gates``, 2 DoF)."""
        noise = self._r[:2, :2] if noise is None else noise
        s = self.p[:2, :2] + noise
        nu = measurement[:2] - self.x[:2]
        return float(nu @ np.linalg.solve(s, nu))

    def _search_radius(self, upper: float) -> float:
        low, _ = self.config.search_radius
        sigma = np.sqrt(max(self.p[0, 0], self.p[1, 1]) + self.config.appearance_noise)
        return float(min(max(3.0 * sigma, low), upper))  # (np.clip on a scalar: ~10 us)

    # ------------------------------------------------------------------ update
    def update(
        self,
        motion: np.ndarray,
        candidates: list[Candidate],
        verdict: bool | None = None,
        lock: LockCommand | None = None,
        release: bool = False,
        view: AppearanceView | None = None,
        content: tuple[float, float, float, float] | None = None,
    ) -> TrackState:
        """Advance one frame.

        Args:
            motion: Stage A's ``M_t`` (2x3, WORKING px, frame t-1 -> t).
            candidates: this frame's detections.
            verdict: the verifier's verdict on this track: True (moves like a human), False
                (veto) or None (not classified).
            lock: lock on this target, given in this frame's coordinates (applied after
                ``M_t``, which then plays no part).
            release: drop the lock (before ``lock``, if both are given).
            view: the image the appearance measurement samples (None: detections only).
            content: ``(x0, y0, x1, y1)`` of the image content in WORKING px (the letterbox
                area); the target leaving it is lost. None: the whole working frame.
        """
        state = self._update(motion, candidates, verdict, lock, release, view, content)
        # kept for the next frame: local ground motion around a re-lock candidate
        self._previous = None if view is None or view.working is None else (view.working, self.g)
        return state

    def _update(self, motion, candidates, verdict, lock, release, view, content) -> TrackState:
        content = content or _WHOLE_FRAME
        if release:
            self.reset()
        if lock is not None:
            self.lock(lock, view)
            return self._state(None, None, None, content, event="lock")
        if self.mode == "search":
            return TrackState("search", None, None, None, None, 0)
        c = self.config
        self.g = lift(motion) @ self.g  # G_t = H(M_t) G_{t-1}
        self._g_inverse = np.linalg.inv(self.g)  # once per frame, for every measurement
        if self.mode == "reacquire":  # coasting: a stop is likelier than a straight line
            self.x[2:4] *= c.coast_velocity_keep
        self.x = self._f @ self.x  # x = F x
        self.p = self._f @ self.p @ self._f.T + self._q  # P = F P F^T + Q
        measurements = [self._to_stabilized(k) for k in candidates]
        gammas = [self._innovation(m) for m in measurements]
        if verdict is not None:
            self._vetoes = self._vetoes + 1 if verdict is False else 0
            self._verified = self._verified or verdict is True
        # a lock the verifier has passed before is dropped after vetoes_to_drop vetoes in a
        # row; one it never passed, at the first
        vetoed = (
            verdict is False
            and self.mode == "locked"
            and self._veto_drops
            and self._vetoes >= (c.vetoes_to_drop if self._verified else 1)
        )
        event = None
        if vetoed:  # the verifier says this track does not move like a human: coast
            self._enter_reacquire()
            event = "lost"
        if self.mode == "locked":
            anchor = self._reanchor(candidates, measurements, view)
            if anchor is not None:
                return self._state(anchor, candidates, "relock", content, None, "relock")
            chosen, peak, measured_by = self._locked_step(
                candidates, measurements, gammas, verdict, view
            )
            if measured_by is not None and self._stalled(measured_by):
                self._enter_reacquire_before_stall()
                return self._state(chosen, candidates, None, content, peak, "lost")
            if measured_by is None or not self._inside(content):
                self.misses += 1
                if self.misses >= c.reacquire_after_misses or not self._inside(content):
                    self._enter_reacquire()
                    event = "lost"
            return self._state(chosen, candidates, measured_by, content, peak, event)
        if self.mode == "reacquire" and not vetoed:
            chosen, peak = self._try_relock(candidates, measurements, gammas, view)
            if self.mode == "locked":
                return self._state(chosen, candidates, "relock", content, peak, "relock")
            # an automatic lock whose person walked off the image is not waited for long:
            # nobody chose them, and auto-lock is free again once the track is dropped
            self._outside = 0 if self._inside(content) else self._outside + 1
            outside = (
                not self._operator
                and c.auto_give_up_outside is not None
                and self._outside >= max(1.0, c.auto_give_up_outside * self.fps)
            )
            if self.misses >= c.give_up_after or outside:  # lost for good: say so, stop
                self.reset()
                return TrackState("search", None, None, None, None, 0, peak, None, "dropped")
            return self._state(None, None, None, content, peak, event)
        return self._state(None, None, None, content, None, event)

    def _inside(self, content: tuple[float, float, float, float]) -> bool:
        x, y = self._to_image(self.x[:2])
        return content[0] <= x <= content[2] and content[1] <= y <= content[3]

    def _state(self, chosen, candidates, measured_by, content, peak=None, event=None):
        centre, size = self.image_box()
        # never report a box off the image (np.clip's wrapper costs ~4x its ufuncs here)
        centre = np.minimum(np.maximum(centre, content[:2]), content[2:])
        score = candidates[chosen].score if chosen is not None else None
        return TrackState(
            self.mode, centre, size, score, chosen, self.misses, peak, measured_by, event
        )

    def _locked_step(self, candidates, measurements, gammas, verdict, view):
        c = self.config
        chosen, best = None, np.inf
        # Coasting widens the Kalman gate; no walker gets farther from the prediction than
        # a re-lock would search (a body height, growing per unmeasured frame).
        reach = self._relock_radius() if self.misses else np.inf
        for i, (k, gamma) in enumerate(zip(candidates, gammas, strict=True)):
            if gamma >= c.gate_mahalanobis:
                continue
            if np.hypot(*(measurements[i][:2] - self.x[:2])) > reach:
                continue
            similarity = float(self.template @ k.embedding) if self.has_embedding else 0.0
            if self.has_embedding and similarity <= self.embedding_gate(k.size[1]):
                continue
            cost = gamma - c.association_embedding_weight * similarity
            if cost < best:
                best, chosen = cost, i
        match = None
        if view is not None:
            match = self._search(view, self._search_radius(c.search_radius[1]))
        peak = None if match is None else match[0]
        # Occlusion: a match suddenly much weaker than the last accepted one is an occluder
        # (or the target gone), not the target. Until a match as strong as before the drop
        # returns, the appearance gives no measurement and learns nothing.
        previous = self.typical_peak
        if match is None or previous is None:
            needed = c.appearance_threshold
        elif self._occluded:
            needed = max(c.appearance_threshold, c.relock_appearance * previous)
        else:
            needed = max(c.appearance_threshold, c.occlusion_ratio * previous)
        # A match whose region lost most of its contrast is the person replaced by flatter
        # ground or an occluder, even where the NCC peak stays moderate (the template's margin
        # of ground still matches).
        contrast = self.typical_contrast
        flattened = (
            match is not None and contrast is not None and match[2] < c.contrast_drop * contrast
        )
        # NCC ignores contrast: a faint target's template also matches the edge of a bright,
        # textured occluder sliding over it, and a slowly refreshed template absorbs it. A
        # region far more contrasted than the target has been is not the target.
        surged = match is not None and self._surged(match[2])
        appearance_ok = (
            match is not None
            and match[0] >= needed
            and not flattened
            and not surged
            and self._innovation(match[1], self._r_appearance) < c.gate_mahalanobis
        )
        # The frame the appearance drops (an occluder, the target gone): a detection there may
        # be the residual of where the target *was* (R holds frame t-1 as well as t), so it
        # may move the estimate but not turn the walk that coasting will follow.
        onset = match is not None and previous is not None and not appearance_ok
        onset = onset and not self._occluded
        if match is not None and previous is not None and not appearance_ok:
            self._occluded = True
        # Two people merged into the chosen detection (one walks past or crosses the target):
        # the blob moves as the pair does, and the NCC match may slide onto the other person.
        # For a while the measurements move the estimate, not the walk it carries on with.
        if chosen is not None and c.merge_area_ratio and not self._colour:
            width, height = candidates[chosen].size
            if width * height >= c.merge_area_ratio * self.x[4] * self.x[5]:
                self._merge_hold = c.merge_hold_frames
        walk = self.x[2:4].copy() if self._merge_hold else None
        self._merge_hold = max(self._merge_hold - 1, 0)
        if chosen is None and not appearance_ok:
            return None, peak, None
        if chosen is not None:
            velocity = self.x[2:4].copy()
            self._accept(candidates[chosen], measurements[chosen], verdict)
            if onset:
                self.x[2:4] = velocity
        if appearance_ok:
            self._kalman(match[1], self._h_position, self._r_appearance)
            self.misses = 0
        if walk is not None:
            self.x[2:4] = walk
        # Template hygiene: a vetoed track never teaches the template. (Teaching verified
        # frames faster, as the paper does for the embedding, made the template drift on
        # person12.) At the matched position, not the filtered one: a lag would creep in.
        teach = appearance_ok and match[0] >= c.refresh_similarity and verdict is not False
        if appearance_ok:
            self._occluded = False
            keep = c.typical_peak_keep
            self.typical_peak = (
                match[0] if previous is None else keep * previous + (1 - keep) * match[0]
            )
            self.typical_contrast = (
                match[2] if contrast is None else keep * contrast + (1 - keep) * match[2]
            )
            slow, reference = c.reference_contrast_keep, self.reference_contrast
            self.reference_contrast = (
                match[2] if reference is None else slow * reference + (1 - slow) * match[2]
            )
        if view is not None and teach:
            self._blend(view, match[1], c.template_refresh)
        measured_by = (
            "both" if chosen is not None and appearance_ok else
            "detection" if chosen is not None else "appearance"
        )  # fmt: skip
        # The look changed (the person turned, left the shade) and only the detector follows
        # them: after relearn_after such frames the template is taken afresh where they are.
        self._detected_only = self._detected_only + 1 if measured_by == "detection" else 0
        self._appearance_only = self._appearance_only + 1 if measured_by == "appearance" else 0
        relearn = c.relearn_after
        if relearn and self._detected_only >= relearn and view is not None and verdict is not False:
            self._retake_look(view)
        return chosen, peak, measured_by

    def _retake_look(self, view: AppearanceView) -> None:
        """Take the appearance afresh where the track is; its running values restart."""
        self._capture(view)
        self.typical_peak = self.typical_contrast = self.reference_contrast = None
        self._occluded = False
        self._detected_only = 0
        self._appearance_only = 0

    def _reanchor(self, candidates, measurements, view) -> int | None:
        """Move a vetoed operator's lock -- or one measured by its appearance match alone for
        ``reanchor_after_appearance`` frames -- onto a detection that stays beside it (see
        ``TrackerConfig.reanchor_frames``); the index of that detection if it was done.

        The detection continuing the streak (its offset from the prediction changed by at most
        ``reanchor_consistency`` body heights), or else the best-scored one within a body
        height (``reanchor_appearance_reach`` heights when only the appearance run opened it),
        extends it. At ``reanchor_frames`` the detection becomes the new origin
        (position and size; the walk's velocity is kept) and the appearance is taken afresh
        there.
        """
        c = self.config
        first = self._first_look
        drifting = 0 < c.reanchor_after_appearance <= self._appearance_only
        if not (
            c.reanchor_frames
            and (self._doubted or drifting)
            and first is not None
            and view is not None
        ):
            self._anchor_offsets = []
            return None
        height = max(float(self.x[5]) / self._scale(), 1.0)
        reach = height * (c.reanchor_appearance_reach if drifting and not self._doubted else 1.0)
        offsets = {i: m[:2] - self.x[:2] for i, m in enumerate(measurements)}
        # A detection of the whole person (a head alone would shrink the track onto it) ...
        least = c.reanchor_min_height * float(self.x[5])
        near = [
            i
            for i, d in offsets.items()
            if np.hypot(*d) <= reach and candidates[i].size[1] >= least
        ]
        # ... and only where the operator's target, as tapped, fits better than where the
        # track is: the walker's shadow is detected beside them too, and walks with them.
        radius = c.reanchor_consistency * float(self.x[5])

        def fit(point: np.ndarray) -> float:
            match = first.search(view.image, view.from_working, self._to_image(point), radius)
            return -1.0 if match is None else match[0]

        if near:
            here = fit(self.x[:2])
            near = [i for i in near if fit(measurements[i][:2]) > here + c.reanchor_margin]
        # ... and, on colour frames, not onto a box with far less of a target in it than the
        # track's own: the walker's cast shadow, detected below them, is the ground darkened
        share_ratio = c.reanchor_own_share
        if near and share_ratio > 0:
            own = _own_share(view, self._to_image(self.x[:2]), self.x[4:6])
            if own is not None and own > 0:
                near = [
                    i
                    for i in near
                    if (_own_share(view, candidates[i].centre, candidates[i].size) or 0.0)
                    >= share_ratio * own
                ]
        best = None
        if self._anchor_offsets and near:
            last = self._anchor_offsets[-1]
            best = min(near, key=lambda i: np.hypot(*(offsets[i] - last)))
            if np.hypot(*(offsets[best] - last)) > c.reanchor_consistency * height:
                best = None
        if best is None:
            self._anchor_offsets = []
            if not near:
                return None
            best = max(near, key=lambda i: candidates[i].score)
        self._anchor_offsets.append(offsets[best])
        if len(self._anchor_offsets) < c.reanchor_frames:
            return None
        velocity = self.x[2:4].copy()
        self._relock(measurements[best][:2], measurements[best][2:], None, rebuild=False)
        self.x[2:4] = velocity
        self._retake_look(view)
        return best

    def _stalled(self, measured_by: str) -> bool:
        """Add this measured frame to the trail; has the track, followed by its appearance
        alone, stopped dead after walking (see ``TrackerConfig.stall_frames``)?

        Paces are image px per frame over ``stall_frames``; the walking pace is a running
        value over the windows in which the track walked (updated here).
        """
        self._trail.append(
            (
                self.x[:2].copy(),
                self.x[2:4].copy(),
                self.appearance.state(),
                measured_by != "appearance",
            )
        )
        c = self.config
        k = c.stall_frames
        if len(self._trail) <= k:
            return False
        trail = list(self._trail)
        now = float(np.hypot(*(trail[-1][0] - trail[-1 - k][0]))) / k * self._scale()
        walk = self._walk_pace
        if now >= c.walk_speed[0]:
            self._walk_pace = now if walk is None else 0.9 * walk + 0.1 * now
        detected = sum(d for *_, d in trail[-k:])
        return walk is not None and detected <= k // 4 and now < c.stall_ratio * walk

    def _enter_reacquire_before_stall(self) -> None:
        """Lost at a stall: the walk and the look from before it, coasting on from here."""
        k = self.config.stall_frames
        _, velocity, look, _ = self._trail[-1 - k]
        if look[0] is not None:
            self.appearance.restore(look)
        self.x[2:4] = velocity
        self._trail.clear()
        self._enter_reacquire()

    def _surged(self, contrast: float) -> bool:
        """Has the matched region far more contrast than the target's own (slow) value?"""
        reference = self.reference_contrast
        return reference is not None and contrast > self.config.contrast_rise * reference

    def _kalman(self, z: np.ndarray, h: np.ndarray, r: np.ndarray) -> None:
        s = h @ self.p @ h.T + r
        gain = self.p @ h.T @ np.linalg.inv(s)  # K = P H^T S^-1
        self.x = self.x + gain @ (z - h @ self.x)  # x = x + K (z - H x)
        self.p = (_EYE6 - gain @ h) @ self.p  # P = (I - K H) P

    def _accept(self, candidate: Candidate, measurement: np.ndarray, verdict: bool | None) -> None:
        c = self.config
        self._kalman(measurement, self._h, self._r)
        e = candidate.embedding
        if not self.has_embedding:  # a lock without a detection: the first one sets it
            self.template, self.has_embedding = _normalize(e), True
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
        self._merge_hold = 0
        self._outside = 0
        self._trail.clear()
        self._walk_pace = None
        self._lost_velocity = self.x[2:4].copy()  # the walk before the loss
        self.frozen_template = self.template.copy()
        self.frozen_appearance = None if self.appearance.patch is None else self.appearance.state()
        self._spatial_streak = 0
        self._appearance_streak = []

    def _relock_radius(self) -> float:
        """How far from the coasted prediction the target can be by now (stabilized px): a
        body height, growing per frame since the last measurement by ``relock_growth``
        heights or ``relock_walk`` times the walk's speed (before the loss, when lost),
        whichever is more, at most ``relock_max_radius``."""
        c = self.config
        height = max(float(self.x[5]) / self._scale(), 1.0)
        velocity = self._lost_velocity if self.mode == "reacquire" else self.x[2:4]
        walk = c.relock_walk * float(np.hypot(*velocity))
        return min(c.relock_max_radius, height + max(c.relock_growth * height, walk) * self.misses)

    def _try_relock(self, candidates, measurements, gammas, view):
        c = self.config
        self.misses += 1
        peak = None
        # 1. Appearance: the frozen template matched near the coasted prediction, by a region
        # that *moves* the same way over consecutive frames. An occluder, or ground that looks
        # like the target, stays put in stabilized coordinates and never re-locks.
        if view is not None and self.frozen_appearance is not None:
            self.appearance.restore(self.frozen_appearance)
            floor = max(c.appearance_threshold, c.relock_floor * (self.typical_peak or 1.0))
            found = self._peaks(view, self._search_radius(self._relock_radius()), floor)
            if self.typical_contrast is not None:  # flat ground or a smooth occluder: not them
                least = c.contrast_drop * self.typical_contrast
                found = [f for f in found if f[2] >= least and not self._surged(f[2])]
            found = [f for f in found if self._ahead_of_the_walk(f[1])]
            # ... on colour frames, by a region holding a good part of the look's own-target
            # samples: the parallax of a canopy's edge moves it over the ground like a walker
            if found and c.relock_own_share > 0:
                found = [f for f in found if self._own_enough(view, f[1], c.relock_own_share)]
            peak = max((f[0] for f in found), default=None)
            moving = self._moving_match([f[1] for f in found], view)
            if moving is not None:
                self._relock(moving[0], self.x[4:6], None, rebuild=False)
                self.x[2:4] = moving[1]  # the chain's own velocity: it is walking
                # The template stays the frozen one, the look from before the loss (captured
                # afresh here, in tree shade, it drifted off the person as they left the
                # shade); its running peak and contrast restart from here.
                self.typical_peak = self.typical_contrast = self.reference_contrast = None
                return None, peak
        if not candidates:
            self._spatial_streak = 0
            return None, peak
        inside = [
            i
            for i, (g, m) in enumerate(zip(gammas, measurements, strict=True))
            if g < c.relock_gate and np.hypot(*(m[:2] - self.x[:2])) <= self._relock_radius()
        ]
        if not inside:
            self._spatial_streak = 0
            return None, peak
        # 2. A detection with the frozen embedding, inside the re-lock gate (never anywhere).
        if self.has_embedding:
            similarities = {
                i: float(self.frozen_template @ candidates[i].embedding) for i in inside
            }
            best = max(similarities, key=similarities.get)
            if similarities[best] > c.relock_similarity:
                m = measurements[best]
                self._relock(m[:2], m[2:], candidates[best].embedding, rebuild=False)
                return best, peak
        # 3. Spatial persistence inside the re-lock gate for 3 frames (template rebuilt).
        self._spatial_streak += 1
        nearest = min(inside, key=lambda i: gammas[i])
        if self._spatial_streak >= c.relock_frames:
            m = measurements[nearest]
            self._relock(m[:2], m[2:], candidates[nearest].embedding, rebuild=True)
            if view is not None:
                self._capture(view)
                self.typical_peak = self.typical_contrast = self.reference_contrast = None
            return nearest, peak
        return None, peak

    def _ahead_of_the_walk(self, position: np.ndarray) -> bool:
        """Is ``position`` (stabilized px) where a person hidden while walking can be now?

        The re-lock region grows along the walk before the loss, not isotropically: the coast
        slows down (``coast_velocity_keep``), so a person who kept walking is ahead of the
        prediction, up to the re-lock radius; behind it by at most half a body height, and
        aside by at most a body height (or half the radius once that is larger).
        """
        speed = float(np.hypot(*self._lost_velocity))
        if speed < self.config.walk_speed[0]:  # no walk to follow: the isotropic radius
            return True
        height = max(float(self.x[5]) / self._scale(), 1.0)
        radius = self._relock_radius()
        along_unit = self._lost_velocity / speed
        offset = position - self.x[:2]
        along = float(offset @ along_unit)
        aside = abs(float(offset[0] * along_unit[1] - offset[1] * along_unit[0]))
        return -height / 2 <= along <= radius and aside <= max(height, radius / 2)

    def _own_enough(self, view: AppearanceView, centre: np.ndarray, ratio: float) -> bool:
        """Does the template's region at stabilized ``centre`` hold at least ``ratio`` x the
        (frozen) template's share of own-target samples? True without a colour mask."""
        look = self.appearance
        if look.weight is None:
            return True
        here = look.own_share_at(view.image, view.from_working, self._to_image(centre))
        return here is None or here >= ratio * _share_own(look.weight)

    def _peaks(self, view: AppearanceView, radius: float, floor: float):
        """Local NCC maxima (peak, stabilized centre) within ``radius`` stabilized px."""
        found = self.appearance.peaks(
            view.image,
            view.from_working,
            self._to_image(self.x[:2]),
            radius * self._scale(),
            floor,
        )
        return [(p, self._from_image(centre), contrast) for p, centre, contrast in found]

    def _moving_match(
        self, positions: list[np.ndarray], view: AppearanceView
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(position, velocity) of a match that continues a chain of matches moving like a
        walker, or None.

        A match extends the previous frame's chain whose predicted next position (last
        position + last step) is nearest, within ``_RELOCK_CONSISTENCY`` px plus a third of
        the step; every step must be between ``walk_speed`` bounds (stabilized px/frame).
        ``relock_appearance_frames`` consistent steps re-lock. Hopping between static
        look-alikes gives steps that disagree; an occluder gives no step at all.
        """
        c = self.config
        low, high = c.walk_speed
        chains = []
        for position in positions:
            best = None
            for chain in self._appearance_streak:
                step = position - chain[-1]
                speed = float(np.hypot(*step))
                if not low <= speed <= high:
                    continue
                if len(chain) >= 2:
                    expected = chain[-1] - chain[-2]
                    miss = float(np.hypot(*(step - expected)))
                    if miss > _RELOCK_CONSISTENCY + speed / 3:
                        continue
                else:
                    miss = 0.0
                if best is None or miss < best[0]:
                    best = (miss, chain)
            chain = [*(best[1] if best else []), position]
            chains.append(chain[-(c.relock_appearance_frames + 1) :])
        self._appearance_streak = chains
        for chain in chains:
            if len(chain) <= c.relock_appearance_frames:
                continue
            # A walker covers ground; a look-alike edge swaying with parallax creeps.
            pace = float(np.hypot(*(chain[-1] - chain[0]))) / (len(chain) - 1)
            if pace >= self.relock_min_pace() and self._moves_on_its_ground(chain, view):
                return chain[-1], chain[-1] - chain[-2]
        return None

    def relock_min_pace(self) -> float:
        """Least stabilized px/frame of an appearance re-lock chain at the stream's frame rate
        (the same walking speed covers fewer px a frame at a higher rate)."""
        return self.config.relock_min_pace * self.config.pace_fps / self.fps

    def _moves_on_its_ground(self, chain: list[np.ndarray], view: AppearanceView) -> bool:
        """Does the match move relative to the ground around it (not only in stabilized
        coordinates, which drift off the ground plane in oblique views)?

        The ground's own motion from t-1 to t is the median LK flow of corners in a ring
        around the match; the match must differ from it by ``walk_speed[0]`` (image px).
        """
        if self._previous is None or view.working is None:
            return False
        previous_working, previous_g = self._previous
        before = previous_g[:2, :2] @ chain[-2] + previous_g[:2, 2]  # image px at t-1
        after = self._to_image(chain[-1])
        height = float(self.x[5])
        x, y = before
        frame_h, frame_w = previous_working.shape
        half = 2.0 * height
        x0, y0 = int(max(x - half, 0)), int(max(y - half, 0))
        x1, y1 = int(min(x + half, frame_w)), int(min(y + half, frame_h))
        if x1 - x0 < 8 or y1 - y0 < 8:
            return False
        mask = np.full((y1 - y0, x1 - x0), 255, np.uint8)
        w2, h2 = 0.75 * float(self.x[4]), 0.75 * height  # the match itself is not ground
        cv2.rectangle(
            mask,
            (int(x - x0 - w2), int(y - y0 - h2)),
            (int(x - x0 + w2), int(y - y0 + h2)),
            0,
            -1,
        )
        corners = cv2.goodFeaturesToTrack(
            previous_working[y0:y1, x0:x1], 40, 0.01, 3, mask=mask, blockSize=3
        )
        if corners is None or len(corners) < 6:
            return False
        start = (corners.reshape(-1, 2) + [x0, y0]).astype(np.float32)
        end, status, _ = cv2.calcOpticalFlowPyrLK(
            previous_working, view.working, start, None, winSize=(11, 11), maxLevel=2
        )
        good = status.reshape(-1) == 1
        if good.sum() < 6:
            return False
        ground = np.median(end[good] - start[good], axis=0)
        return float(np.hypot(*((after - before) - ground))) >= self.config.walk_speed[0]

    def _relock(self, centre, size, embedding, rebuild: bool) -> None:
        """Re-initialize at a new origin: position from the measurement, velocity zero."""
        self.mode = "locked"
        self.x = np.array([*centre, 0.0, 0.0, *size], float)
        self.p = np.diag(_LOCK_COVARIANCE)
        if embedding is not None and (rebuild or not self.has_embedding):
            self.template, self.has_embedding = _normalize(embedding), True
        self._spatial_streak = 0
        self._appearance_streak = []
        self._anchor_offsets = []
        self._vetoes = 0  # a veto of the track before is not one of this new origin
        self._verified = False
        self._trail.clear()
        self.misses = 0
