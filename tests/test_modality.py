"""--model auto: the shipped detector picked from the input's frames (emts.modality)."""

from __future__ import annotations

import logging

import cv2
import numpy as np
import pytest

from emts.errors import BadInputError
from emts.modality import COLOUR, NO_COLOUR, frame_modality
from emts.pipeline import Pipeline
from emts.precision import shipped_model
from emts.synth.still_clip import load_demo_still


def _gray_frame() -> np.ndarray:
    """A real thermal aerial still (HIT-UAV) at 640x512."""
    return cv2.resize(load_demo_still()[0], (640, 512))


def _colour_frame() -> np.ndarray:
    """A textured BGR frame with colour: the still tinted in two halves."""
    gray = _gray_frame()
    frame = cv2.cvtColor(gray, cv2.COLOR_GRAY2BGR).astype(np.int16)
    frame[:, :320] += (0, 20, -20)  # greenish lawn
    frame[:, 320:] += (-15, 0, 25)  # warm paving
    return np.clip(frame, 0, 255).astype(np.uint8)


def _codec_gray(gray: np.ndarray) -> np.ndarray:
    """Gray content as a decoded video gives it: three channels a few levels apart."""
    frame = cv2.cvtColor(gray, cv2.COLOR_GRAY2BGR).astype(np.int16)
    frame += (0, 3, 1)
    return np.clip(frame, 0, 255).astype(np.uint8)


def test_colour_and_colourless_frames_are_told_apart():
    gray = _gray_frame()
    assert frame_modality(_colour_frame()) == COLOUR
    assert frame_modality(cv2.cvtColor(_colour_frame(), cv2.COLOR_BGR2BGRA)) == COLOUR
    assert frame_modality(gray) == NO_COLOUR
    assert frame_modality(gray[:, :, None]) == NO_COLOUR
    assert frame_modality(_codec_gray(gray)) == NO_COLOUR
    assert frame_modality(gray.astype(np.uint16) * 200 + 5000) == NO_COLOUR  # radiometric
    # a uniform frame (black leader, lens cap) decides nothing, in colour or not
    assert frame_modality(np.zeros((512, 640, 3), np.uint8)) is None
    assert frame_modality(np.full((512, 640, 3), (40, 90, 30), np.uint8)) is None
    with pytest.raises(BadInputError):
        frame_modality(np.zeros((4, 4, 2), np.uint8))


def test_auto_runs_the_thermal_model_on_frames_without_colour():
    thermal = shipped_model("detector", "fp32", variant="thermal")
    pipeline = Pipeline.default(threads=1)
    result = pipeline.step(_codec_gray(_gray_frame()))
    assert pipeline.chosen_model == "thermal"
    assert pipeline.detector.path == thermal
    assert result.channels.shape == (3, 384, 512)  # the thermal model's run size
    # after reset() the next stream is looked at again: a colour camera
    pipeline.reset()
    assert pipeline.chosen_model is None
    result = pipeline.step(_colour_frame())
    assert pipeline.chosen_model == "default"
    assert pipeline.detector.path == shipped_model("detector", "fp32")
    assert result.channels.shape == (3, 192, 256)


def test_a_colourless_stream_in_three_channels_is_looked_at_in_gray():
    """Gray or thermal video decoded as BGR: the tracker's appearance view is the gray working
    frame, as for gray input (the codec's chroma noise is no person's colours); a colour
    stream keeps its frames; the stream is looked at again after a reset."""
    pipeline = Pipeline.default(model="thermal", auto_lock=False, threads=1)
    seen = []
    step = pipeline.tracker.update

    def update(*args, view=None, **kwargs):
        seen.append(view)
        return step(*args, view=view, **kwargs)

    pipeline.tracker.update = update
    pipeline.step(_codec_gray(_gray_frame()))
    assert seen[-1].image.ndim == 2 and seen[-1].image.shape == (512, 640)
    pipeline.reset()
    colour = _colour_frame()
    pipeline.step(colour)
    assert seen[-1].image is colour


def test_auto_waits_for_a_frame_with_content_and_keeps_the_motion_history():
    pipeline = Pipeline.default(threads=1)
    first = pipeline.step(np.zeros((512, 640, 3), np.uint8))  # black leader
    assert pipeline.chosen_model is None and first.detections == []
    assert first.channels.shape == (3, 192, 256)
    frames = [_colour_frame(), np.roll(_colour_frame(), 3, axis=1)]
    results = [pipeline.step(f) for f in frames]
    assert pipeline.chosen_model == "default"
    assert [r.index for r in results] == [1, 2]
    # the camera's 3 px shift is measured on the first frame after the choice's
    assert results[1].ego_motion.matrix[0, 2] == pytest.approx(3.0, abs=0.3)


def test_auto_runs_the_thermal_model_in_fp32_where_its_int8_is_not_shipped(caplog, monkeypatch):
    from emts import precision

    shipped = precision.shipped_model
    assert shipped("detector", "int8", variant="thermal").is_file()  # it ships for onnxruntime

    def without_thermal_int8(kind, precision="fp32", backend="onnxruntime", variant=""):
        path = shipped(kind, precision, backend, variant)
        return path.with_name("none.onnx") if (variant, precision) == ("thermal", "int8") else path

    monkeypatch.setattr(precision, "shipped_model", without_thermal_int8)
    pipeline = Pipeline.default(threads=1, precision="int8")
    with caplog.at_level(logging.WARNING, logger="emts"):
        pipeline.step(_gray_frame())
    assert pipeline.detector.path == shipped("detector", "fp32", variant="thermal")
    assert any("fp32" in r.getMessage() for r in caplog.records)
    # asked for by name, the missing file stays an error that says how to make it
    with pytest.raises(BadInputError, match="emts quantize detector --model thermal"):
        Pipeline.default(threads=1, precision="int8", model="thermal")


def test_the_explicit_models_are_kept_whatever_the_frames():
    pipeline = Pipeline.default(threads=1, model="default")
    pipeline.step(_gray_frame())
    assert pipeline.chosen_model is None
    assert pipeline.detector.path == shipped_model("detector", "fp32")
    with pytest.raises(BadInputError, match="expected one of auto, default, thermal"):
        Pipeline.default(threads=1, model="rgb")


def test_the_command_line_model_names(tmp_path, monkeypatch):
    from emts.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["track", "c.mp4"]).model == "auto"
    assert parse(["detect", "c.mp4", "--jsonl", "o", "--model", "default"]).model is None
    assert parse(["serve", "c.mp4", "--model", "thermal"]).model.endswith("detector.thermal.onnx")
    assert parse(["bench"]).model is None  # the synthetic bench times the default model
    monkeypatch.chdir(tmp_path)
    (tmp_path / "auto").write_bytes(b"")  # a file of that name here is what the user means
    assert parse(["track", "c.mp4", "--model", "auto"]).model == "auto"
    assert parse(["track", "c.mp4"]).model == "auto"


def test_the_real_suite_runs_what_auto_picks_for_each_set(tmp_path):
    from emts.eval.real import auto_detector

    cv2.imwrite(str(tmp_path / "thermal.png"), _gray_frame())
    cv2.imwrite(str(tmp_path / "rgb.png"), _colour_frame())
    variant, detector = auto_detector(tmp_path / "thermal.png")
    assert variant == "thermal" and detector.network_size == (512, 384)
    variant, detector = auto_detector(tmp_path / "rgb.png")
    assert variant == "default" and detector.network_size == (256, 192)
    with pytest.raises(BadInputError, match="missing or unreadable"):
        auto_detector(tmp_path / "none.png")


@pytest.mark.parametrize("colour", [False, True], ids=["thermal video", "colour video"])
def test_emts_track_says_which_detector_it_picked(tmp_path, capsys, colour):
    import json

    from emts.cli import main

    base = _colour_frame() if colour else cv2.cvtColor(_gray_frame(), cv2.COLOR_GRAY2BGR)
    video = tmp_path / "in.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (640, 512))
    writer.write(np.zeros_like(base))  # a black first frame decides nothing
    for shift in range(4):
        writer.write(np.roll(base, 2 * shift, axis=1))
    writer.release()
    out = tmp_path / "track.jsonl"
    assert main(["track", str(video), "--jsonl", str(out), "--threads", "1"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    picked = "default" if colour else "thermal"
    assert "detector" not in lines[0]  # the black frame
    assert lines[1]["detector"] == picked
    assert all("detector" not in line for line in lines[2:])
    assert f"detector: {picked}" in capsys.readouterr().err


def test_emts_detect_says_which_detector_it_picked(tmp_path):
    import json

    from emts.cli import main

    folder = tmp_path / "frames"
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f"{i:03d}.png"), np.roll(_gray_frame(), 2 * i, axis=1))
    out = tmp_path / "d.jsonl"
    assert main(["detect", str(folder), "--jsonl", str(out), "--threads", "1"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line.get("detector") for line in lines] == ["thermal", None, None]
