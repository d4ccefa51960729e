"""The figures of the real-footage suite (:mod:`emts.eval.real`): one labelled person per
frame (uav123-person12, :func:`person_metrics`) or many (HIT-UAV, :func:`multi_person_metrics`).

Everything is matched in WORKING pixels (640x512); AP is pycocotools' (:func:`coco_ap`).
"""

from __future__ import annotations

import numpy as np

from emts.eval.metrics import ImageResult, _iou, coco_ap, match

TAU_S = 0.3  # §6: the detection threshold a user runs at
MATCH_IOU = 0.25
HEIGHT_BINS = ((0, 12), (12, 20), (20, 32), (32, 1e9))  # WORKING px (640x512), the bins
HEIGHT_LABELS = ("<12", "12-20", "20-32", ">=32")
# the nearest other labelled person's centre, in this person's heights: people in a group
# (half of HIT-UAV val's persons are under 1.5 heights from another), a little apart, alone
SPACING_EDGES = (1.5, 3.0)
SPACING_LABELS = ("<1.5h", "1.5-3h", ">=3h or alone")


def box_centres(boxes: np.ndarray) -> np.ndarray:
    """Centres (n, 2) of ``[x, y, w, h]`` boxes (n, 4)."""
    return boxes[:, :2] + boxes[:, 2:] / 2


def person_metrics(results: list[ImageResult], tau: float = TAU_S) -> dict:
    """One labelled person per frame: recall, FP/frame (centre farther than the person's
    height from the label's centre), AP. ``results`` gt holds exactly one box per frame."""
    found, false_positives = 0, 0
    for image in results:
        gt = image.gt_boxes[0]
        keep = image.scores >= tau
        boxes = image.boxes[keep]
        if len(boxes) and (_iou(gt, boxes) >= MATCH_IOU).any():
            found += 1
        distance = np.hypot(*(box_centres(boxes) - box_centres(gt[None])).T) if len(boxes) else []
        false_positives += int(np.sum(np.asarray(distance) > gt[3]))
    ap = coco_ap(results)
    frames = len(results)
    return {
        "frames": frames,
        f"recall@{tau:g}": round(found / frames, 4) if frames else None,
        f"fp_per_frame@{tau:g}": round(false_positives / frames, 4) if frames else None,
        "AP@0.25": round(ap["AP@0.25"], 4),
        "AP@0.5": round(ap["AP@0.5"], 4),
        "_precision": ap["precision"],
    }


def spacings(boxes: np.ndarray) -> np.ndarray:
    """Each box's distance to the nearest other box's centre, in its own heights (inf where
    it is alone)."""
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    centres = box_centres(boxes)
    distance = np.hypot(*(centres[:, None] - centres[None]).transpose(2, 0, 1))
    np.fill_diagonal(distance, np.inf)
    nearest = distance.min(axis=1) if len(boxes) > 1 else np.full(len(boxes), np.inf)
    return nearest / np.maximum(boxes[:, 3], 1e-6)


def recall_by_spacing(
    results: list[ImageResult],
    tau: float = TAU_S,
    edges: tuple[float, ...] = SPACING_EDGES,
    labels: tuple[str, ...] = SPACING_LABELS,
) -> dict:
    """Recall at ``tau`` (IoU 0.25, one-to-one) of the labelled persons binned by
    :func:`spacings` at ``edges`` (in the person's heights; ``labels``: one more than edges)."""
    counts = {label: [0, 0] for label in labels}
    for image in results:
        matched = {g for g, _, _ in match(image, tau, MATCH_IOU)}
        for g, spacing in enumerate(spacings(image.gt_boxes)):
            label = labels[int(np.searchsorted(edges, spacing, side="right"))]
            counts[label][0] += 1
            counts[label][1] += g in matched
    return {
        label: {"persons": n, "recall": round(k / n, 4) if n else None}
        for label, (n, k) in counts.items()
    }


def multi_person_metrics(results: list[ImageResult], tau: float = TAU_S) -> dict:
    """AP, recall and FP/image at tau (IoU 0.25, one-to-one), recall by height (WORKING px)
    and by the nearest other person's distance (:func:`spacings`, :data:`SPACING_EDGES`),
    and the width ratio of matched boxes (detection / truth, p10-p50-p90)."""
    ap = coco_ap(results)
    persons = found = false_positives = 0
    by_bin = {label: [0, 0] for label in HEIGHT_LABELS}
    ratios = []
    for image in results:
        matches = match(image, tau, MATCH_IOU)
        matched = {g: d for g, d, _ in matches}
        persons += len(image.gt_boxes)
        found += len(matches)
        false_positives += int((image.scores >= tau).sum()) - len(matches)
        for g, box in enumerate(image.gt_boxes):
            label = next(
                lab
                for (lo, hi), lab in zip(HEIGHT_BINS, HEIGHT_LABELS, strict=True)
                if lo <= box[3] < hi
            )
            by_bin[label][0] += 1
            if g in matched:
                by_bin[label][1] += 1
                ratios.append(image.boxes[matched[g]][2] / max(box[2], 1e-6))
    images = len(results)
    widths = np.percentile(ratios, [10, 50, 90]).round(2).tolist() if ratios else None
    return {
        "images": images,
        "persons": persons,
        "AP@0.25": round(ap["AP@0.25"], 4),
        "AP@0.5": round(ap["AP@0.5"], 4),
        f"recall@{tau:g}": round(found / persons, 4) if persons else None,
        f"fp_per_image@{tau:g}": round(false_positives / images, 4) if images else None,
        "recall_by_height": {
            label: {"persons": n, "recall": round(k / n, 4) if n else None}
            for label, (n, k) in by_bin.items()
        },
        "recall_by_spacing": recall_by_spacing(results, tau),
        "width_ratio_p10_p50_p90": widths,
        "_precision": ap["precision"],
    }
