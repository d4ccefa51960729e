"""Detection metrics: COCO AP at chosen IoU thresholds (pycocotools), recall and localization
by person height, precision-recall curves.

Detections and ground truth are per image: ``{"boxes": (n, 4) [x, y, w, h], "scores": (n,)}``
and ``{"boxes": (m, 4), "ignore": (m,) bool}`` in one pixel frame (we use NETWORK pixels, so
heights read as in the paper's tables). Ignored ground truth (mostly hidden persons) neither
counts as a miss nor makes a matching detection a false positive.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

import numpy as np

from emts.geometry import box_iou

HEIGHT_BINS = ((0, 12), (12, 20), (20, 32), (32, 72), (72, 1e9))  # network px (§6, Table 8)
HEIGHT_LABELS = ("<12", "12-20", "20-32", "32-72", ">72")


@dataclass
class ImageResult:
    gt_boxes: np.ndarray  # (m, 4)
    gt_ignore: np.ndarray  # (m,) bool
    boxes: np.ndarray  # (n, 4)
    scores: np.ndarray  # (n,)


def coco_ap(images: list[ImageResult], iou_thresholds=(0.25, 0.5)) -> dict:
    """AP per IoU threshold (pycocotools, one category, all areas, 100 detections per image).

    Returns ``{"AP@0.25": .., "AP@0.5": .., "precision": {thr: (101,) array}}``.
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "person"}]}
    dets = []
    ann_id = 1
    for image_id, image in enumerate(images, start=1):
        gt["images"].append({"id": image_id, "width": 256, "height": 192})
        for box, ignore in zip(image.gt_boxes, image.gt_ignore, strict=True):
            gt["annotations"].append(
                {
                    "id": ann_id,
                    "image_id": image_id,
                    "category_id": 1,
                    "bbox": [float(v) for v in box],
                    "area": float(box[2] * box[3]),
                    "iscrowd": int(bool(ignore)),
                }
            )
            ann_id += 1
        for box, score in zip(image.boxes, image.scores, strict=True):
            dets.append(
                {
                    "image_id": image_id,
                    "category_id": 1,
                    "bbox": [float(v) for v in box],
                    "score": float(score),
                }
            )
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(dets) if dets else COCO()
        evaluator = COCOeval(coco_gt, coco_dt, "bbox")
        evaluator.params.iouThrs = np.array(iou_thresholds, dtype=float)
        evaluator.params.maxDets = [100, 100, 100]
        evaluator.params.areaRng = [[0, 1e10]]
        evaluator.params.areaRngLbl = ["all"]
        evaluator.evaluate()
        evaluator.accumulate()
    precision = evaluator.eval["precision"]  # (T, R, K, A, M)
    out: dict = {"precision": {}}
    for i, thr in enumerate(iou_thresholds):
        p = precision[i, :, 0, 0, -1]
        valid = p[p > -1]
        out[f"AP@{thr:g}"] = float(valid.mean()) if valid.size else 0.0
        out["precision"][thr] = np.where(p > -1, p, 0.0)
    return out


_iou = box_iou  # the name emts.eval.real imports


def match(
    image: ImageResult, score_threshold: float, iou_threshold: float = 0.25
) -> list[tuple[int, int, float]]:
    """Greedy one-to-one matches (gt index, detection index, IoU) of detections above the score
    threshold, best score first."""
    keep = np.nonzero(image.scores >= score_threshold)[0]
    keep = keep[np.argsort(-image.scores[keep])]
    taken = np.zeros(len(image.gt_boxes), bool)
    matches = []
    for d in keep:
        if not len(image.gt_boxes):
            break
        ious = _iou(image.boxes[d], image.gt_boxes)
        ious[taken] = -1
        g = int(np.argmax(ious))
        if ious[g] >= iou_threshold:
            taken[g] = True
            matches.append((g, int(d), float(ious[g])))
    return matches


def by_height(images: list[ImageResult], score_threshold: float = 0.3) -> dict:
    """Recall at ``score_threshold`` (IoU 0.25), median centre error (px) and share of matches
    with IoU >= 0.5, per ground-truth height bin (ignored persons excluded)."""
    stats = {
        label: {"persons": 0, "found": 0, "centre_errors": [], "iou50": 0}
        for label in HEIGHT_LABELS
    }
    for image in images:
        matches = {g: (d, iou) for g, d, iou in match(image, score_threshold)}
        for g, (box, ignore) in enumerate(zip(image.gt_boxes, image.gt_ignore, strict=True)):
            if ignore:
                continue
            label = next(
                lab
                for (lo, hi), lab in zip(HEIGHT_BINS, HEIGHT_LABELS, strict=True)
                if lo <= box[3] < hi
            )
            entry = stats[label]
            entry["persons"] += 1
            if g in matches:
                d, iou = matches[g]
                det = image.boxes[d]
                entry["found"] += 1
                entry["iou50"] += iou >= 0.5
                entry["centre_errors"].append(
                    float(
                        np.hypot(
                            det[0] + det[2] / 2 - box[0] - box[2] / 2,
                            det[1] + det[3] / 2 - box[1] - box[3] / 2,
                        )
                    )
                )
    table = {}
    for label, entry in stats.items():
        found = entry["found"]
        table[label] = {
            "persons": entry["persons"],
            "recall": round(found / entry["persons"], 4) if entry["persons"] else None,
            "median_centre_error_px": round(float(np.median(entry["centre_errors"])), 2)
            if found
            else None,
            "iou50_share": round(entry["iou50"] / found, 4) if found else None,
        }
    return table
