"""The real-footage suite's own pieces on small synthetic input (no data, no model)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from emts.errors import BadInputError
from emts.eval.metrics import ImageResult
from emts.eval.real import padding_masked, parse_models
from emts.eval.real_frames import EvalFrame, person12_frames
from emts.eval.real_metrics import multi_person_metrics, person_metrics
from emts.footage import CompensatedDifference
from emts.geometry import FrameGeometry


def _frame(previous, current, motion, gt, size=(640, 512)) -> EvalFrame:
    geometry = FrameGeometry(size)
    return EvalFrame(
        name="t",
        channels=np.zeros((3, 192, 256), np.float32),
        working=current,
        previous=previous,
        motion=motion,
        valid=geometry.input_to_working.content_mask(),
        geometry=geometry,
        gt=np.array(gt, float).reshape(-1, 4),
    )


def test_classical_finds_the_mover_and_not_the_compensated_background():
    rng = np.random.default_rng(0)
    scene = cv2.GaussianBlur(rng.integers(0, 255, (560, 700)).astype(np.uint8), (7, 7), 0)
    previous = scene[:512, :640].copy()
    current = scene[3:515, 5:645].copy()  # the camera moved: content shifts by (-5, -3)
    motion = np.array([[1.0, 0, -5], [0, 1.0, -3]])
    previous[200:230, 300:312] = 250  # a 12x30 bright person ...
    current[200:230, 304:316] = 250  # ... that walked 4 px (in frame coordinates: 4 + 5 - 5)
    detections = CompensatedDifference(ks=(3.0,))(_frame(previous, current, motion, []))
    boxes, scores = detections[3.0]
    assert len(boxes) >= 1
    best = boxes[np.argmax(scores)]
    # the strongest blob covers the person's old and new place, nothing of the background
    assert 290 <= best[0] <= 305 and 195 <= best[1] <= 205
    assert best[2] <= 40 and best[3] <= 40
    assert np.all((scores > 0.5) & (scores < 1.0))  # m / (m + T) with m > T


def test_classical_without_previous_frame_finds_nothing():
    frame = np.zeros((512, 640), np.uint8)
    boxes, scores = CompensatedDifference(ks=(3.0,))(_frame(None, frame, np.eye(2, 3), []))[3.0]
    assert len(boxes) == 0 and len(scores) == 0


def test_person_metrics_recall_and_far_false_positives():
    gt = np.array([[100.0, 100.0, 10.0, 40.0]])
    images = [
        # found, plus one detection 200 px away (an FP) and one below tau_s (ignored)
        ImageResult(
            gt,
            np.zeros(1, bool),
            np.array([[101, 102, 10, 38], [300, 100, 10, 40], [400, 400, 10, 40]], float),
            np.array([0.9, 0.5, 0.1]),
        ),
        # missed: a detection beside the person (IoU < 0.25, centre within one height): no FP
        ImageResult(gt, np.zeros(1, bool), np.array([[112, 100, 10, 40]], float), np.array([0.8])),
    ]
    m = person_metrics(images)
    assert m["recall@0.3"] == 0.5
    assert m["fp_per_frame@0.3"] == 0.5
    assert 0 < m["AP@0.25"] <= 1


def test_multi_person_metrics_height_bins_and_width_ratio():
    gt = np.array([[0, 0, 5, 10], [100, 100, 10, 40]], float)
    image = ImageResult(gt, np.zeros(2, bool), np.array([[100, 100, 20, 40]], float), np.ones(1))
    m = multi_person_metrics([image])
    assert m["recall_by_height"]["<12"] == {"persons": 1, "recall": 0.0}
    assert m["recall_by_height"][">=32"] == {"persons": 1, "recall": 1.0}
    assert m["width_ratio_p10_p50_p90"] == [2.0, 2.0, 2.0]
    assert m["fp_per_image@0.3"] == 0


def test_multi_person_metrics_recall_by_the_nearest_other_persons_distance():
    # a pair 15 px apart (0.75 and 0.375 heights), one person alone; the pair's second missed
    gt = np.array([[0, 0, 10, 20], [15, 0, 10, 40], [300, 300, 10, 20]], float)
    found = np.array([[0, 0, 10, 20], [300, 300, 10, 20]], float)
    m = multi_person_metrics([ImageResult(gt, np.zeros(3, bool), found, np.ones(2))])
    assert m["recall_by_spacing"]["<1.5h"] == {"persons": 2, "recall": 0.5}
    assert m["recall_by_spacing"]["1.5-3h"] == {"persons": 0, "recall": None}
    assert m["recall_by_spacing"][">=3h or alone"] == {"persons": 1, "recall": 1.0}
    alone = ImageResult(gt[:1], np.zeros(1, bool), found[:1], np.ones(1))
    assert multi_person_metrics([alone])["recall_by_spacing"][">=3h or alone"]["recall"] == 1.0


def test_padding_masked_zeroes_motion_outside_a_16_9_input():
    frame = _frame(None, np.zeros((512, 640), np.uint8), np.eye(2, 3), [], size=(1280, 720))
    channels = np.ones((3, 192, 256), np.float32)
    masked = padding_masked(channels, frame)
    assert masked[1:, 0].sum() == 0  # a top padding row
    assert masked[1:, 96, 16:240].all()  # the centre row, inside the content
    assert (masked[0] == 1).all()  # L untouched


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(BadInputError, match="groundtruth_rect"):
        next(person12_frames(tmp_path))
    with pytest.raises(BadInputError, match="not found"):
        parse_models([f"cand={tmp_path / 'missing.onnx'}"])
    (tmp_path / "a.onnx").write_bytes(b"")
    assert list(parse_models([f"{tmp_path / 'a.onnx'}"])) == ["shipped", "a"]


def test_stage_b_content_mask_zeroes_motion_in_letterbox_rows():
    from emts.stages.a_ego_motion import EgoMotion
    from emts.stages.b_channels import MotionChannels, content_mask

    geometry = FrameGeometry((1280, 720))
    mask = content_mask(geometry)
    assert not mask[0].any() and not mask[-1].any() and mask[96, 16:240].all()
    rng = np.random.default_rng(0)
    stage_b = MotionChannels()
    shifted = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    stage_b.update(rng.integers(0, 255, (512, 640), dtype=np.uint8), EgoMotion())
    frame = rng.integers(0, 255, (512, 640), dtype=np.uint8)
    channels = stage_b.update(frame, EgoMotion(shifted, "lk", 50, 1.0), content=mask)
    assert channels[1:, ~mask].max() == 0 and channels[1, mask].max() > 0
    assert (channels[0] > 0).any()  # L untouched
