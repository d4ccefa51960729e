"""Evaluation: COCO AP through pycocotools, height bins, the HIT-UAV protocol, the baseline."""

import json

import cv2
import numpy as np
import pytest

pytest.importorskip("pycocotools")

from emts.eval.detect import ClassicalDetector, evaluate_hituav, hituav_clips  # noqa: E402
from emts.eval.metrics import ImageResult, by_height, coco_ap  # noqa: E402
from emts.synth.still_clip import load_demo_still  # noqa: E402

GT = np.array([[10.0, 10.0, 8.0, 16.0], [100.0, 50.0, 20.0, 40.0]])


def _image(boxes, scores):
    return ImageResult(
        GT, np.zeros(2, bool), np.array(boxes, float).reshape(-1, 4), np.array(scores, float)
    )


def test_perfect_detections_score_ap_1_and_none_score_0():
    perfect = coco_ap([_image(GT, [0.9, 0.8])])
    assert perfect["AP@0.25"] == pytest.approx(1.0) and perfect["AP@0.5"] == pytest.approx(1.0)
    assert coco_ap([_image([], [])])["AP@0.25"] == 0.0


def test_a_loose_box_counts_at_iou_0_25_but_not_0_5():
    loose = GT.copy()
    loose[:, 0] += loose[:, 2] * 0.45  # shifted by 45 % of the width: IoU 0.38
    ap = coco_ap([_image(loose, [0.9, 0.8])])
    assert ap["AP@0.25"] == pytest.approx(1.0) and ap["AP@0.5"] == 0.0


def test_false_positives_above_the_true_ones_lower_ap():
    ap = coco_ap([_image([[200, 150, 10, 10], *GT], [0.95, 0.9, 0.8])])
    assert 0.5 < ap["AP@0.25"] < 1.0


def test_ignored_persons_are_neither_missed_nor_false_positives():
    image = ImageResult(GT, np.array([False, True]), GT[:1], np.array([0.9]))
    assert coco_ap([image])["AP@0.25"] == pytest.approx(1.0)
    table = by_height([image], 0.3)
    assert table["<12"]["persons"] == 0 and table["12-20"] == {
        "persons": 1,
        "recall": 1.0,
        "median_centre_error_px": 0.0,
        "iou50_share": 1.0,
    }


def test_classical_baseline_boxes_a_moving_blob():
    channels = np.zeros((3, 192, 256), np.float32)
    channels[1, 50:62, 100:106] = 0.2
    boxes, scores = ClassicalDetector()(channels)
    assert len(boxes) == 1 and scores[0] == pytest.approx(0.2)
    np.testing.assert_allclose(boxes[0], [100, 50, 6, 12])


def test_hituav_protocol_on_a_tiny_coco_folder(tmp_path):
    image, persons = load_demo_still()
    (tmp_path / "val").mkdir()
    cv2.imwrite(str(tmp_path / "val" / "0_60_40_0_00001.jpg"), image)
    annotations = [
        {"id": 1, "image_id": 1, "category_id": 0, "bbox": persons[0], "area": 1, "iscrowd": 0},
        {
            "id": 2,
            "image_id": 1,
            "category_id": 1,
            "bbox": [215, 220, 91, 87],
            "area": 1,
            "iscrowd": 0,
        },
    ]
    coco = {
        "images": [{"id": 1, "file_name": "0_60_40_0_00001.jpg", "width": 640, "height": 512}],
        "annotations": annotations,
        "categories": [],
    }
    (tmp_path / "val.json").write_text(json.dumps(coco))

    class Working(ClassicalDetector):  # a detector that runs Stage B's working warp
        stage_b_warp = "working"

        def __call__(self, channels):
            seen.append(channels)
            return super().__call__(channels)

    seen = []
    detects = {"classical": ClassicalDetector(), "working": Working()}
    results = evaluate_hituav(detects, tmp_path, "val", "vehicles")
    (result,) = results["classical"]
    (paper,) = hituav_clips(tmp_path, "val", "vehicles")  # the paper's warp: a size alone
    assert seen and not np.array_equal(seen[0], paper[1][(256, 192)])  # other channels
    np.testing.assert_array_equal(seen[0][0], paper[1][(256, 192)][0])  # the same L
    assert result.gt_boxes.shape == (1, 4)  # the person only; the moving car is unlabeled
    x, y, w, h = result.gt_boxes[0]
    assert 100 < x < 160 and 30 < y < 70 and 3 < w < 10 and 8 < h < 16  # network px
