"""The ``emts`` command: outputs of the channels job, and one-line errors with exit code 2."""

import json

import cv2
import numpy as np
import pytest

from conftest import render, similarity
from emts.cli import main
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
    assert set(records[1]) == {"frame", "M", "method", "tracks", "inlier_ratio"}
    assert records[0]["M"] == [[1, 0, 0], [0, 1, 0]] and records[0]["method"] == "identity"
    for record in records[1:]:
        assert record["method"] == "lk"
        np.testing.assert_allclose(record["M"], [[1, 0, 10.0], [0, 1, 0]], atol=0.25)
    capture = cv2.VideoCapture(str(video))
    assert int(capture.get(cv2.CAP_PROP_FRAME_COUNT)) == 4


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
    assert main(argv) == 2
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
    from emts.detector import default_model_path

    expected = set("ABCDE") if default_model_path().is_file() else {"A", "B"}
    assert set(report["stages"]) == expected
    assert report["total"]["median_ms"] > 0
    assert "total" in capsys.readouterr().out
