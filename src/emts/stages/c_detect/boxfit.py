"""Stage C's colour evidence: boxes fitted to the person's own pixels, and scored by it.

The detector boxes what *moves*. On real colour video that is the person and the shadow they
cast, which moves with them (a low sun puts it beside them: the box slides sideways and
widens), and, for a person walking towards or away from the camera, mostly their swinging
legs (the box is a half-height box on the legs or the torso). On the real drone clip
uav123-person12 the detector's box of the walker was 0.66 of the labelled height (median),
and a fifth of its misses were a box of walker and shadow together (IoU < 0.25).

Colour separates a person from the ground and from their shadow where gray cannot: a shadow is the
ground's colour, darker (:func:`emts.stages.own_target.object_pixels`, which Stage D uses for
the locked target's own pixels). :func:`fitted_box` takes those pixels around a detection, closes
them vertically (a person's silhouette breaks at the belt and the knees), keeps the connected parts
that overlap the box, and returns their bounding box -- or none, where they do not make a
person-sized box (too tall or too wide: a crowd, tree shade, a parked car; too short: the network's
box was the better estimate). A box that fits is evidence of a person: :func:`with_evidence` raises
its score by ``BoxFitConfig.bonus`` (on person12 the walker's boxes fitted 63-70 % of the time,
false positives' 3-13 %). Where the person's pixels merged with shade at their feet or a bed behind
their head, the fit is cut to the box's column band (:func:`_trimmed`). Evidence of a *moving*
person only: a fit scores up where Stage B's residual inside it stands out of the frame's
(:class:`MotionCheck`), and a checked box that does not move scores lower -- a white bag or a door
panel on a still camera fits as well as a person. Gray frames (thermal) keep the network's boxes and
scores."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np

from emts.config import BoxFitConfig
from emts.geometry import Frame, FrameGeometry
from emts.stages.appearance import AppearanceView
from emts.stages.b_channels import residual_level
from emts.stages.own_target import object_pixels, sample_region

DEFAULT_BOX_FIT = BoxFitConfig()


def fitted_box(view: AppearanceView, box: np.ndarray, config: BoxFitConfig) -> np.ndarray | None:
    """``box`` ([x, y, w, h], WORKING px) fitted to the own pixels of the person inside it on
    the colour ``view``; None where that does not give a person-sized box, and on gray
    views."""
    if view.image.ndim != 3:
        return None
    x, y, w, h = (float(v) for v in box)
    if w < 2.0 or h < 2.0:
        return None
    # the person's height as the box suggests it (a half-height box on the legs is wide)
    height = max(h, w / config.person_aspect)
    half = config.context * height
    size = (max(int(round(2 * half)), 8),) * 2
    # whole-pixel samples: colours interpolated between pixels blur the silhouette's edge
    origin = np.round([x + w / 2 - half, y + h / 2 - half])
    context = sample_region(view.image, view.from_working, origin, size)
    own = object_pixels(context)
    if own is None:
        return None
    own = own.astype(np.uint8)
    gap = max(int(round(height * config.close)), 1)
    own = cv2.morphologyEx(own, cv2.MORPH_CLOSE, np.ones((gap, 1), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(own, connectivity=8)
    # the parts that overlap the network's box (by enough samples: not a stray speck)
    left, top = int(round(x - origin[0])), int(round(y - origin[1]))
    inside = labels[max(top, 0) : top + int(round(h)), max(left, 0) : left + int(round(w))]
    overlap = np.bincount(inside.ravel(), minlength=count)
    parts = np.nonzero(overlap[1:] >= config.seed_share * w * h)[0] + 1
    if not len(parts):
        return None
    x0, y0 = stats[parts, cv2.CC_STAT_LEFT], stats[parts, cv2.CC_STAT_TOP]
    x1 = x0 + stats[parts, cv2.CC_STAT_WIDTH]
    y1 = y0 + stats[parts, cv2.CC_STAT_HEIGHT]
    fitted = np.array(
        [x0.min(), y0.min(), x1.max() - x0.min(), y1.max() - y0.min()], float
    ) + np.array([origin[0], origin[1], 0.0, 0.0])
    if _person_sized(fitted, w, h, height, config):
        return fitted
    if config.trim_spill is None or fitted[3] < config.min_height * h:
        return None
    trimmed = _trimmed(np.isin(labels, parts), left, top, w, h, config)
    if trimmed is None:
        return None
    trimmed += np.array([origin[0], origin[1], 0.0, 0.0])
    return trimmed if _person_sized(trimmed, w, h, height, config) else None


def _person_sized(fitted: np.ndarray, w: float, h: float, height: float, config) -> bool:
    """Whether ``fitted`` is a person-sized box for a network box ``w`` x ``h`` that
    suggests a person ``height`` tall."""
    return (
        fitted[3] <= config.max_height * height
        and fitted[2] <= config.max_width * max(w, config.person_aspect * h)
        and fitted[3] >= config.min_height * h
    )


def _trimmed(union: np.ndarray, left: int, top: int, w: float, h: float, config):
    """The box ([x, y, w, h], ``union``'s px) of ``union``'s pixels in the network box's
    column band (its ``left`` ... + ``w`` +- ``config.trim_margin`` of its width), over the
    rows around its centre (``top`` + ``h`` / 2) that do not spill (``config.trim_spill`` of
    the band's width or more outside it): a person merged with shade at the feet or a bed
    behind the head, cut off there. None where no row spills (merged sideways, or trimming
    would only narrow the box) or the cut box is wider than tall."""
    rows, cols = union.shape
    pad = int(round(config.trim_margin * w))
    c0, c1 = max(left - pad, 0), min(left + int(round(w)) + pad, cols)
    if c1 - c0 < 2:
        return None
    in_band = union[:, c0:c1].sum(axis=1)
    spill = union.sum(axis=1) - in_band > max(2.0, config.trim_spill * (c1 - c0))
    centre = min(max(top + int(round(h / 2)), 0), rows - 1)
    if spill[centre]:
        return None
    above, below = spill[:centre][::-1], spill[centre + 1 :]
    r0 = centre - (int(np.argmax(above)) if above.any() else len(above))
    r1 = centre + (int(np.argmax(below)) if below.any() else len(below))
    if not (above.any() or below.any()):
        return None
    ys, xs = np.nonzero(union[r0 : r1 + 1, c0:c1])
    if not len(ys):
        return None
    box = np.array([xs.min() + c0, ys.min() + r0, np.ptp(xs) + 1.0, np.ptp(ys) + 1.0])
    return box if box[2] <= box[3] else None


class MotionCheck:
    """How much a box moves: the largest of Stage B's residual R inside it, in units of the frame's
    residual level (:func:`emts.stages.b_channels.residual_level`, R's 90th percentile over the
    image: what the ground's texture leaves after registration). ``channels``: Stage B's (3, H, W)
    stack at ``geometry``'s NETWORK size."""

    def __init__(self, channels: np.ndarray, geometry: FrameGeometry) -> None:
        self.channels = channels
        self.residual = channels[1]
        self.geometry = geometry
        self._level: float | None = None

    @property
    def level(self) -> float:
        """The frame's residual level (computed once, when first needed)."""
        if self._level is None:
            self._level = residual_level(self.channels)
        return self._level

    def ratio(self, box: np.ndarray) -> float:
        """R's largest value in ``box`` ([x, y, w, h], WORKING px) / the frame's level (0 on
        a frame without residual: nothing is known to move)."""
        if self.level <= 0:
            return 0.0
        x, y, w, h = self.geometry.boxes([box], Frame.WORKING, Frame.NETWORK)[0]
        rows, cols = self.residual.shape
        x0, y0 = min(max(int(np.floor(x)), 0), cols - 1), min(max(int(np.floor(y)), 0), rows - 1)
        x1, y1 = (
            max(min(int(np.ceil(x + w)), cols), x0 + 1),
            max(min(int(np.ceil(y + h)), rows), y0 + 1),
        )
        return float(self.residual[y0:y1, x0:x1].max()) / self.level


def with_evidence(
    view: AppearanceView | None,
    boxes,
    scores,
    config: BoxFitConfig | None,
    threshold: float,
    motion: MotionCheck | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every detection (``boxes`` (n, 4) WORKING px, ``scores``) with the colour evidence: of
    those that reach ``threshold`` - ``config.bonus``, the ``config.max_boxes`` best are
    fitted; each that fits -- and, given ``motion``, moves (``config.min_motion``) -- scores
    ``config.bonus`` more (at most 1), and given ``motion`` each that does not move scores
    ``config.still_penalty`` less, fitted or not. Unchanged without a colour ``view`` or a
    ``config``."""
    boxes = np.asarray(boxes, float).reshape(-1, 4).copy()
    scores = np.asarray(scores, float).reshape(-1).copy()
    if view is None or config is None or view.image.ndim != 3:
        return boxes, scores
    near = np.nonzero(scores >= threshold - config.bonus)[0]
    checked = motion is not None and config.min_motion is not None
    for i in near[np.argsort(-scores[near], kind="stable")][: config.max_boxes]:
        fitted = fitted_box(view, boxes[i], config)
        if fitted is not None:
            boxes[i] = fitted
        still = checked and motion.ratio(boxes[i]) < config.min_motion
        if fitted is not None and not still:
            scores[i] = min(scores[i] + config.bonus, 1.0)
        elif still:
            scores[i] = max(scores[i] - config.still_penalty, 0.0)
    return boxes, scores


def shown(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Indices of the ``scores`` that reach ``threshold``, best first."""
    keep = np.nonzero(np.asarray(scores) >= threshold)[0]
    return keep[np.argsort(-np.asarray(scores)[keep], kind="stable")]


def fit_detections(
    detections: list,
    view: AppearanceView,
    geometry: FrameGeometry,
    config: BoxFitConfig | None,
    threshold: float,
    channels: np.ndarray | None = None,
) -> list:
    """Stage C's output (the pipeline's and ``emts detect``'s): the ``detections`` (NETWORK
    px) that reach ``threshold`` after :func:`with_evidence`, best first; ``channels``: Stage
    B's at ``geometry``'s NETWORK size, for the motion check (None: none)."""
    if config is None or view is None or view.image.ndim != 3:  # gray: nothing to convert
        return [d for d in detections if d.score >= threshold]  # decoded best first
    if not detections:
        return []
    boxes = geometry.boxes([d.box for d in detections], Frame.NETWORK, Frame.WORKING)
    motion = MotionCheck(channels, geometry) if channels is not None else None
    scores = [d.score for d in detections]
    boxes, scores = with_evidence(view, boxes, scores, config, threshold, motion)
    keep = shown(scores, threshold)
    fitted = geometry.boxes(boxes[keep], Frame.WORKING, Frame.NETWORK)
    return [
        replace(detections[i], box=b, score=float(scores[i]))
        for i, b in zip(keep, fitted, strict=True)
    ]


def look_ahead(stage, config: BoxFitConfig | None) -> None:
    """Have Stage C decode the detections the colour evidence may lift over its threshold (those
    from ``config.bonus`` under it): stages with a ``lookahead``
    (:class:`emts.stages.c_detect.temporal.TemporalDetector`, the default mode). The frame-by-frame
    network decodes at its threshold only: there the evidence reorders what passes."""
    if stage is not None and hasattr(stage, "lookahead"):
        stage.lookahead = config.bonus if config is not None else 0.0
