"""The target's look, shared by Stage C (the colour evidence on its boxes, :mod:`emts.stages.
c_detect.boxfit`) and Stage D (the appearance measurement, :mod:`emts.stages.d_track`): a
template of the target matched by normalized cross-correlation, weighted on colour views by the
target's own samples (:mod:`emts.stages.own_target`: neither the ground nor a shadow on it).
Parameters: :class:`emts.config.AppearanceConfig` (SPEC §0: not in the paper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import cv2
import numpy as np

from emts.config import AppearanceConfig, TrackerConfig
from emts.geometry import Frame
from emts.stages.own_target import (
    _masked_ncc,
    own_share_of_weight,
    own_target,
    sample_region,
)


@dataclass(frozen=True)
class AppearanceView:
    """The image the appearance measurement samples, and the map WORKING px -> its px.

    The working frame itself (gray) by default; the pipeline passes colour input frames, since
    colour separates a person from a shadow that gray does not.
    """

    image: np.ndarray  # (h, w) or (h, w, 3) uint8
    from_working: np.ndarray = field(default_factory=lambda: np.eye(3))  # 3x3
    working: np.ndarray | None = None  # the gray working frame (local ground motion)
    # :func:`~emts.stages.own_target.own_target_in_view`'s judgements of this view, by
    # region: the loss checks judge the track's box twice a frame (its colours, then its
    # share of own-target samples)
    judged: dict = field(default_factory=dict, repr=False, compare=False)

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

    def __init__(
        self,
        max_side: int = 64,
        object_weight: float = 0.7,
        look: AppearanceConfig | None = None,
    ) -> None:
        self.max_side = max_side
        self.look = look or AppearanceConfig()
        # the weight of the NCC over the target's own pixels (colour views; 0: never)
        self.object_weight = object_weight
        self.patch: np.ndarray | None = None  # float32 samples
        # per-sample weight of the target's own pixels (:func:`~emts.stages.own_target.
        # object_pixels`), running like the patch; None: every sample counts (gray views, no
        # chroma, too few such pixels)
        self.weight: np.ndarray | None = None
        self.step = 1.0  # px per sample
        self.offset = np.zeros(2)  # the template's centre minus the target's (g's domain px)
        self.inner = (0.0, 0.0)  # the margin's share of the template's width, height
        self._blends = 0
        # gray searches pick among close maxima by the detail (:meth:`_by_detail`): set for an
        # operator's lock by the tracker (TargetTracker._capture)
        self.by_detail = False
        # the last fine search's response, its origin and peak (px, py): other_maxima reads it
        self._last: tuple[np.ndarray, np.ndarray, int, int] | None = None

    # ``size`` samples, ``step`` px apart, cut from an image (:func:`emts.stages.own_target.
    # sample_region`)
    sample = staticmethod(sample_region)

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
        inside = self._inside_samples(top_left, g, image.shape, samples)
        if inside is not None and inside.any():
            # past the image's edge the warp gives black, no look of the target: a black band
            # drew the template to dark things and along the edge (a walker cut by the view's
            # edge); those samples take the mean of the rest, which NCC reads as no structure
            patch[~inside] = patch[inside].mean(axis=0)
        self.patch = patch if float(patch.std()) > 1e-3 else None  # a flat patch matches anything
        self.weight = None
        # the margin's samples are the ground around the target, not the target
        self.inner = (config.appearance_margin / grow, config.appearance_margin / grow)
        if self.patch is not None and self.object_weight > 0:
            self.weight = self._object_weight(image, g, top_left, samples)

    def _object_weight(
        self, image: np.ndarray, g: np.ndarray, top_left: np.ndarray, samples: tuple[int, int]
    ) -> np.ndarray | None:
        """The target's own pixels (:func:`~emts.stages.own_target.object_pixels`) over the
        template's samples, from a window reaching one template size farther each way (the
        local ground)."""
        mask = own_target(image, g, top_left, samples, self.step, self.look)
        w, h = samples
        if mask is not None:
            bx, by = (int(round(f * n)) for f, n in zip(self.inner, (w, h), strict=True))
            keep = np.zeros_like(mask)
            keep[by : h - by, bx : w - bx] = 1.0
            mask *= keep
        return mask

    def copy(self) -> AppearanceTemplate:
        """An independent copy (the patch, its weight, sampling step and offset, the look's
        settings)."""
        twin = AppearanceTemplate(self.max_side, self.object_weight, self.look)
        twin.by_detail = self.by_detail
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
        return None if here is None else own_share_of_weight(here, self.look)

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
        look = self.look
        mask = (self.weight >= look.own_weight).astype(np.float32)
        return (
            mask
            if mask.sum() >= max(look.min_object_samples, look.min_object_share * mask.size)
            else None
        )

    def _top_left(self, centre: np.ndarray, samples: tuple[int, int]) -> np.ndarray:
        return centre - self.step * (np.array(samples, float) - 1.0) / 2.0

    def bounds(self, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(top-left, bottom-right) sample centres of the template placed where a search
        reports ``centre`` (the target's centre); needs a template."""
        samples = (self.patch.shape[1], self.patch.shape[0])
        top_left = self._top_left(centre + self.offset, samples)
        return top_left, top_left + self.step * (np.array(samples, float) - 1.0)

    def blend(self, image: np.ndarray, g: np.ndarray, centre: np.ndarray, alpha: float) -> None:
        if self.patch is None:
            return
        samples = (self.patch.shape[1], self.patch.shape[0])
        top_left = self._top_left(centre + self.offset, samples)
        current = self.sample(image, g, top_left, samples, self.step)
        if current.shape == self.patch.shape:
            inside = self._inside_samples(top_left, g, image.shape, samples)
            if inside is not None:  # past the image's edge the look stays what it was
                current[~inside] = self.patch[~inside]
            self.patch = (1.0 - alpha) * self.patch + alpha * current
            # the weight follows the patch at the same pace, taken every few blends (its
            # ground statistics cost ~0.5 ms)
            self._blends += 1
            if self.weight is not None and self._blends % self.look.weight_every == 0:
                now = self._object_weight(image, g, top_left, samples)
                if now is not None:
                    pace = 1.0 - (1.0 - alpha) ** self.look.weight_every
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
        window = self._sample_in_view(image, g, top_left, (w + 2 * r, h + 2 * r))
        if window.shape[2:] != self.patch.shape[2:] or _spread(window) < 1e-3:
            return None
        return window, top_left, r

    def _sample_in_view(self, image, g, top_left, size) -> np.ndarray:
        """:meth:`sample` of ``size`` samples from ``top_left``, warped only where a sample
        can take a value from ``image`` (the rest is the warp's black border, 0): a coasting
        lock's window can reach far past the view (person12 at 1280x720: 1,000 samples a
        side, three quarters of them outside)."""
        cols, rows = size
        if cols * rows < _WIDE_WINDOW:  # a tracking search: inside the view, and cheap
            return self.sample(image, g, top_left, size, self.step)
        at = self._image_corners(top_left, g, image.shape, 1.0)
        x0, y0 = np.maximum(np.floor(at.min(axis=0)) - 1, 0).astype(int)
        x1, y1 = np.minimum(np.ceil(at.max(axis=0)) + 2, (cols, rows)).astype(int)
        if x1 <= x0 or y1 <= y0:
            return np.zeros((rows, cols, *image.shape[2:]), np.float32)
        if (x1 - x0) * (y1 - y0) > 0.8 * cols * rows:  # little to skip
            return self.sample(image, g, top_left, size, self.step)
        window = np.zeros((rows, cols, *image.shape[2:]), np.float32)
        at_part = top_left + self.step * np.array([x0, y0], float)
        window[y0:y1, x0:x1] = self.sample(image, g, at_part, (x1 - x0, y1 - y0), self.step)
        return window

    def _response(self, image, g, centre, radius, with_window=False, masked=True):
        """NCC over the window within ``radius`` of ``centre``: (response, its origin), and
        the window itself if asked; ``masked``: blended with the NCC over the target's own
        samples where the template has them (:func:`~emts.stages.own_target.object_pixels`)."""
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
        in_image: bool = False,
    ) -> tuple[float, np.ndarray, float] | None:
        """(NCC peak, matched centre, contrast) within ``radius`` of ``centre``, or None;
        ``in_image``: only where the template lies wholly in the image (as :meth:`peaks`).

        The contrast is the standard deviation of the matched region's samples: a person
        replaced by flat ground or a smooth occluder loses most of it. ``prior`` > 0 picks
        the maximum of ``NCC - prior * (d / radius)^2`` (``d``: distance from ``centre``)
        instead of the bare NCC maximum; the peak returned is still the NCC there. A window
        wider than ``AppearanceConfig.fine_search_max`` positions is searched coarse to fine
        (:meth:`_coarse_search`).
        """
        if self._wide(radius):
            return self._coarse_search(image, g, centre, radius, prior, in_image)
        response, top_left, window = self._response(
            image, g, centre + self.offset, radius, with_window=True
        )
        if response is None:
            return None
        if in_image:
            h, w = self.patch.shape[:2]
            _outside(response, self._in_image(top_left, g, image.shape), (w, h))
        scored = response - prior * _squared_offset(response.shape) if prior > 0.0 else response
        _, _, _, (px, py) = cv2.minMaxLoc(scored)
        if self.by_detail and window.ndim == 2 and self.look.gray_detail_band > 0:
            px, py = self._by_detail(window, scored, px, py)
        peak = float(response[py, px])
        h, w = self.patch.shape[:2]
        self._last = (response, top_left, px, py)
        contrast = float(window[py : py + h, px : px + w].std())
        return float(peak), self._centre(response, top_left, px, py) - self.offset, contrast

    def _by_detail(self, window: np.ndarray, scored: np.ndarray, px: int, py: int):
        """(px, py): of a gray search's maxima in ``scored`` within ``look.gray_detail_band``
        of its best (at ``px, py``), the one whose detail matches the template's by
        ``look.gray_detail_margin`` more than the best's (strongest first; the best where none
        does). Detail: each less its Gaussian blur (``look.gray_detail_sigma`` x the template's
        height) -- what a cast shadow, dark and flat inside, has not."""
        look = self.look
        floor = float(scored[py, px]) - look.gray_detail_band
        close = _local_maxima(scored, floor, 6)
        if len(close) < 2:  # the best alone: nothing to pick from (the detail unneeded)
            return px, py
        sigma = max(look.gray_detail_sigma * self.patch.shape[0], 1.0)
        detail = cv2.matchTemplate(
            window - cv2.GaussianBlur(window, (0, 0), sigma),
            self.patch - cv2.GaussianBlur(self.patch, (0, 0), sigma),
            cv2.TM_CCOEFF_NORMED,
        )
        best = float(detail[py, px])
        for x, y in close:
            if float(detail[y, x]) >= best + look.gray_detail_margin:
                best, px, py = float(detail[y, x]), x, y
        return px, py

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
        _outside(response, self._in_image(top_left, g, image.shape), (w, h))
        return [
            (
                float(response[y, x]),
                self._centre(response, top_left, x, y) - self.offset,
                float(window[y : y + h, x : x + w].std()),
            )
            for x, y in _local_maxima(response, floor, count)
        ]

    def _in_image(self, top_left, g, shape) -> tuple[float, float, float, float]:
        """(x0, y0, x1, y1): the samples of a window from ``top_left`` (g's domain, ``step``
        apart) that lie in an image of ``shape``; a re-lock match must have its template
        within them. Past the image the window is the warp's black border, whose edge
        matches a template with a dark side along the whole edge (0.65-0.66 at every
        position of the view's right edge on person12's leave path 2, the walker re-entering
        at the top 0.5-0.6: those maxima took every re-lock proposal)."""
        at = self._image_corners(top_left, g, shape, 0.5)
        (x0, y0), (x1, y1) = at.min(axis=0), at.max(axis=0)
        return float(x0), float(y0), float(x1), float(y1)

    def _inside_samples(self, top_left, g, shape, samples) -> np.ndarray | None:
        """Which of ``samples`` (w, h) from ``top_left`` lie in an image of ``shape`` (as
        :meth:`_in_image`): a boolean (h, w) mask, or None where they all do."""
        x0, y0, x1, y1 = self._in_image(top_left, g, shape)
        w, h = samples
        if x0 <= 0 and y0 <= 0 and x1 >= w - 1 and y1 >= h - 1:
            return None
        columns = (np.arange(w) >= x0) & (np.arange(w) <= x1)
        rows = (np.arange(h) >= y0) & (np.arange(h) <= y1)
        return rows[:, None] & columns[None, :]

    def _image_corners(self, top_left, g, shape, pad: float) -> np.ndarray:
        """The corners of an image of ``shape``, ``pad`` px beyond its outermost pixel
        centres, in the samples (x, y) of a window from ``top_left`` (g's domain, ``step``
        apart): 4x2."""
        a = g[:2, :2] * self.step
        origin = g[:2, :2] @ top_left + g[:2, 2]
        height, width = shape[:2]
        low, x1, y1 = -pad, width - 1 + pad, height - 1 + pad
        corners = np.array([[low, low], [x1, low], [low, y1], [x1, y1]])
        return (corners - origin) @ np.linalg.inv(a).T

    def forget_search(self) -> None:
        """Drop the last search's response (:meth:`other_maxima` then finds none)."""
        self._last = None

    def other_maxima(self, ratio: float) -> list[tuple[float, np.ndarray]]:
        """(peak, centre) of up to 4 other local maxima of the last fine :meth:`search`'s NCC
        of at least ``ratio`` x its peak (none after a coarse-to-fine or failed search)."""
        if self._last is None:
            return []
        response, top_left, px, py = self._last
        floor = ratio * float(response[py, px])
        return [
            (float(response[y, x]), self._centre(response, top_left, x, y) - self.offset)
            for x, y in _local_maxima(response, floor, 4)
            if (x, y) != (px, py)
        ]

    def coarse_maxima(
        self, image: np.ndarray, g: np.ndarray, centre: np.ndarray, radius: float, floor: float
    ) -> list[tuple[float, np.ndarray]]:
        """(peak, centre) of up to 6 local maxima of the plain NCC in gray at half resolution
        (no refinement: centres to about a sample) within ``radius`` of ``centre``, above
        ``floor``, strongest first."""
        sampled = self._window(image, g, centre + self.offset, radius)
        if sampled is None:
            return []
        window, top_left, r = sampled
        h, w = self.patch.shape[:2]
        coarse = self._half_resolution_ncc(window, r, gray=True)
        found = []
        for x, y in _local_maxima(coarse, floor, 6):
            dx = _parabola_offset(coarse[y, max(x - 1, 0) : x + 2]) if x > 0 else 0.0
            dy = _parabola_offset(coarse[max(y - 1, 0) : y + 2, x]) if y > 0 else 0.0
            at = np.array([2 * (x + dx) + (w - 1) / 2.0, 2 * (y + dy) + (h - 1) / 2.0])
            found.append((float(coarse[y, x]), top_left + self.step * at - self.offset))
        return found

    def _wide(self, radius: float) -> bool:
        """Is a search within ``radius`` wider than ``AppearanceConfig.fine_search_max``
        positions (and so
        coarse to fine)?"""
        positions = (2 * np.ceil(radius / self.step) + 1) ** 2
        return self.patch is not None and positions > self.look.fine_search_max

    def _half_resolution_ncc(self, window: np.ndarray, r: int, gray: bool = False) -> np.ndarray:
        """The plain NCC of the template over a search ``window`` (radius ``r`` samples) at
        half resolution: a 16th of the work; ``gray``: of the two in gray (a third of the
        colour match's time again)."""
        h, w = self.patch.shape[:2]
        small = cv2.resize(
            window,
            (max((w + 2 * r) // 2, 3), max((h + 2 * r) // 2, 3)),
            interpolation=cv2.INTER_AREA,
        )
        small_patch = cv2.resize(
            self.patch, (max(w // 2, 2), max(h // 2, 2)), interpolation=cv2.INTER_AREA
        )
        if gray and small.ndim == 3:
            small = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
            small_patch = cv2.cvtColor(small_patch, cv2.COLOR_BGR2GRAY)
        return _ncc_over_content(small, small_patch)

    def _around(self, window: np.ndarray, r: int, cx: int, cy: int):
        """(x0, y0, the part of ``window``) whose full-resolution positions lie within 3
        samples of the half-resolution position (cx, cy); part None if it cannot hold the
        template."""
        h, w = self.patch.shape[:2]
        x0, y0 = max(2 * cx - 3, 0), max(2 * cy - 3, 0)
        x1, y1 = min(2 * cx + 4, 2 * r + 1), min(2 * cy + 4, 2 * r + 1)
        part = window[y0 : y1 + h - 1, x0 : x1 + w - 1]
        return x0, y0, (None if part.shape[0] < h or part.shape[1] < w else part)

    def _coarse_search(self, image, g, centre, radius, prior, in_image=False):
        """:meth:`search` over a wide window: the plain NCC in gray at half resolution
        proposes its strongest local maxima and the window's centre (the prediction), and the
        match the search scores (blended, with the prior) is computed at full resolution in
        colour within 3 samples of each; the best of those wins. (The proposals in colour
        took 3x the time -- 20 ms a frame at 1280x720 while a lock coasts -- and gave the
        same output on every person12 protocol run.)"""
        sampled = self._window(image, g, centre + self.offset, radius)
        if sampled is None:
            return None
        window, top_left, r = sampled
        h, w = self.patch.shape[:2]
        coarse = self._half_resolution_ncc(window, r, gray=True)
        inside = self._in_image(top_left, g, image.shape) if in_image else None
        if inside is not None:
            _outside(coarse, inside, (w, h), 2)
        candidates = [(r // 2, r // 2), *_local_maxima(coarse, -1.0, self.look.coarse_candidates)]
        mask = self._mask()
        best = None
        for cx, cy in candidates:
            x0, y0, part = self._around(window, r, cx, cy)
            if part is None:
                continue
            local = self._match(part, mask)
            if inside is not None:
                _outside(local, inside, (w, h), origin=(x0, y0))
            if prior > 0.0:
                offsets = _squared_offset_part(2 * r + 1, (y0, x0), local.shape)
                _, value, _, (px, py) = cv2.minMaxLoc(local - prior * offsets)
            else:
                _, value, _, (px, py) = cv2.minMaxLoc(local)
            if best is None or value > best[0]:
                best = (value, local, x0, y0, px, py)
        if best is None:
            return None
        _, local, x0, y0, px, py = best
        origin = top_left + self.step * np.array([x0, y0], float)
        contrast = float(window[y0 + py : y0 + py + h, x0 + px : x0 + px + w].std())
        return float(local[py, px]), self._centre(local, origin, px, py) - self.offset, contrast

    def _coarse_peaks(self, image, g, centre, radius, floor, count):
        """:meth:`peaks` over a wide window: candidates from the NCC in gray at half
        resolution (a 48th of the work), each then matched at full resolution within 3
        samples."""
        sampled = self._window(image, g, centre + self.offset, radius)
        if sampled is None:
            return []
        window, top_left, r = sampled
        h, w = self.patch.shape[:2]
        coarse = self._half_resolution_ncc(window, r, gray=True)
        inside = self._in_image(top_left, g, image.shape)
        _outside(coarse, inside, (w, h), 2)
        found: list[tuple[float, np.ndarray, float]] = []
        for cx, cy in _local_maxima(coarse, floor - self.look.coarse_slack, 2 * count):
            x0, y0, part = self._around(window, r, cx, cy)
            if part is None:
                continue
            local = cv2.matchTemplate(part, self.patch, cv2.TM_CCOEFF_NORMED)
            _outside(local, inside, (w, h), origin=(x0, y0))
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


@cache
def _squared_offset(shape: tuple[int, int]) -> np.ndarray:
    """(d / r)^2 over a (2r+1)-square response: squared distance from its centre, 1 at r.
    Built once per response shape (a search window's size repeats frame after frame); the
    array is shared: read it, never write it."""
    return _squared_offset_part(shape[0], (0, 0), shape, shape[1])


def _squared_offset_part(
    rows: int, origin: tuple[int, int], shape: tuple[int, int], cols: int | None = None
) -> np.ndarray:
    """The ``shape`` part from ``origin`` (y0, x0) of ``_squared_offset((rows, cols))``
    (``cols`` = ``rows``: a square response), computed for that part alone: a coarse-to-fine
    search scores a few small parts of a window that grows while a lock coasts (at 960
    samples a side the whole array took 10-35 ms a frame, never the same shape twice)."""
    cols = rows if cols is None else cols
    half_y, half_x = (rows - 1) / 2.0, (cols - 1) / 2.0
    (y0, x0), (h, w) = origin, shape
    y = np.arange(y0, y0 + h, dtype=np.float32)[:, None]
    x = np.arange(x0, x0 + w, dtype=np.float32)[None, :]
    return ((x - half_x) ** 2 + (y - half_y) ** 2) / max(half_x * half_y, 1.0)


# samples of a window below which looking for the part of it inside the view costs more than
# it can save
_WIDE_WINDOW = 160 * 160


def _ncc_over_content(image: np.ndarray, patch: np.ndarray) -> np.ndarray:
    """``cv2.matchTemplate(image, patch, TM_CCOEFF_NORMED)``, computed only where the patch
    overlaps a sample that is not 0: a search window reaching past the image holds the
    warp's black border there, where every position's NCC is 0 (a flat window), and a lock
    coasting on a long flight searches windows three quarters outside the view (person12 at
    1280x720: ~1,000 samples a side, 20-30 ms a frame for the full product)."""
    th, tw = patch.shape[:2]
    if image.shape[0] * image.shape[1] < _WIDE_WINDOW:
        return cv2.matchTemplate(image, patch, cv2.TM_CCOEFF_NORMED)
    # (rows and columns with any non-zero value: numpy's any over a last axis of 3 takes 40x
    # as long as over the rows flattened, or over the first axis)
    by_column = image.any(axis=0)
    rows = np.flatnonzero(image.reshape(image.shape[0], -1).any(axis=1))
    cols = np.flatnonzero(by_column.any(axis=1) if by_column.ndim == 2 else by_column)
    out_h, out_w = image.shape[0] - th + 1, image.shape[1] - tw + 1
    if rows.size == 0 or out_h < 1 or out_w < 1:
        return cv2.matchTemplate(image, patch, cv2.TM_CCOEFF_NORMED)
    # positions whose patch covers a row (column) from the first to the last with content
    y0, y1 = max(int(rows[0]) - th + 1, 0), min(int(rows[-1]), out_h - 1)
    x0, x1 = max(int(cols[0]) - tw + 1, 0), min(int(cols[-1]), out_w - 1)
    if (y1 - y0 + 1) * (x1 - x0 + 1) > 0.8 * out_h * out_w:  # little to skip
        return cv2.matchTemplate(image, patch, cv2.TM_CCOEFF_NORMED)
    response = np.zeros((out_h, out_w), np.float32)
    response[y0 : y1 + 1, x0 : x1 + 1] = cv2.matchTemplate(
        image[y0 : y1 + th, x0 : x1 + tw], patch, cv2.TM_CCOEFF_NORMED
    )
    return response


def _spread(samples: np.ndarray) -> float:
    """The standard deviation of all of ``samples`` (float32, any channels): OpenCV's, a
    seventh of numpy's time on a search window (16 vs 112 us)."""
    return float(cv2.meanStdDev(samples.reshape(samples.shape[0], -1))[1][0, 0])


def _outside(
    response: np.ndarray, inside, size: tuple[int, int], factor: int = 1, origin=(0, 0)
) -> None:
    """Set to -1 the positions of ``response`` (``factor`` window samples apart, the first
    at window sample ``origin``) at which a template of ``size`` (w, h) samples does not lie
    wholly within ``inside`` (x0, y0, x1, y1 window samples)."""
    x0, y0, x1, y1 = (v - o for v, o in zip(inside, (*origin, *origin), strict=True))
    w, h = size
    rows, cols = response.shape
    left, top = max(int(np.ceil(x0 / factor)), 0), max(int(np.ceil(y0 / factor)), 0)
    right = min(int(np.floor((x1 - (w - 1)) / factor)) + 1, cols)
    bottom = min(int(np.floor((y1 - (h - 1)) / factor)) + 1, rows)
    if left <= 0 and top <= 0 and right >= cols and bottom >= rows:
        return
    if right <= left or bottom <= top:
        response[...] = -1.0
        return
    response[:top] = -1.0
    response[bottom:] = -1.0
    response[:, :left] = -1.0
    response[:, right:] = -1.0


def _local_maxima(response: np.ndarray, floor: float, count: int) -> list[tuple[int, int]]:
    """(x, y) of up to ``count`` strongest 5x5 local maxima of ``response`` above ``floor``."""
    dilated = cv2.dilate(response, np.ones((5, 5), np.uint8))
    ys, xs = np.nonzero((response >= dilated) & (response >= floor))
    order = strongest_first(response[ys, xs], count)
    return [(int(xs[i]), int(ys[i])) for i in order]


def strongest_first(values: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest ``values``, largest first, equal values in their
    order (``np.argsort(-values, kind="stable")[:count]``) without sorting them all: a
    flat stretch of a response (a window reaching past the image) is a local maximum at
    every sample, 10^5 of them on a wide search (a full sort: ~25 ms; numpy's partition
    from the top end of so many equal values: ~18 ms, from the bottom end of their negatives:
    ~2 ms)."""
    if values.size <= count or count <= 0:
        return np.argsort(-values, kind="stable")[: max(count, 0)]
    kth = -np.partition(-values, count - 1)[count - 1]
    above = np.flatnonzero(values > kth)
    above = above[np.argsort(-values[above], kind="stable")]
    ties = np.flatnonzero(values == kth)[: count - above.size]
    return np.concatenate([above, ties])


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


def appearance_view(frame: np.ndarray, front) -> AppearanceView:
    """The view of a frame that the appearance samples, given Stages A-B's result ``front``
    (:class:`emts.front_end.FrontEndResult`): colour input (uint8 BGR) directly -- colour
    tells a person from the shadow they walk into, where gray does not; anything else, the
    gray working frame."""
    if frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3:
        matrix = front.geometry.matrix(Frame.WORKING, Frame.INPUT)
        return AppearanceView(frame, matrix, front.working)
    return AppearanceView.of(front.working)
