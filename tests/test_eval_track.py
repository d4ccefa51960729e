"""``emts eval track``: ground-truth formats, stress tests and the lock protocol's figures."""

import cv2
import numpy as np
import pytest

from emts.errors import BadInputError
from emts.eval.track_eval import (
    TrackEvalConfig,
    evaluate_track,
    parse_span,
    read_ground_truth,
    scene_homographies,
    stressed_frames,
)
from emts.pipeline import Pipeline


def test_otb_lines_with_nan_and_mot_rows_by_target_id(tmp_path):
    otb = tmp_path / "groundtruth_rect.txt"
    otb.write_text("10,20,5,12\nNaN,NaN,NaN,NaN\n11\t21\t5\t12\n")
    boxes = read_ground_truth(otb)
    assert boxes.shape == (3, 4) and np.isnan(boxes[1]).all()
    np.testing.assert_allclose(boxes[2], [11, 21, 5, 12])
    mot = tmp_path / "gt.txt"
    mot.write_text("1,7,10,20,5,12,1,1,1\n3,7,12,20,5,12,1,1,1\n2,9,50,50,5,12,1,1,1\n")
    boxes = read_ground_truth(mot, target_id=7)
    assert boxes.shape == (3, 4) and np.isnan(boxes[1]).all() and boxes[2][0] == 12
    with pytest.raises(BadInputError):
        read_ground_truth(mot)  # which target?
    with pytest.raises(BadInputError):
        read_ground_truth(tmp_path / "missing.txt")


@pytest.mark.parametrize("text", ["5", "a:b", "9:3", "-1:4"])
def test_bad_spans_are_bad_input(text):
    with pytest.raises(BadInputError):
        parse_span(text)


def _clip(n=36, speed=1.5):
    """A textured ground panning 2 px/frame and a dark walker; truth at 320x256."""
    rng = np.random.default_rng(1)
    big = cv2.GaussianBlur(rng.normal(0, 1, (400, 600)).astype(np.float32), (0, 0), 2.5)
    big = np.clip(128 + 30 * big / big.std(), 0, 255).astype(np.uint8)
    frames, truth = [], []
    for t in range(n):
        view = big[60 : 60 + 256, 40 + 2 * t : 40 + 2 * t + 320].copy()
        x, y = 100 + speed * t, 120.0
        view[int(y) - 12 : int(y) + 12, int(x) - 5 : int(x) + 5] = 30
        frames.append(cv2.cvtColor(view, cv2.COLOR_GRAY2BGR))
        truth.append([int(x) - 5, int(y) - 12, 10, 24])
    return frames, np.array(truth, float)


def test_an_occluder_is_anchored_in_the_scene_and_hides_the_person():
    frames, truth = _clip()
    homographies = scene_homographies(frames, 20)
    # the ground pans left by 2 px/frame: the homography chain sees it
    np.testing.assert_allclose(homographies[5][:2, 2], [-2, 0], atol=0.6)
    stream, clip = stressed_frames(frames, truth, occlude=[(10, 14)], homographies=homographies)
    out = list(stream)
    assert clip.hidden[10:15].all() and not clip.hidden[9] and not clip.hidden[15]
    x, y, w, h = truth[12].astype(int)
    assert out[12][y : y + h, x : x + w].mean() > 80  # the dark person is covered
    assert out[16][y : y + h, x + 6 : x + w + 6].mean() < 60  # and back afterwards


def test_gust_warps_frames_and_truth_together():
    frames, truth = _clip(8)
    stream, clip = stressed_frames(frames, truth, gust=3)
    out = list(stream)
    for t in (0, 7):
        x, y, w, h = clip.truth[t]
        assert out[t][int(y + h / 2), int(x + w / 2)].mean() < 60  # still on the person


def test_the_protocol_counts_hits_false_locks_and_recovery():
    frames, truth = _clip()
    config = TrackEvalConfig(remove=((12, 16),), fps=30)
    report = evaluate_track(frames, truth, config, Pipeline(None, None, auto_lock=False))
    assert report["lock"]["source"].startswith("tap")
    assert report["visible_frames"] == len(truth) - 5
    assert report["lock_recall"] >= 0.9
    span = report["hidden_spans"][0]
    assert span["frames"] == [12, 16] and span["relocks_while_hidden"] == 0
    # while hidden, "locked" frames are false locks by definition
    hidden_locked = sum(r["mode"] == "locked" for r in report["per_frame"] if r["hidden"])
    assert report["false_lock_frames"] >= hidden_locked
    assert span["locked_frames_after_vanishing"] <= 8


class _DarkBlobDetector:
    """A stand-in Stage C: the dark walker's bounding box in L (NETWORK px), every frame."""

    def __call__(self, channels):
        from emts.stages.c_detect.detector import Detection

        dark = ((channels[0] > 0.05) & (channels[0] < 0.2)).astype(np.uint8)  # not the padding
        count, _, stats, _ = cv2.connectedComponentsWithStats(dark)
        if count < 2:
            return []
        largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        box = stats[largest, :4].astype(float)
        return [Detection(box, 0.9, np.full(8, 8**-0.5, np.float32))]


def test_auto_lock_is_scored_from_the_first_frame_without_a_tap():
    frames, truth = _clip()
    truth[0] = np.nan  # no label where a tap would go: auto needs none
    auto = TrackEvalConfig(auto=True, fps=30)
    report = evaluate_track(frames, truth, auto, Pipeline(_DarkBlobDetector(), None))
    assert report["lock"]["source"] == "auto" and report["lock"]["point"] is None
    assert report["first_lock_frame"] >= 2  # the detection stood still for 3 frames first
    assert report["visible_frames"] == len(truth) - 1 and report["lock_recall"] >= 0.8
    silent = evaluate_track(frames, truth, auto, Pipeline(None, None))
    assert silent["first_lock_frame"] is None and silent["lock_recall"] == 0.0


def test_the_written_report_leaves_the_clips_labels_out(tmp_path):
    import json

    from emts.eval.track_eval import write_report

    frames, truth = _clip(12)
    report = evaluate_track(
        frames, truth, TrackEvalConfig(fps=30), Pipeline(None, None, auto_lock=False)
    )
    write_report(report, tmp_path, "emts eval track test", "synthetic")
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["lock_recall"] == report["lock_recall"]
    assert all("truth" not in row for row in written["per_frame"])
    assert (tmp_path / "timeline.png").stat().st_size > 0
