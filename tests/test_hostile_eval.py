"""The evaluation and synthetic-set tools on hostile input: ground truth with no usable row,
boxes or spans outside the clip, sets with missing or stale clips -- one line and exit 2, never
a traceback or a report of frames that do not exist (the 2026-12 hostile-input review)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from cli_checks import expect_refusal
from emts.cli import main
from emts.errors import BadInputError
from emts.eval.track_eval import read_ground_truth


@pytest.fixture(scope="module")
def small_video(tmp_path_factory):
    """12 frames of 320x256 texture drifting right, at 25 fps."""
    path = tmp_path_factory.mktemp("video") / "in.mp4"
    rng = np.random.default_rng(0)
    big = cv2.GaussianBlur(rng.normal(0, 1, (300, 420)).astype(np.float32), (0, 0), 2.5)
    big = np.clip(128 + 30 * big / big.std(), 0, 255).astype(np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (320, 256))
    for t in range(12):
        writer.write(cv2.cvtColor(big[20 : 20 + 256, 2 * t : 2 * t + 320], cv2.COLOR_GRAY2BGR))
    writer.release()
    return path


# -- E: ground truth with no usable row ----------------------------------------------------------
NO_USABLE_ROW = {
    "all-nan": "NaN,NaN,NaN,NaN\n" * 12,
    "three-nan-rows": "NaN,NaN,NaN,NaN\n" * 3,
    "negative-boxes": "100,100,-20,-40\n" * 12,
    "empty-boxes": "100,100,0,0\n" * 12,
    "infinite-x": "inf,100,20,40\n" * 12,
    "mot-target-all-nan": "1,7,nan,nan,nan,nan,1,1,1\n2,7,1,1,0,5,1,1,1\n",
}


@pytest.mark.parametrize("text", NO_USABLE_ROW.values(), ids=NO_USABLE_ROW.keys())
def test_ground_truth_with_no_usable_row_is_one_line_naming_the_file(tmp_path, text):
    gt = tmp_path / "gt.txt"
    gt.write_text(text)
    with pytest.raises(BadInputError, match=r"no usable ground-truth row in .*gt\.txt \(\d+ rows"):
        read_ground_truth(gt, target_id=7)


@pytest.mark.parametrize(
    "text",
    ["0,7,10,10,5,5,1,1,1\n", "-3,7,10,10,5,5,1,1,1\n", "1.5,7,10,10,5,5,1,1,1\n",
     "1e12,7,10,10,5,5,1,1,1\n", "1,nan,10,10,5,5,1,1,1\n"],
    ids=["frame-0", "negative-frame", "fractional-frame", "huge-frame", "nan-id"],
)  # fmt: skip
def test_mot_rows_with_impossible_frame_numbers_are_one_line(tmp_path, text):
    gt = tmp_path / "gt.txt"
    gt.write_text("1,7,10,10,5,5,1,1,1\n" + text)
    with pytest.raises(BadInputError, match=r"row 2: frame"):
        read_ground_truth(gt, target_id=7)


def test_eval_track_with_no_usable_row_is_one_line_and_writes_nothing(
    tmp_path, capsys, small_video
):
    pytest.importorskip("torch")
    gt = tmp_path / "gt.txt"
    gt.write_text("NaN,NaN,NaN,NaN\n" * 12)
    out = tmp_path / "ev"
    argv = ["eval", "track", str(small_video), "--gt", str(gt), "--out", str(out)]
    expect_refusal(capsys, argv, f"no usable ground-truth row in {gt}")
    assert not out.exists()


# -- F: ground truth or spans outside the clip ----------------------------------------------------
@pytest.mark.parametrize(
    ("rows", "options", "fragment"),
    [
        ("5000,5000,30,60\n" * 12, [], "wholly outside the clip's 320x256 frames"),
        ("-100,-100,30,60\n" * 12, [], "wholly outside the clip's 320x256 frames"),
        ("100,80,20,40\n" * 12, ["--lock-gt", "5", "--occlude", "100:200"], "--occlude 100:200"),
        ("100,80,20,40\n" * 12, ["--remove", "8:20"], "--remove 8:20 is outside the frames"),
        ("100,80,20,40\n" * 12, ["--frames", "2:9", "--remove", "0:3"], "evaluated, 2:9"),
        ("100,80,20,40\n" * 40, ["--remove", "20:30"], "after the clip's last frame 11"),
        ("100,80,20,40\n" * 40, ["--occlude", "5:30"], "after the clip's last frame 11"),
        ("100,80,20,40\n" * 12, ["--enter", "bottom"], "its bottom edge can cut a person"),
        ("100,80,20,40\n" * 12, ["--enter", "left", "--leave", "1"], "one camera window"),
    ],
    ids=[
        "boxes-far-outside",
        "boxes-wholly-above-left",
        "occlude-past-the-ground-truth",
        "remove-past-the-ground-truth",
        "remove-before-frames",
        "remove-past-the-clip",
        "occlude-past-the-clip",
        "enter-where-the-window-cannot-cut-them",
        "enter-and-leave",
    ],
)
def test_eval_track_refuses_truth_or_spans_outside_the_clip_in_one_line(
    tmp_path, capsys, small_video, rows, options, fragment
):
    pytest.importorskip("torch")
    gt = tmp_path / "gt.txt"
    gt.write_text(rows)
    out = tmp_path / "ev"
    argv = ["eval", "track", str(small_video), "--gt", str(gt), "--out", str(out), *options]
    expect_refusal(capsys, argv, fragment)
    assert not out.exists()  # no empty report folder left behind either


def _frames(n=12):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (256, 320, 3), np.uint8) for _ in range(n)]


def test_boxes_partly_outside_are_kept_and_wholly_outside_ones_scored_absent(caplog):
    from emts.eval.track_eval import TrackEvalConfig, evaluate_track
    from emts.pipeline import Pipeline

    truth = np.array([[-10, -20, 30, 60]] * 12, float)  # a person at the top-left edge
    truth[7:9] = [400, 300, 20, 40]  # wholly outside the 320x256 frame
    report = evaluate_track(_frames(), truth, TrackEvalConfig(fps=30), Pipeline(None, None))
    assert report["visible_frames"] == 10
    assert "2 of 12 ground-truth boxes lie wholly outside the 320x256 frames" in caplog.text


def test_a_clip_shorter_than_its_ground_truth_reports_the_frames_it_has(caplog):
    from emts.eval.track_eval import TrackEvalConfig, evaluate_track
    from emts.pipeline import Pipeline

    truth = np.array([[100, 80, 20, 40]] * 40, float)
    report = evaluate_track(_frames(), truth, TrackEvalConfig(fps=30), Pipeline(None, None))
    assert report["frames"] == [0, 11] and len(report["per_frame"]) == 12
    assert "the clip ends at frame 11" in caplog.text
    with pytest.raises(BadInputError, match="before the lock frame 20"):
        evaluate_track(_frames(), truth, TrackEvalConfig(lock_frame=20), Pipeline(None, None))


# -- G: sets with missing or stale clips, and generating over another set ----------------------
def _clip_set(folder, clips=2):
    """A complete clip set of ``clips`` clips of 3 random 640x512 frames."""
    import json

    from emts.synth.store import write_clip

    rng = np.random.default_rng(1)
    for index in range(clips):
        images = [rng.integers(0, 255, (512, 640), np.uint8) for _ in range(3)]
        jpegs = [cv2.imencode(".jpg", image)[1].tobytes() for image in images]
        decoded = [cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_GRAYSCALE) for j in jpegs]
        frames = [{"frame": t, "persons": [], "distractors": []} for t in range(3)]
        write_clip(folder, index, jpegs, decoded, {"kind": "tier1", "frames": frames})
    manifest = {"format_version": 1, "set": "bench", "kind": "tier1", "split": "heldout"}
    manifest |= {"clips": clips, "frames_per_clip": 3, "seed": 0, "complete": True}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _stale(folder):
    """The review's case: a 1-clip manifest over 2 clips (another run's clip 000001 left)."""
    import json

    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "clips": 1}))


SET_DAMAGE = {
    "clip-deleted": (lambda f: (f / "clips" / "000001.npz").unlink(), "1 of them missing"),
    "labels-deleted": (lambda f: (f / "clips" / "000000.json").unlink(), "without labels"),
    "stale-clip-of-another-run": (_stale, "holds 1 clips its manifest does not name"),
}


@pytest.mark.parametrize(("damage", "fragment"), SET_DAMAGE.values(), ids=SET_DAMAGE.keys())
@pytest.mark.parametrize("command", ["eval-detect", "synth-preview"])
def test_a_set_whose_clips_are_not_its_manifests_is_one_line(
    tmp_path, capsys, damage, fragment, command
):
    folder = _clip_set(tmp_path / "set")
    damage(folder)
    if command == "eval-detect":
        pytest.importorskip("torch")
        argv = ["eval", "detect", "--bench", str(folder), "--out", str(tmp_path / "ev")]
    else:
        argv = ["synth", "preview", str(folder), "--out", str(tmp_path / "sheet.png")]
    expect_refusal(capsys, argv, fragment)
    assert not (tmp_path / "sheet.png").exists() and not (tmp_path / "ev" / "report.md").exists()


def test_synth_generates_only_into_an_empty_folder_or_over_the_same_set(tmp_path, capsys):
    out = tmp_path / "set"
    synth = ["synth", "fpbench", "--out", str(out), "--workers", "1"]
    assert main([*synth, "--clips", "2", "--seed", "5"]) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in (out / "clips").iterdir()}
    expect_refusal(capsys, [*synth, "--clips", "1", "--seed", "7"], "clips 2 -> 1; seed 5 -> 7")
    expect_refusal(capsys, [*synth, "--clips", "2", "--seed", "5", "--frames", "20"], "18 -> 20")
    assert {p.name: p.read_bytes() for p in (out / "clips").iterdir()} == before
    assert main([*synth, "--clips", "2", "--seed", "5"]) == 0  # the same set, done again
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    expect_refusal(capsys, ["synth", "fpbench", "--out", str(other)], "holds no clip set")
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
