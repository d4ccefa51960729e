"""The ``emts`` command: outputs of the channels job, and one-line errors with exit code 2."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from cli_checks import expect_refusal
from conftest import render, similarity
from emts.cli import main
from emts.config import ChannelConfig
from emts.errors import BadInputError
from emts.io import open_source


def _write_shifted_frames(folder, scene, count=4, shift=10.0, size=(1280, 720), dtype=np.uint8):
    """Frames of ``size`` whose content moves right by ``shift`` input px per frame."""
    folder.mkdir()
    for k in range(count):
        frame = render(scene, similarity(0, 1, -60 + shift * k, -60), size)
        if dtype == np.uint16:
            frame = frame.astype(np.uint16) * 40 + 20000
        cv2.imwrite(str(folder / f"frame_{k:03d}.png"), frame)
    return folder


def test_channels_writes_one_json_line_per_frame_in_input_pixels(tmp_path, aerial_scene):
    scene = cv2.resize(aerial_scene, None, fx=2, fy=2)  # enough texture for a 1280x720 frame
    folder = _write_shifted_frames(tmp_path / "frames", scene)
    jsonl, video = tmp_path / "ego.jsonl", tmp_path / "channels.mp4"
    assert main(["channels", str(folder), "--out", str(video), "--jsonl", str(jsonl)]) == 0
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["frame"] for r in records] == [0, 1, 2, 3]
    assert set(records[1]) == {"frame", "M", "method", "tracks", "inlier_ratio", "H"}
    assert records[0]["M"] == [[1, 0, 0], [0, 1, 0]] and records[0]["method"] == "identity"
    assert records[0]["H"] is None  # no motion yet: Stage B had nothing to warp
    for record in records[1:]:
        assert record["method"] == "lk"
        np.testing.assert_allclose(record["M"], [[1, 0, 10.0], [0, 1, 0]], atol=0.25)
        assert record["H"] is None  # a pure shift: the similarity explains it, Stage B used M
    capture = cv2.VideoCapture(str(video))
    assert int(capture.get(cv2.CAP_PROP_FRAME_COUNT)) == 4


def test_channels_reports_the_homography_stage_b_warped_by_in_input_pixels(tmp_path, aerial_scene):
    """An oblique camera pitching: frame k+1 is frame k seen through ``tilt`` (input px)."""
    scene = cv2.resize(aerial_scene, None, fx=2, fy=2)
    centre = np.array([[1, 0, 640.0], [0, 1, 360.0], [0, 0, 1]])
    tilt = centre @ np.array([[1, 0, 6.0], [0, 1, 0], [0, 4e-5, 1]]) @ np.linalg.inv(centre)
    pose = np.vstack([similarity(0.0, 1.0, -160.0, -160.0), [0, 0, 1]])
    folder = tmp_path / "tilt"
    folder.mkdir()
    for k in range(3):
        frame = cv2.warpPerspective(scene, pose, (1280, 720), flags=cv2.INTER_LINEAR)
        cv2.imwrite(str(folder / f"frame_{k:03d}.png"), np.clip(frame, 0, 255).astype(np.uint8))
        pose = tilt @ pose
    jsonl = tmp_path / "ego.jsonl"
    assert main(["channels", str(folder), "--no-video", "--jsonl", str(jsonl)]) == 0
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    corners = np.array([[0, 1279, 0, 1279], [0, 0, 719, 719], [1, 1, 1, 1]], float)
    for record in records[1:]:
        assert record["H"] is not None
        mapped, truth = np.array(record["H"]) @ corners, tilt @ corners
        # the corners move 9 px apart (a keystone no similarity follows): within 3 input px
        assert np.abs(mapped[:2] / mapped[2] - truth[:2] / truth[2]).max() < 3.0


def test_channels_with_a_model_shows_what_that_model_is_fed(tmp_path, aerial_scene):
    """``--model``: Stage B at the model's own size and warp, and its heatmap and detections
    beside the channels; ``auto`` says which model the frames picked, as emts detect does."""
    scene = cv2.resize(aerial_scene, None, fx=2, fy=2)
    folder = _write_shifted_frames(tmp_path / "frames", scene)
    sizes = {}
    for model in (None, "thermal", "auto"):
        video, jsonl = tmp_path / f"{model}.mp4", tmp_path / f"{model}.jsonl"
        argv = ["channels", str(folder), "--out", str(video), "--jsonl", str(jsonl)]
        assert main(argv + (["--model", model] if model else [])) == 0
        capture = cv2.VideoCapture(str(video))
        assert int(capture.get(cv2.CAP_PROP_FRAME_COUNT)) == 4
        ok, picture = capture.read()
        assert ok
        sizes[model] = picture.shape[:2]
        records = [json.loads(line) for line in jsonl.read_text().splitlines()]
        assert [r["frame"] for r in records] == [0, 1, 2, 3]
        assert [r.get("detector") for r in records] == (
            ["thermal", None, None, None] if model == "auto" else [None] * 4
        )
        np.testing.assert_allclose(records[-1]["M"], [[1, 0, 10.0], [0, 1, 0]], atol=0.25)
    # no model: L | R | D at 256x192; the thermal model (run at 512x384): L | R | D |
    # heatmap | detections at twice the size (the gray frames pick it under auto)
    height, width = sizes[None]
    assert sizes["thermal"] == sizes["auto"] == (2 * height, 2 * width * 5 // 3)


def test_channels_with_auto_waits_for_a_frame_with_content(tmp_path, aerial_scene):
    folder = _write_shifted_frames(tmp_path / "frames", cv2.resize(aerial_scene, None, fx=2, fy=2))
    cv2.imwrite(str(folder / "frame_000.png"), np.zeros((720, 1280), np.uint8))  # lens cap on
    video, jsonl = tmp_path / "c.mp4", tmp_path / "c.jsonl"
    argv = ["channels", str(folder), "--out", str(video), "--jsonl", str(jsonl)]
    assert main([*argv, "--model", "auto"]) == 0
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r.get("detector") for r in records] == [None, "thermal", None, None]
    assert int(cv2.VideoCapture(str(video)).get(cv2.CAP_PROP_FRAME_COUNT)) == 4


def test_channels_with_a_model_feeds_it_stage_b_as_it_runs_in_the_pipeline(aerial_scene):
    from emts.apps.channels import _ModelView
    from emts.front_end import MotionFrontEnd, stage_b_config
    from emts.precision import named_model
    from emts.stages.c_detect.detector import Detector

    front = MotionFrontEnd(channel_config=ChannelConfig(ego_compensation=False))
    view = _ModelView(named_model("thermal"), front, 0.3)
    config = stage_b_config(Detector(named_model("thermal")))
    assert front.network_size == (512, 384) and front.channels.config.warp_at == config.warp_at
    assert front.channels.config.ego_compensation is False  # --no-ego stays
    frame = render(aerial_scene, similarity(0, 1, -60, -60), (1280, 720))
    result, (fed, heat, detections), picked = view.step(frame)
    assert fed.shape == (3, 384, 512) and heat.shape == (48, 64) and picked is None
    assert "512x384" in view.caption() and config.warp_at in view.caption()


def test_channels_reads_16_bit_thermal_images_and_globs(tmp_path, aerial_scene):
    folder = _write_shifted_frames(
        tmp_path / "thermal", aerial_scene, size=(640, 512), dtype=np.uint16
    )
    jsonl = tmp_path / "ego.jsonl"
    pattern = str(folder / "frame_*.png")
    assert main(["channels", pattern, "--no-video", "--jsonl", str(jsonl)]) == 0
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(records) == 4 and records[-1]["method"] == "lk"
    assert abs(records[-1]["M"][0][2] - 10.0) < 0.25


def _expect_one_line_error(capsys, argv, fragment):
    try:
        code = main(argv)
    except SystemExit as stop:  # refused while the arguments are parsed
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("emts: error:") and fragment in err[0], err[0]


def test_missing_file_is_one_line_and_exit_2(tmp_path, capsys):
    _expect_one_line_error(capsys, ["channels", str(tmp_path / "nope.mp4")], "no such file")


def test_empty_folder_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _expect_one_line_error(capsys, ["channels", str(tmp_path / "empty")], "no images")


def test_glob_matching_nothing_is_one_line_and_exit_2(tmp_path, capsys):
    _expect_one_line_error(capsys, ["channels", str(tmp_path / "*.png")], "no images")


@pytest.mark.parametrize("content", [b"", b"this is not a video" * 100], ids=["empty", "garbage"])
def test_unreadable_video_is_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / "clip.mp4"
    path.write_bytes(content)
    _expect_one_line_error(
        capsys, ["channels", str(path), "--jsonl", str(tmp_path / "e.jsonl")], "video"
    )


def test_unknown_camera_is_one_line_and_exit_2(tmp_path, capsys):
    _expect_one_line_error(
        capsys, ["channels", "97", "--jsonl", str(tmp_path / "e.jsonl")], "camera 97"
    )


def test_frame_of_wrong_dtype_is_one_line_and_exit_2_keeping_earlier_lines(tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), np.full((512, 640), 100, np.uint8))
    cv2.imwrite(str(folder / "b.tiff"), np.full((512, 640), 0.5, np.float32))
    jsonl = tmp_path / "ego.jsonl"
    _expect_one_line_error(
        capsys, ["channels", str(folder), "--no-video", "--jsonl", str(jsonl)], "frame 1"
    )
    assert len(jsonl.read_text().splitlines()) == 1  # frame 0 was flushed before the error


def test_help_is_available_for_every_command(capsys):
    for argv in (["--help"], ["channels", "--help"], ["bench", "--help"], ["demo", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
    assert "SOURCE" in capsys.readouterr().out


def test_api_source_accepts_any_iterable_of_arrays():
    frames = (np.zeros((64, 64), np.uint8) for _ in range(3))
    assert len(list(open_source(frames))) == 3
    with pytest.raises(BadInputError):
        open_source(np.zeros((64, 64), np.uint8))


def test_bench_reports_each_stage_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert (
        main(["bench", "--frames", "5", "--warmup", "2", "--threads", "1", "--json", str(out)]) == 0
    )
    report = json.loads(out.read_text())
    assert report["threads"] == 1 and report["frames"] == 5
    from emts.stages.c_detect.detector import default_model_path

    expected = set("ABCDE") if default_model_path().is_file() else {"A", "B"}
    assert set(report["stages"]) == expected
    assert report["total"]["median_ms"] > 0
    assert "total" in capsys.readouterr().out


def test_bench_paced_feeds_frames_on_the_cameras_schedule(monkeypatch, tmp_path, capsys):
    """--pace: frame i is started at first + i / fps (sleeping in between), and the report
    says how it was fed and how many frames overran the frame interval."""
    import emts.apps.bench

    clock = {"now": 100.0}
    slept = []

    def fake_sleep(seconds):
        slept.append(seconds)
        clock["now"] += seconds

    def fake_clock():
        clock["now"] += 1e-4  # every reading: 0.1 ms of work
        return clock["now"]

    monkeypatch.setattr(emts.apps.bench.time, "sleep", fake_sleep)
    monkeypatch.setattr(emts.apps.bench.time, "perf_counter", fake_clock)
    out = tmp_path / "bench.json"
    argv = ["bench", "--frames", "3", "--warmup", "1", "--threads", "1", "--pace", "10"]
    assert main([*argv, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["pace_fps"] == 10 and report["over_interval"] == 0
    assert len(slept) == 4 and slept[0] == pytest.approx(0.0, abs=1e-3)
    # each later frame waits out the rest of its 100 ms interval
    assert all(0.09 < s <= 0.1 for s in slept[1:])
    assert "fed at 10 fps" in capsys.readouterr().out
    with pytest.raises(ValueError):
        emts.apps.bench.run_bench(frames=1, warmup=0, pace=0.0)


def test_bench_refuses_pace_with_peer(tmp_path, capsys):
    argv = ["bench", "--pace", "30", "--peer-yolo", str(tmp_path / "yolo.onnx")]
    assert main(argv) == 2
    assert "--pace" in capsys.readouterr().err


# --- Field hardening (issue 10): bad arguments and paths, signals, streams with bad data ---


@pytest.fixture(scope="module")
def clip_video(tmp_path_factory, aerial_scene):
    """A 320x256 video of a drifting real still, 400 frames at 25 fps."""
    return _write_clip_video(tmp_path_factory.mktemp("video") / "in.mp4", aerial_scene, 400)


def _write_clip_video(path, scene, count, size=(320, 256)):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, size)
    for k in range(count):
        frame = render(scene, similarity(0, 0.5, -40 + 0.5 * k, -30 + 0.2 * k), size)
        writer.write(cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))
    writer.release()
    return path


def _frames_in(path) -> int:
    capture = cv2.VideoCapture(str(path))
    count = 0
    while capture.read()[0]:
        count += 1
    return count


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["track", "x.mp4", "--threshold", "-1"], "--threshold"),
        (["track", "x.mp4", "--threshold", "2"], "--threshold"),
        (["track", "x.mp4", "--threshold", "nan"], "--threshold"),
        (["detect", "x.mp4", "--jsonl", "d.jsonl", "--threshold", "inf"], "--threshold"),
        (["track", "x.mp4", "--threads", "0"], "--threads"),
        (["detect", "x.mp4", "--jsonl", "d.jsonl", "--threads", "-1"], "--threads"),
        (["track", "x.mp4", "--threads", "1000"], "--threads"),
        (["track", "x.mp4", "--fps", "0"], "--fps"),
        (["channels", "x.mp4", "--fps", "-30"], "--fps"),
        (["detect", "x.mp4", "--jsonl", "d.jsonl", "--fps", "nan"], "--fps"),
        (["bench", "--warmup", "-1000"], "--warmup"),
        (["bench", "--frames", "0"], "--frames"),
        (["demo", "--frames", "0"], "--frames"),
        (["demo", "--frames", "3"], "at least 6 frames"),
        (["demo", "--seed", "-1"], "--seed"),
        (["synth", "tier1", "--out", "x", "--seed", "-1"], "--seed"),
        (["synth", "preview", "x", "--out", "s.png", "--clips", "0"], "--clips"),
        (["synth", "bench", "--out", "x", "--hard-shade", "1.5"], "--hard-shade"),
        (["track", "x.mp4", "--lock", "1..2,3"], "--lock"),
        (["track", "x.mp4", "--lock", ".,."], "--lock"),
        (["track", "x.mp4", "--lock", "here"], "--lock"),
        (["trak", "x.mp4"], "invalid choice"),
        (["track"], "SOURCE"),
        (["track", "x.mp4", "--frobnicate"], "unrecognized"),
        (["channels", "camera:x"], "camera:N"),
    ],
)
def test_every_bad_argument_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, argv, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.mp4").write_bytes(b"")  # exists, so only the argument can be at fault
    expect_refusal(capsys, argv, fragment)
    assert list(tmp_path.iterdir()) == [tmp_path / "x.mp4"]  # nothing written


@pytest.mark.parametrize(
    "outputs",
    [
        ["track", "{v}", "--jsonl", "{v}"],
        ["track", "{v}", "--out", "{v}", "--jsonl", "t.jsonl"],
        ["track", "{v}", "--out", "{link}", "--jsonl", "t.jsonl"],
        ["track", "{v}", "--out", "same.mp4", "--jsonl", "same.mp4"],
        ["track", "{v}", "--jsonl", "t.jsonl", "--out", "a.mp4", "--timeline", "t.jsonl"],
        ["detect", "{v}", "--jsonl", "{hard}"],
        ["channels", "{v}", "--jsonl", "{v}"],
        ["channels", "{v}", "--out", "{v}", "--jsonl", "e.jsonl"],
        ["channels", "{v}", "--out", "c.mp4", "--jsonl", "c.mp4"],
    ],
    ids=[
        "track-jsonl-is-input",
        "track-out-is-input",
        "track-out-is-symlink-to-input",
        "track-two-outputs",
        "track-timeline-is-jsonl",
        "detect-jsonl-hardlinks-input",
        "channels-jsonl-is-input",
        "channels-out-is-input",
        "channels-two-outputs",
    ],
)
def test_an_output_that_is_an_input_or_another_output_is_refused(
    tmp_path, monkeypatch, capsys, clip_video, outputs
):
    monkeypatch.chdir(tmp_path)
    video = tmp_path / "in.mp4"
    video.write_bytes(clip_video.read_bytes())
    (tmp_path / "link.mp4").symlink_to(video)
    os.link(video, tmp_path / "hard.mp4")
    before = video.read_bytes()
    argv = [a.format(v="in.mp4", link="link.mp4", hard="hard.mp4") for a in outputs]
    expect_refusal(capsys, argv, "")
    assert video.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.mp4", "in.mp4", "link.mp4"]


def test_an_image_of_the_input_folder_is_not_an_output(tmp_path, capsys):
    folder = _write_shifted_frames(tmp_path / "frames", np.full((900, 900), 128, np.float32), 2)
    target = folder / "frame_001.png"
    before = target.read_bytes()
    argv = ["track", str(folder), "--jsonl", "-", "--timeline", str(target)]
    expect_refusal(capsys, argv, "is an input")
    assert target.read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["track", "{v}", "--out", "{file}/sub/a.mp4"], "not a folder"),
        (["track", "{v}", "--out", "a.txt"], "a video must end in"),
        (["track", "{v}", "--timeline", "t.txt"], "must be a .png"),
        (["track", "{v}", "--timeline", "{dir}.png"], "is a folder"),
        (["channels", "{v}", "--jsonl", "{dir}.png"], "is a folder"),
        (["bench", "--json", "/proc/emts-nowhere/b.json"], "cannot write in /proc"),
        (["demo", "--out-dir", "{file}"], "is a file"),
        (["synth", "tier1", "--out", "{file}", "--clips", "1"], "is a file"),
        (["synth", "export", "{set}", "{file}"], "is a file"),
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_the_run(
    tmp_path, monkeypatch, capsys, clip_video, argv, fragment
):
    if "/proc/" in " ".join(argv) and not Path("/proc/self").exists():
        pytest.skip("no /proc")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("keep me")
    (tmp_path / "dir.png").mkdir()
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "manifest.json").write_text("{}")
    subs = {"v": str(clip_video), "file": "file", "dir": "dir", "set": "set"}
    expect_refusal(capsys, [a.format(**subs) for a in argv], fragment)
    assert (tmp_path / "file").read_text() == "keep me"
    assert not list(tmp_path.glob("*.jsonl")) and not list(tmp_path.glob("*.mp4"))


@pytest.mark.parametrize("content", ["{not json", "", "[1, 2]"], ids=["broken", "empty", "list"])
@pytest.mark.parametrize("action", ["preview", "export"])
def test_a_corrupt_manifest_is_one_line_and_exit_2(tmp_path, capsys, content, action):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "manifest.json").write_text(content)
    out = tmp_path / ("sheet.png" if action == "preview" else "clip")
    argv = ["synth", action, str(tmp_path / "set")]
    argv += ["--out", str(out)] if action == "preview" else [str(out)]
    expect_refusal(capsys, argv, "manifest.json")


@pytest.mark.parametrize(
    "argv",
    [["eval", "detect", "--bench"], ["eval", "reacq", "--bench"], ["eval", "fp", "--fpbench"]],
)
def test_an_evaluation_on_a_set_with_a_corrupt_manifest_is_one_line(tmp_path, capsys, argv):
    pytest.importorskip("torch")
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "manifest.json").write_text("{oops")
    out = tmp_path / "report"
    expect_refusal(capsys, [*argv, str(tmp_path / "set"), "--out", str(out)], "manifest.json")
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "model", "fragment"),
    [
        ("--verifier", "detector.onnx", "is not an EMTS verifier"),
        ("--model", "verifier.onnx", "is not an EMTS detector"),
        ("--verifier", "garbage.onnx", "verifier model"),
        ("--model", "garbage.onnx", "detector model"),
    ],
)
def test_a_model_of_the_wrong_kind_is_one_line_and_exit_2(
    tmp_path, capsys, clip_video, flag, model, fragment
):
    from emts.stages.c_detect.detector import default_model_path

    models = default_model_path().parent
    (tmp_path / "garbage.onnx").write_bytes(b"\x00" * 100)
    path = tmp_path / model if model == "garbage.onnx" else models / model
    argv = ["track", str(clip_video), "--jsonl", str(tmp_path / "t.jsonl"), flag, str(path)]
    expect_refusal(capsys, argv, fragment)


def _mixed_folder(tmp_path, aerial_scene):
    """Eight frames: 0-4 at 640x512, frame 2 corrupt, 5-7 at 400x400."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    for k in range(8):
        size = (640, 512) if k < 5 else (400, 400)
        frame = render(aerial_scene, similarity(0, 1, -60 + 2 * k, -60), size)
        cv2.imwrite(str(folder / f"f{k:02d}.png"), frame)
    (folder / "f02.png").write_bytes(b"\x89PNG broken")
    return folder


def test_track_a_folder_with_a_corrupt_image_and_mixed_sizes(tmp_path, aerial_scene, caplog):
    folder = _mixed_folder(tmp_path, aerial_scene)
    out, jsonl = tmp_path / "a.mp4", tmp_path / "t.jsonl"
    argv = ["track", str(folder), "--out", str(out), "--jsonl", str(jsonl), "--fps", "10"]
    with caplog.at_level(logging.WARNING, logger="emts"):
        assert main(argv) == 0
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["frame"] for r in lines] == list(range(8))  # numbering kept
    assert "skipped" in lines[2] and "f02.png" in lines[2]["skipped"]
    assert all("skipped" not in r for i, r in enumerate(lines) if i != 2)
    capture = cv2.VideoCapture(str(out))
    assert capture.get(cv2.CAP_PROP_FPS) == pytest.approx(10)
    assert int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)) == 640
    assert _frames_in(out) == 7  # every tracked frame, the 400x400 ones letterboxed
    assert sum("letterboxed" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("command", ["channels", "detect"])
def test_a_corrupt_image_keeps_numbering_in_channels_and_detect(tmp_path, aerial_scene, command):
    folder = _mixed_folder(tmp_path, aerial_scene)
    jsonl = tmp_path / "o.jsonl"
    argv = [command, str(folder), "--jsonl", str(jsonl)]
    argv += ["--no-video"] if command == "channels" else []
    assert main(argv) == 0
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["frame"] for r in lines] == list(range(8))
    assert lines[2] == {"frame": 2, "skipped": "unreadable image f02.png"}


def test_a_tap_frame_that_never_comes_is_said_once_at_the_end(tmp_path, clip_video, caplog):
    folder = tmp_path / "frames"
    folder.mkdir()
    capture = cv2.VideoCapture(str(clip_video))
    for k in range(5):
        cv2.imwrite(str(folder / f"{k}.png"), capture.read()[1])
    argv = ["track", str(folder), "--jsonl", str(tmp_path / "t.jsonl"), "--lock", "10,10@999"]
    with caplog.at_level(logging.WARNING, logger="emts"):
        assert main(argv) == 0
    said = [r.getMessage() for r in caplog.records if "never came" in r.getMessage()]
    assert len(said) == 1 and "999" in said[0] and "5 frames" in said[0]


def test_a_timeline_that_cannot_be_written_after_the_run_is_an_error(
    tmp_path, clip_video, monkeypatch, capsys
):
    def disk_full(path, image):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr("emts.io.write_image", disk_full)
    argv = ["track", str(clip_video), "--jsonl", str(tmp_path / "t.jsonl")]
    expect_refusal(capsys, [*argv, "--timeline", str(tmp_path / "t.png")], "timeline")
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 400  # the lines are kept


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_finish_the_files_like_ctrl_c(tmp_path, clip_video, signame):
    out, jsonl, png = tmp_path / "a.mp4", tmp_path / "t.jsonl", tmp_path / "t.png"
    argv = ["track", str(clip_video), "--out", str(out), "--jsonl", str(jsonl)]
    code = "import sys; from emts.cli import main; sys.exit(main(sys.argv[1:]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, *argv, "--timeline", str(png)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if jsonl.is_file() and len(jsonl.read_text().splitlines()) >= 20:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before the signal"
    process.send_signal(getattr(signal, signame))
    _, err = process.communicate(timeout=60)
    number = getattr(signal, signame)
    assert process.returncode == 128 + number, err
    assert err.strip().splitlines() == [
        f"emts: interrupted ({signame}); results written so far are kept"
    ]
    lines = len(jsonl.read_text().splitlines())
    assert 20 <= lines < 400
    assert _frames_in(out) == lines  # a playable mp4 holding every frame written
    assert png.is_file() and cv2.imread(str(png)) is not None


def test_train_detector_recipe_options_reach_the_training_config():
    from emts.cli import build_parser
    from emts.cli.train import _recipe_overrides
    from emts.train.loop import TrainConfig

    args = build_parser().parse_args(
        ["train", "detector", "--out", "x", "--invert-l", "0.5", "--l-gain", "0.6", "1.6"]
        + ["--still-speed", "0.25", "--randomized-sources", "tier1", "negative"]
        + ["--residual-reference", "0.0095", "--size-weight", "1.0", "--l-dropout", "0.3"]
        + ["--mirror", "0.5"]
    )
    config = TrainConfig(**_recipe_overrides(args))
    assert config.l_dropout == 0.3 and TrainConfig().l_dropout == 0.0
    assert config.mirror == 0.5 and TrainConfig().mirror == 0.0
    with pytest.raises(BadInputError, match="--mirror"):
        _recipe_overrides(
            build_parser().parse_args(["train", "detector", "--out", "x", "--mirror", "1.5"])
        )
    assert config.size_weight == 1.0 and TrainConfig().size_weight == 0.1
    with pytest.raises(BadInputError, match="--size-weight"):
        _recipe_overrides(
            build_parser().parse_args(["train", "detector", "--out", "x", "--size-weight", "0"])
        )
    assert config.invert_l == 0.5 and config.l_gain == (0.6, 1.6)
    assert config.still_speed == 0.25 and config.randomized_sources == ("tier1", "negative")
    assert config.residual_reference == 0.0095
    wide = TrainConfig(
        **_recipe_overrides(
            build_parser().parse_args(["train", "detector", "--out", "x", "--variant", "wide"])
        )
    )
    assert wide.model.widths == (32, 64, 96) and wide.model.stem == 24
    defaults = TrainConfig(
        **_recipe_overrides(build_parser().parse_args(["train", "detector", "--out", "x"]))
    )
    assert defaults == TrainConfig()


def test_detect_runs_at_another_network_size_and_refuses_a_bad_one(tmp_path, capsys, aerial_scene):
    scene = cv2.resize(aerial_scene, None, fx=2, fy=2)
    folder = _write_shifted_frames(tmp_path / "frames", scene)
    jsonl = tmp_path / "d.jsonl"
    argv = ["detect", str(folder), "--jsonl", str(jsonl), "--threshold", "0.0"]
    assert main([*argv, "--network-size", "512x384"]) == 0
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(records) == 4 and records[-1]["detections"]
    _expect_one_line_error(capsys, [*argv, "--network-size", "500x384"], "network size 500x384")


def test_stage_b_working_reaches_every_stream_command_and_the_detectors_reference(
    tmp_path, aerial_scene
):
    from emts.cli import build_parser
    from emts.cli.common import channel_config as _channel_config
    from emts.cli.common import stage_c as _stage_c
    from emts.stages.b_channels import RESIDUAL_REFERENCE, WORKING_WARP_RESIDUAL_REFERENCE

    parser = build_parser()
    for command in (["detect", "x", "--jsonl", "-"], ["track", "x"], ["serve", "x"], ["bench"]):
        assert _channel_config(parser.parse_args(command)) is None  # auto: each model's own
        for flag, warp in (("working", "working"), ("paper", "network")):
            args = parser.parse_args([*command, "--stage-b", flag])
            assert _channel_config(args).warp_at == warp
    args = parser.parse_args(["detect", "x", "--jsonl", "-", "--model", "default"])
    assert _stage_c(args).detector.residual_reference == RESIDUAL_REFERENCE
    args.stage_b = "working"  # every model on the working warp, fed its level
    assert _stage_c(args).detector.residual_reference == WORKING_WARP_RESIDUAL_REFERENCE
    folder = _write_shifted_frames(tmp_path / "frames", cv2.resize(aerial_scene, None, fx=2, fy=2))
    runs = []
    for warp in ("paper", "working"):
        jsonl = tmp_path / f"{warp}.jsonl"
        argv = ["detect", str(folder), "--jsonl", str(jsonl), "--threshold", "0.0"]
        assert main([*argv, "--stage-b", warp]) == 0
        runs.append([json.loads(line)["detections"] for line in jsonl.read_text().splitlines()])
    assert len(runs[0]) == len(runs[1]) == 4 and runs[0][-1] and runs[1][-1]
    assert runs[0][-1] != runs[1][-1]  # other channels, other scores
    report = main(["bench", "--frames", "2", "--warmup", "1", "--threads", "1",
                   "--stage-b", "working", "--json", str(tmp_path / "b.json")])  # fmt: skip
    assert report == 0
    models = json.loads((tmp_path / "b.json").read_text())["models"]
    assert not models or models["stage B warp"] == "working"


def test_the_detector_modes_on_the_command_line_are_the_pipelines():
    from emts.cli.common import DETECTOR_MODE_HELP
    from emts.stages.c_detect.stage import DEFAULT_DETECTOR_MODE, DETECTOR_MODES

    assert tuple(DETECTOR_MODE_HELP) == DETECTOR_MODES
    assert DETECTOR_MODES[0] == DEFAULT_DETECTOR_MODE  # the command line's default is the first


def test_coarse_pass_reaches_every_stream_command():
    from emts.cli import build_parser
    from emts.cli.common import stage_c as _stage_c

    parser = build_parser()
    for command in (["detect", "x", "--jsonl", "-"], ["track", "x"], ["serve", "x"]):
        args = parser.parse_args([*command, "--model", "thermal"])
        assert _stage_c(args).coarse.network_size == (256, 192)  # auto: the thermal model's
        args = parser.parse_args([*command, "--model", "thermal", "--coarse-pass", "off"])
        assert _stage_c(args).coarse is None
    assert parser.parse_args(["bench", "--coarse-pass", "off"]).coarse_pass == "off"
    args = parser.parse_args(["eval", "detect", "--detector-mode", "temporal"])
    assert (args.detector_mode, args.coarse_pass) == ("temporal", "auto")


def test_track_writes_boxes_in_the_formats_trackers_are_scored_in(tmp_path, aerial_scene):
    video = _write_clip_video(tmp_path / "in.mp4", aerial_scene, 12)
    jsonl, otb, mot = tmp_path / "t.jsonl", tmp_path / "t.txt", tmp_path / "m.txt"
    base = ["track", str(video), "--lock", "160,128,24,48@2", "--jsonl", str(jsonl)]
    assert main([*base, "--boxes", str(otb)]) == 0
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    rows = otb.read_text().splitlines()
    assert len(rows) == len(records) == 12  # line i+1 is frame i, as in UAV123/OTB
    for record, row in zip(records, rows, strict=True):
        if record["mode"] == "locked":
            assert [float(v) for v in row.split(",")] == pytest.approx(record["target"]["box"])
        else:
            assert row == "NaN,NaN,NaN,NaN"
    assert rows[:2] == ["NaN,NaN,NaN,NaN"] * 2 and rows[2] != rows[0]  # locked from frame 2
    assert main([*base, "--boxes", str(mot), "--format", "mot", "--force"]) == 0
    lines = [line.split(",") for line in mot.read_text().splitlines()]
    locked = [r["frame"] for r in records if r["mode"] == "locked"]
    assert [int(line[0]) - 1 for line in lines] == locked  # MOT frames count from 1
    assert all(line[1] == "1" and line[7:] == ["-1", "-1", "-1"] for line in lines)


def test_track_never_overwrites_an_earlier_run_unasked(tmp_path, aerial_scene, capsys, monkeypatch):
    video = _write_clip_video(tmp_path / "in.mp4", aerial_scene, 4)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "track.jsonl").write_text("an earlier run\n")
    assert main(["track", str(video)]) == 2  # the default file exists
    assert "JSON lines track.jsonl exists" in capsys.readouterr().err
    assert (tmp_path / "track.jsonl").read_text() == "an earlier run\n"
    assert main(["track", str(video), "--force", "--format", "mot"]) == 2  # --format needs --boxes
    capsys.readouterr()
    assert main(["-q", "track", str(video), "--force"]) == 0
    assert capsys.readouterr().err == ""  # -q: errors only
    assert len((tmp_path / "track.jsonl").read_text().splitlines()) == 4


def test_a_lock_tap_on_nothing_warns_once_locks_nothing_and_the_run_goes_on(tmp_path, capsys):
    folder = tmp_path / "ground"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for k in range(8):  # ground with a little noise: nothing there stands out from it
        cv2.imwrite(str(folder / f"{k}.png"), (120 + rng.normal(0, 2, (512, 640))).astype(np.uint8))
    jsonl = tmp_path / "t.jsonl"
    argv = ["track", str(folder), "--jsonl", str(jsonl), "--no-verifier", "--threads", "1"]
    argv += ["--lock", "100,100@1"]
    code = "import sys; from emts.cli import main; sys.exit(main(sys.argv[1:]))"
    run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stderr.splitlines() if "no target" in line]
    assert said[0] == (
        "emts: WARNING: frame 6: no target at (100, 100): nothing detected there and nothing "
        "stands out from the ground (tapped on frame 1, tried again up to here); tap on the "
        "person or give a box X,Y,W,H"
    )
    assert said[1] == "no lock: the tap at (100, 100) on frame 1 found no target there"
    assert len(said) == 2  # the warning once, and the summary
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    # tried again on the 5 frames after the tap's (AcquisitionConfig.tap_retry_frames)
    assert [line.get("event") for line in lines] == [None] * 6 + ["no_target", None]
    assert all(line["mode"] == "search" and line["target"] is None for line in lines)
    assert main(["-q", *argv, "--force"]) == 0
    assert capsys.readouterr().err == ""  # -q: errors only
