"""``emts eval track``: ground-truth formats, stress tests and the lock protocol's figures."""

import cv2
import numpy as np
import pytest

from emts.errors import BadInputError
from emts.eval.track_eval import (
    TrackEvalConfig,
    box_overlap,
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


def _row(mode, box, truth, hit=True):
    iou = None
    if box is not None:
        x0, y0 = max(box[0], truth[0]), max(box[1], truth[1])
        x1 = min(box[0] + box[2], truth[0] + truth[2])
        y1 = min(box[1] + box[3], truth[1] + truth[3])
        inter = max(x1 - x0, 0) * max(y1 - y0, 0)
        iou = inter / (box[2] * box[3] + truth[2] * truth[3] - inter)
    return {"mode": mode, "box": box, "truth": truth, "iou": iou, "hit": hit}


def test_the_box_overlap_counts_frames_not_locked_as_none_and_reads_the_boxs_shape():
    truth = [10.0, 10.0, 10.0, 20.0]
    exact = _row("locked", truth, truth)
    wide = _row("locked", [5.0, 10.0, 20.0, 20.0], truth)  # IoU 0.5
    coasting = _row("reacquire", truth, truth)  # on the person, but not locked: 0
    overlap = box_overlap([exact, wide, coasting])
    assert overlap["iou_mean"] == pytest.approx(0.5)
    # thresholds 0, 0.05, .., 0.95 pass the exact box (IoU 1 > t), 0..0.45 the wide one
    assert overlap["success_auc"] == pytest.approx((20 + 10) / 3 / 21, abs=1e-4)
    assert overlap["iou_median_on_hits"] == pytest.approx(0.75)
    assert overlap["size_ratio_on_hits"] == [1.5, 1.0]
    assert box_overlap([])["success_auc"] is None
    assert box_overlap([coasting])["size_ratio_on_hits"] is None


def test_the_protocol_reports_how_well_the_box_fits(tmp_path):
    frames, truth = _clip(12)
    report = evaluate_track(
        frames, truth, TrackEvalConfig(fps=30), Pipeline(None, None, auto_lock=False)
    )
    overlap = report["box_overlap"]
    assert 0.3 < overlap["success_auc"] <= 1.0  # a tap on a dark walker, tracked by its look
    rows = [r for r in report["per_frame"] if r["visible"]]
    assert all(r["iou"] is not None for r in rows if r["box"] is not None)


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

    from emts.eval.track_report import write_report

    frames, truth = _clip(12)
    report = evaluate_track(
        frames, truth, TrackEvalConfig(fps=30), Pipeline(None, None, auto_lock=False)
    )
    write_report(report, tmp_path, "emts eval track test", "synthetic")
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["lock_recall"] == report["lock_recall"]
    assert all("truth" not in row for row in written["per_frame"])
    assert (tmp_path / "timeline.png").stat().st_size > 0


# ----------------------------------------------------------------------------- leave, look-alike
def _walker(n=70, flip="", velocity=(0.6, 0.2)):
    """A still textured ground and a dark 10x24 walker in the upper-left quadrant of a 320x256
    frame (``flip`` "h"/"v": mirrored, into the right/lower half); truth at 320x256."""
    rng = np.random.default_rng(2)
    ground = cv2.GaussianBlur(rng.normal(0, 1, (256, 320)).astype(np.float32), (0, 0), 2.5)
    ground = np.clip(128 + 30 * ground / ground.std(), 0, 255).astype(np.uint8)
    frames, truth = [], []
    for t in range(n):
        view = ground.copy()
        x, y = int(80 + velocity[0] * t), int(70 + velocity[1] * t)
        view[y - 12 : y + 12, x - 5 : x + 5] = 30
        box = [x - 5, y - 12, 10, 24]
        if "h" in flip:
            view, box[0] = view[:, ::-1], 320 - box[0] - 10
        if "v" in flip:
            view, box[1] = view[::-1], 256 - box[1] - 24
        frames.append(cv2.cvtColor(np.ascontiguousarray(view), cv2.COLOR_GRAY2BGR))
        truth.append(box)
    return frames, np.array(truth, float)


@pytest.mark.parametrize(
    ("path", "flip", "out", "back"),
    [(1, "", "left", "top"), (2, "h", "right", "top"), (6, "v", "bottom", "left")],
)
def test_a_leave_path_takes_the_person_out_of_view_and_back_elsewhere(path, flip, out, back):
    from emts.eval.track_stress import LEAVE_MAX_ACCEL, LEAVE_MAX_PAN, plan_leave

    frames, truth = _walker(flip=flip)
    plan = plan_leave(truth, (320, 256), path, 0, len(truth) - 1, fps=10)
    assert (plan.exit, plan.entry) == (out, back)
    stream, clip = stressed_frames(frames, truth, window=plan)
    delivered = list(stream)
    a, b = plan.span
    assert clip.spans == [("leave", a, b)] and 8 <= b - a + 1 <= 30
    assert clip.hidden[a : b + 1].all() and clip.hidden.sum() == b - a + 1
    assert np.isnan(clip.truth[a : b + 1]).all()  # absent while out of view
    assert (
        np.isfinite(clip.truth[:a]).all() and np.isfinite(clip.truth[b + 1 : plan.framed + 1]).all()
    )
    # the window stays inside the frame and pans smoothly (output px a frame)
    corners = plan.corners
    assert (corners >= -1e-6).all() and (corners <= [160 + 1e-6, 128 + 1e-6]).all()
    moves = np.diff(corners, axis=0) * 2
    assert np.hypot(*moves.T).max() <= LEAVE_MAX_PAN / 10 + 1e-6
    assert np.hypot(*np.diff(moves, axis=0).T).max() <= 1.2 * LEAVE_MAX_ACCEL / 10**2
    # at the lock frame the person is in the middle of the view, twice their size, dark
    x, y, w, h = clip.truth[0]
    assert abs(x + w / 2 - 160) < 12 and abs(y + h / 2 - 128) < 12 and h == 48
    assert delivered[0][int(y) + 4 : int(y + h) - 4, int(x) + 3 : int(x + w) - 3].mean() < 60
    # leaving: a box cut by the exit edge; coming back: one cut by the entry edge
    edge = {"left": (0, 0.0), "right": (0, 320.0), "top": (1, 0.0), "bottom": (1, 256.0)}

    def cut(box, side):
        axis, at = edge[side]
        low, high = box[axis], box[axis] + box[axis + 2]
        return (low <= at + 1e-6 if at == 0 else high >= at - 1e-6) and box[axis + 2] < (20, 48)[
            axis
        ]

    assert any(cut(clip.truth[t], out) for t in range(a - 3, a))
    assert any(cut(clip.truth[t], back) for t in range(b + 1, b + 4))


@pytest.mark.parametrize(
    ("edge", "flip"), [("left", ""), ("top", ""), ("right", "h"), ("bottom", "v")]
)
def test_an_enter_path_starts_with_the_person_cut_by_the_edge_then_frames_them(edge, flip):
    from emts.eval.track_stress import ENTER_VISIBLE, LEAVE_MAX_PAN, plan_enter

    frames, truth = _walker(flip=flip)
    plan = plan_enter(truth, (320, 256), edge, 0, len(truth) - 1, fps=10)
    stream, clip = stressed_frames(frames, truth, window=plan)
    delivered = list(stream)
    assert clip.spans == [] and not clip.hidden.any()  # nothing hidden
    # the lock frame: the person cut by that edge of the view, ENTER_VISIBLE of them in it
    axis, at = {"left": (0, 0), "right": (0, 320), "top": (1, 0), "bottom": (1, 256)}[edge]
    box = clip.truth[0]
    assert box[axis] == pytest.approx(at) or box[axis] + box[axis + 2] == pytest.approx(at)
    assert box[axis + 2] == pytest.approx(ENTER_VISIBLE * (20, 48)[axis], abs=0.5)
    assert box[3 - axis] == pytest.approx((20, 48)[1 - axis], abs=0.5)  # the other side whole
    # then framed: wholly in view from there on, the window inside the frame, panning smoothly
    assert plan.framed is not None and plan.framed < len(truth) - 10
    for t in range(plan.framed, len(truth)):
        x, y, w, h = clip.truth[t]
        assert x >= 0 and y >= 0 and x + w <= 320 and y + h <= 256 and (w, h) == (20, 48)
    assert (plan.corners >= -1e-6).all() and (plan.corners <= [160 + 1e-6, 128 + 1e-6]).all()
    assert np.hypot(*(np.diff(plan.corners, axis=0) * 2).T).max() <= LEAVE_MAX_PAN / 10 + 1e-6
    assert len(delivered) == len(truth) and delivered[0].shape == frames[0].shape


def test_an_enter_path_refuses_what_it_cannot_do():
    from emts.eval.track_stress import plan_enter

    frames, truth = _walker()
    with pytest.raises(BadInputError, match="no such edge"):
        plan_enter(truth, (320, 256), "middle", 0, 69, fps=10)
    with pytest.raises(BadInputError, match="not labelled on the lock frame"):
        plan_enter(np.vstack([np.full((1, 4), np.nan), truth]), (320, 256), "left", 0, 69, 10)
    # a walker in the upper-left quadrant cannot be cut by the window's bottom or right edge
    for edge in ("bottom", "right"):
        with pytest.raises(BadInputError, match=f"its {edge} edge can cut"):
            plan_enter(truth, (320, 256), edge, 0, 69, fps=10)
    with pytest.raises(BadInputError, match="one camera window at a time"):
        evaluate_track(frames, truth, TrackEvalConfig(leave=1, enter="left", fps=10))


def test_the_protocol_reports_an_enter_path(tmp_path):
    from emts.eval.track_report import write_report

    frames, truth = _walker()
    report = evaluate_track(
        frames, truth, TrackEvalConfig(enter="left", fps=10), Pipeline(None, None, auto_lock=False)
    )
    assert report["stress"]["enter"] == "left" and report["hidden_spans"] == []
    assert report["enter"]["edge"] == "left edge" and report["enter"]["framed"] is not None
    # the tap lands on the part in view
    assert report["lock"]["point"][0] == pytest.approx(0.6 * 20 / 2, abs=0.5)
    write_report(report, tmp_path, "emts eval track --enter left", "synthetic")
    assert "Enter: on the lock frame" in (tmp_path / "report.md").read_text()


def test_a_leave_path_is_the_same_at_any_resolution_over_640_px():
    from emts.eval.track_stress import plan_leave

    _, truth = _walker(140)
    plans = [
        plan_leave(truth * 2 * k, (640 * k, 512 * k), 1, 0, len(truth) - 1, fps=10) for k in (1, 2)
    ]
    assert (plans[0].start, plans[0].span, plans[0].framed) == (
        plans[1].start,
        plans[1].span,
        plans[1].framed,
    )
    np.testing.assert_allclose(plans[1].corners, 2 * plans[0].corners, atol=1e-6)


def test_a_leave_path_refuses_what_it_cannot_do():
    from emts.eval.track_stress import plan_leave

    frames, truth = _walker()
    with pytest.raises(BadInputError, match="no such path"):
        plan_leave(truth, (320, 256), 9, 0, 69, fps=10)
    with pytest.raises(BadInputError, match="not labelled on the lock frame"):
        plan_leave(np.vstack([np.full((1, 4), np.nan), truth]), (320, 256), 1, 0, 69, fps=10)
    gap = truth.copy()
    gap[20] = np.nan
    with pytest.raises(BadInputError, match="frame 20 is not labelled"):
        plan_leave(gap, (320, 256), 1, 0, 69, fps=10)
    with pytest.raises(BadInputError, match="labelled on frames 0-29 only"):
        plan_leave(truth[:30], (320, 256), 1, 0, 29, fps=10)
    # a walker in the upper-left quadrant cannot leave through the bottom edge
    with pytest.raises(BadInputError, match="bottom edge"):
        plan_leave(truth, (320, 256), 6, 0, 69, fps=10)
    with pytest.raises(BadInputError, match="not labelled on the lock frame"):
        evaluate_track(
            frames, gap, TrackEvalConfig(leave=1, lock_frame=20, lock_point=(1, 1), fps=10)
        )


def test_a_lookalike_walks_across_the_person_and_is_deterministic():
    from emts.eval.track_stress import plan_lookalike

    frames, truth = _walker(40, velocity=(2.0, 0.5))
    span = (10, 30)
    runs = []
    for _ in range(2):
        plan = plan_lookalike(truth, span)
        stream, clip = stressed_frames(frames, truth, lookalike=[plan])
        runs.append((list(stream), clip.copies.copy()))
    (out, copies), (again, copies_again) = runs
    assert all(np.array_equal(p, q) for p, q in zip(out, again, strict=True))
    np.testing.assert_array_equal(copies, copies_again)
    assert np.isnan(copies[:10]).all() and np.isnan(copies[31:]).all()
    assert np.isfinite(copies[10:31]).all() and clip.hidden.sum() == 0
    np.testing.assert_array_equal(out[9], frames[9])  # untouched outside the span
    np.testing.assert_array_equal(out[31], frames[31])
    centres = copies[:, :2] + copies[:, 2:] / 2
    person = truth[:, :2] + truth[:, 2:] / 2
    np.testing.assert_allclose(centres[20], person[20], atol=1e-6)  # crosses on the middle frame
    walk = centres[30] - centres[10]
    heading = person[30] - person[10]
    assert abs(np.dot(walk, heading)) / (np.hypot(*walk) * np.hypot(*heading)) < 1e-6
    assert np.hypot(*walk) / 20 == pytest.approx(np.hypot(2.0, 0.5), rel=0.1)  # their speed
    for t in (10, 12, 28, 30):  # far from the person: a dark copy pasted, the person untouched
        x, y, w, h = np.round(copies[t]).astype(int)
        assert out[t][y + 4 : y + h - 4, x + 3 : x + w - 3].mean() < 60
        assert frames[t][y + 4 : y + h - 4, x + 3 : x + w - 3].mean() > 90
        px, py, pw, ph = truth[t].astype(int)
        np.testing.assert_array_equal(
            out[t][py : py + ph, px : px + pw], frames[t][py : py + ph, px : px + pw]
        )
    # the feathered mask: the ground a little beyond the copy's box barely changes
    x, y, w, h = np.round(copies[10]).astype(int)
    ring = (slice(y - 6, y - 3), slice(x, x + w))
    assert np.abs(out[10][ring].astype(int) - frames[10][ring].astype(int)).mean() < 8


def test_a_lookalike_refuses_spans_it_cannot_use():
    from emts.eval.track_stress import plan_lookalike

    frames, truth = _walker(30)
    gap = truth.copy()
    gap[15] = np.nan
    with pytest.raises(BadInputError, match="not labelled on frame 15"):
        plan_lookalike(gap, (10, 20))
    with pytest.raises(BadInputError, match="outside the frames evaluated"):
        evaluate_track(frames, truth, TrackEvalConfig(lookalike=((20, 40),), fps=10))
    with pytest.raises(BadInputError, match="not labelled on frame 15"):
        evaluate_track(frames, gap, TrackEvalConfig(lookalike=((10, 20),), last=29, fps=10))


def test_the_protocol_reports_leave_and_lookalike_spans(tmp_path):
    import json

    from emts.eval.track_report import write_report

    frames, truth = _walker()
    pipeline = Pipeline(None, None, auto_lock=False)
    report = evaluate_track(frames, truth, TrackEvalConfig(leave=1, fps=10), pipeline)
    span = report["hidden_spans"][0]
    assert span["kind"] == "leave" and span["frames"] == report["leave"]["out_of_view"]
    assert {"locked_frames_after_vanishing", "relocks_while_hidden", "recovery_frames"} <= set(span)
    assert report["stress"]["leave"] == 1 and report["lookalike_spans"] == []
    assert all(not r["visible"] for r in report["per_frame"] if r["hidden"])
    write_report(report, tmp_path / "leave", "emts eval track --leave 1", "synthetic")
    assert (tmp_path / "leave" / "contact.png").stat().st_size > 0
    assert "Leave path 1" in (tmp_path / "leave" / "report.md").read_text()

    frames, truth = _walker(24)
    config = TrackEvalConfig(lookalike=((6, 16),), fps=10)
    report = evaluate_track(frames, truth, config, Pipeline(None, None, auto_lock=False))
    (span,) = report["lookalike_spans"]
    assert span["frames"] == [6, 16] and span["ended_on_person"] in (True, False)
    assert 0 <= span["frames_on_copy"] <= 11 and report["hidden_spans"] == []
    rows = {r["frame"]: r for r in report["per_frame"]}
    assert rows[5]["copy"] is None and len(rows[6]["copy"]) == 4 and "on_copy" in rows[6]
    write_report(report, tmp_path / "look", "emts eval track --lookalike 6:16", "synthetic")
    written = json.loads((tmp_path / "look" / "report.json").read_text())
    assert "thumbnails" not in written and written["per_frame"][6]["copy"] == rows[6]["copy"]
    assert "| crossing | 6-16 |" in (tmp_path / "look" / "report.md").read_text()
    assert (tmp_path / "look" / "contact.png").stat().st_size > 0


class _Scripted:
    """A stand-in pipeline reporting a scripted box per frame (always ``locked``)."""

    def __init__(self, boxes):
        self.boxes, self.index, self.fps = boxes, -1, None

    def lock(self, x, y, box=None):
        pass

    def step(self, frame):
        from types import SimpleNamespace

        self.index += 1
        target = SimpleNamespace(box=self.boxes[self.index], measured_by=None, p_human=None)
        return SimpleNamespace(mode="locked", target=target, event=None, lock_source="tap")


def test_a_lock_that_follows_the_copy_counts_frames_on_it_and_ends_off_the_person():
    from emts.eval.track_stress import plan_lookalike

    frames, truth = _walker(36, velocity=(2.0, 0.5))
    copy = plan_lookalike(truth, (4, 32))  # a still camera: as evaluate_track plans it
    boxes = list(truth)
    for t in range(20, 33):  # from 2 frames after the crossing, the lock rides the copy
        boxes[t] = copy.box(t)
    config = TrackEvalConfig(lookalike=((4, 32),), fps=10)
    (span,) = evaluate_track(frames, truth, config, _Scripted(boxes))["lookalike_spans"]
    # while the two are within the success radius (20 px) of each other, a target on either
    # is a hit: on the copy from frame 25 on, where they are apart
    assert span["frames_on_copy"] == 8 and span["first_frame_on_copy"] == 25
    assert span["locked_on_person_frames"] == 29 - 8
    assert span["ended_on_person"] is False and span["ok"] is False
    (span,) = evaluate_track(frames, truth, config, _Scripted(list(truth)))["lookalike_spans"]
    assert span["frames_on_copy"] == 0 and span["ended_on_person"] is True and span["ok"] is True
