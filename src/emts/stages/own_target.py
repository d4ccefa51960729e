"""Which samples of a colour view are the tracked person's own: neither the lit ground around
them nor a shadow on it (:func:`object_pixels`), and the template match over those samples
alone (:func:`_masked_ncc`). Stage C weighs its boxes with them (:mod:`emts.stages.c_detect.
boxfit`), Stage D its look, its loss checks and its re-locks (:mod:`emts.stages.appearance`,
:mod:`emts.stages.d_track`). Gray views have no such samples: every function here answers None
there. Parameters: :class:`emts.config.AppearanceConfig` (SPEC §0: not in the paper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cv2
import numpy as np

from emts.config import AppearanceConfig

if TYPE_CHECKING:
    from emts.stages.appearance import AppearanceView

_DEFAULT_LOOK = AppearanceConfig()


def sample_region(
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


def object_pixels(
    context: np.ndarray,
    inner: tuple[int, int, int, int] | None = None,
    look: AppearanceConfig = _DEFAULT_LOOK,
):
    """1 where a sample of the colour ``context`` (h, w, 3) differs from the local lit ground
    and is not a shadow on it (a darker sample of the ground's colour), 0 elsewhere, grown
    by one sample; None for a context without colour. ``inner`` = (y0, y1, x0, x1): the
    mask of that part only (the ground is still the whole context's)."""
    context = np.asarray(context, np.float32)
    if context.ndim != 3 or context.shape[2] != 3:
        return None
    sparse = context[::2, ::2]  # the ground level from every other sample: a quarter the work
    if float(np.abs(sparse[..., 0] - sparse[..., 2]).max()) < look.min_chroma:
        return None  # a gray frame (thermal in three equal channels): brightness only
    brightness = (sparse[..., 0] + sparse[..., 1] + sparse[..., 2]).ravel()
    low, high = _percentiles(brightness, look.ground_percentiles)
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
        differs |= np.abs(c - g) > look.object_contrast
    shadow = (level < look.shadow_ratio) & (chroma < look.shadow_chroma * np.maximum(level, 1e-3))
    grown = cv2.dilate((differs & ~shadow).astype(np.uint8), np.ones((3, 3), np.uint8))
    return grown[y0 - top : y0 - top + (y1 - y0), x0 - left : x0 - left + (x1 - x0)].astype(
        np.float32
    )


def own_share_of_weight(weight: np.ndarray, look: AppearanceConfig = _DEFAULT_LOOK) -> float:
    """The share of a template's samples that are the target's own (weight >=
    ``look.own_weight``)."""
    return float((weight >= look.own_weight).mean())


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


def own_share_in_view(
    view: AppearanceView,
    centre: np.ndarray,
    size: np.ndarray,
    look: AppearanceConfig = _DEFAULT_LOOK,
) -> float | None:
    """The share of own-target samples (:func:`object_pixels`) in the box ``size`` (WORKING
    px) around ``centre`` (WORKING px) of a colour ``view``; None on gray views."""
    w, h = (max(int(round(float(v))), 3) for v in size)
    top_left = np.asarray(centre, float) - 0.5 * np.array([w, h], float)
    found = own_target_in_view(view, top_left, (w, h), look)
    return None if found is None else float(found[0].mean())


def own_target_in_view(
    view: AppearanceView, top_left: np.ndarray, samples: tuple[int, int], look=_DEFAULT_LOOK
):
    """:func:`own_target_in_context` of the ``samples`` (w, h) region from ``top_left``
    (WORKING px, one sample a px) of ``view``, judged once a view: the arrays returned are
    shared with later calls -- read them, never write them."""
    key = (np.asarray(top_left, float).tobytes(), tuple(samples), look)
    if key not in view.judged:
        view.judged[key] = own_target_in_context(
            view.image, view.from_working, top_left, samples, 1.0, look
        )
    return view.judged[key]


def own_target(image, g, top_left, samples, step=1.0, look=_DEFAULT_LOOK) -> np.ndarray | None:
    """:func:`object_pixels` over the ``samples`` (w, h) region from ``top_left`` (``g``'s
    domain, ``step`` px apart), judged against a window one region farther each way (the
    local ground); None on gray images."""
    found = own_target_in_context(image, g, top_left, samples, step, look)
    return None if found is None else found[0]


def own_target_in_context(image, g, top_left, samples, step=1.0, look=_DEFAULT_LOOK):
    """(:func:`own_target`'s mask, the window it was judged in: (3h, 3w, 3) float32 samples,
    the region at [h:2h, w:2w]); None on gray images."""
    if image.ndim != 3:
        return None
    w, h = samples
    origin = np.asarray(top_left, float) - step * np.array([w, h], float)
    context = sample_region(image, g, origin, (3 * w, 3 * h), step)
    mask = object_pixels(context, (h, 2 * h, w, 2 * w), look)
    return None if mask is None else (mask, context)
