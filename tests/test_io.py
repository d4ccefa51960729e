"""Frame sources and writers: what a path means, frame rates, unreadable images, one video
size, bounded summaries, and onnxruntime staying silent on disk."""

import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from emts.apps.draw import timeline
from emts.apps.track import TrackSummary
from emts.errors import BadInputError
from emts.io import (
    DEFAULT_FPS,
    ImageSequenceSource,
    UnreadableFrame,
    VideoWriter,
    open_source,
)
from emts.stats import RESERVOIR_SIZE, DecimatedHistory, Reservoir


def _write_images(folder: Path, count: int = 3, size=(64, 48)) -> Path:
    folder.mkdir(parents=True)
    for k in range(count):
        cv2.imwrite(str(folder / f"f{k:02d}.png"), np.full((size[1], size[0]), 40 * k, np.uint8))
    return folder


def _write_video(path: Path, count: int, fps: float, size=(64, 48)) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
    for k in range(count):
        writer.write(np.full((size[1], size[0], 3), 20 * k, np.uint8))
    writer.release()
    return path


def _count_frames(path: Path) -> tuple[int, tuple[int, int]]:
    capture = cv2.VideoCapture(str(path))
    count, size = 0, None
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        count += 1
        size = (frame.shape[1], frame.shape[0])
    capture.release()
    return count, size


def test_a_folder_named_like_a_camera_index_is_read_as_the_folder(tmp_path, monkeypatch):
    _write_images(tmp_path / "2024")
    monkeypatch.chdir(tmp_path)
    with open_source("2024") as source:
        assert isinstance(source, ImageSequenceSource) and source.description == "folder 2024"
        assert len(list(source)) == 3


def test_camera_prefix_names_a_camera_explicitly(tmp_path, monkeypatch):
    _write_images(tmp_path / "97")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInputError, match="camera 97"):  # not the folder "97"
        open_source("camera:97")
    with pytest.raises(BadInputError, match="camera:N"):
        open_source("camera:front")


def test_image_folders_take_the_given_frame_rate_and_default_to_30(tmp_path):
    folder = _write_images(tmp_path / "frames")
    assert open_source(folder).fps == DEFAULT_FPS == 30.0
    assert open_source(folder, fps=12.5).fps == 12.5


@pytest.mark.parametrize("fps", [0, -5, float("nan"), float("inf"), "fast"])
def test_a_frame_rate_that_is_not_a_positive_number_is_refused(tmp_path, fps):
    folder = _write_images(tmp_path / "frames")
    with pytest.raises(BadInputError, match="fps"):
        open_source(folder, fps=fps)


def test_a_video_keeps_its_own_frame_rate_unless_one_is_given(tmp_path):
    video = _write_video(tmp_path / "clip.mp4", 4, fps=12)
    with open_source(video) as source:
        assert source.fps == pytest.approx(12)
    with open_source(video, fps=25) as source:
        assert source.fps == 25


def test_an_unreadable_image_keeps_its_place_as_a_placeholder(tmp_path):
    folder = _write_images(tmp_path / "frames", count=3)
    (folder / "f01.png").write_bytes(b"not a png")
    frames = list(open_source(folder, placeholders=True))
    assert [type(f) for f in frames] == [np.ndarray, UnreadableFrame, np.ndarray]
    assert "f01.png" in frames[1].reason
    assert len(list(open_source(folder))) == 2  # the API's default: skipped with a warning


def test_the_video_keeps_its_first_size_and_letterboxes_other_sizes_once_warned(tmp_path, caplog):
    path = tmp_path / "out.mp4"
    with caplog.at_level(logging.WARNING, logger="emts"), VideoWriter(path) as writer:
        for _ in range(2):
            writer.write(np.full((480, 640, 3), 90, np.uint8))
        for _ in range(3):
            writer.write(np.full((300, 300, 3), 255, np.uint8))  # square: bars left and right
        writer.write(np.full((480, 640), 90, np.uint8))  # gray
    assert _count_frames(path) == (6, (640, 480))
    assert writer.letterboxed == 3
    warnings = [r for r in caplog.records if "letterboxed" in r.getMessage()]
    assert len(warnings) == 1 and "640x480" in warnings[0].getMessage()
    capture = cv2.VideoCapture(str(path))
    for _ in range(3):
        capture.read()
    _, boxed = capture.read()
    assert boxed[:, :60].mean() < 20 and boxed[:, 120:520].mean() > 230  # bars, then content


def test_reservoir_is_bounded_exact_for_short_streams_and_unbiased_for_long_ones():
    short = Reservoir(capacity=100)
    values = np.random.default_rng(0).normal(size=80)
    for v in values:
        short.add(v)
    assert short.quantile(0.5) == pytest.approx(np.median(values))
    assert short.quantile(0.9) == pytest.approx(np.quantile(values, 0.9))
    long = Reservoir(capacity=500)
    for v in range(100_000):
        long.add(v)
    assert len(long) == 500 and long.count == 100_000
    assert long.quantile(0.5) == pytest.approx(50_000, rel=0.1)
    assert long.quantile(0.9) == pytest.approx(90_000, rel=0.05)


def test_decimated_history_stays_bounded_and_evenly_spread():
    history = DecimatedHistory(capacity=100)
    for frame in range(10_000):
        history.add(frame)
    assert 50 <= len(history) <= 100
    gaps = np.diff(history.records)
    assert (gaps == history.stride).all() and history.records[0] == 0
    assert history.records[-1] > 10_000 - 2 * history.stride  # covers the whole run


def test_track_summary_memory_does_not_grow_with_the_stream():
    summary = TrackSummary()
    for k in range(RESERVOIR_SIZE * 3):
        ms = {s: 1.0 + (k % 10) for s in ("A", "B", "C", "D", "E", "total")}
        summary.add(SimpleNamespace(mode="locked", ms=ms))
    assert summary.frames == RESERVOIR_SIZE * 3
    assert all(len(r.values) == RESERVOIR_SIZE for r in summary.ms.values())
    assert 4.0 <= summary.latency_ms()["total"] <= 7.0
    assert "12288 frames" in summary.text()


def test_timeline_reports_whether_it_was_written(tmp_path):
    records = [{"mode": "search", "target": None}, {"mode": "locked", "target": {"p_human": 1}}]
    assert timeline(records, tmp_path / "t.png") and (tmp_path / "t.png").is_file()
    assert not timeline(records, tmp_path / "t.txt")  # no writer for the suffix
    assert not timeline(records, tmp_path / "missing" / "t.png")


def test_importing_emts_keeps_onnxruntime_telemetry_off_disk(tmp_path):
    env = {
        k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")
    }
    env["HOME"] = str(tmp_path)
    code = "from emts.stages.c_detect.detector import Detector; Detector()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*")]
    assert written == [], written


def test_an_iterable_of_arrays_takes_the_given_frame_rate():
    frames = [np.zeros((8, 8), np.uint8)] * 3
    assert open_source(frames).fps == 30
    assert open_source(frames, fps=10).fps == 10


def test_a_signal_during_a_held_block_is_handled_after_it():
    import os
    import signal
    import threading

    from emts.io import signals_held

    handled = []
    previous = signal.signal(signal.SIGTERM, lambda n, _frame: handled.append(n))
    try:
        with signals_held():
            # sent from another thread, as the kernel may deliver it to any thread
            sender = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGTERM))
            sender.start()
            sender.join()
            for _ in range(10_000):  # bytecodes at which Python would run a handler
                pass
            assert handled == []
        assert handled == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is not None
    finally:
        signal.signal(signal.SIGTERM, previous)
