"""Frames read ahead and outputs written behind (emts.background), and ``emts track`` with them:
the same files as one thread writes, and a failure or an end that keeps them consistent."""

from __future__ import annotations

import json
import threading
import time

import cv2
import numpy as np
import pytest

from conftest import render, similarity
from emts.apps.track import LockRequest, _with_fronts, reading_ahead, run_track
from emts.background import InOrder, ReadAhead
from emts.pipeline import Pipeline


def _counting(count: int, produced: list[int], fail_at: int | None = None):
    for k in range(count):
        if k == fail_at:
            raise ValueError(f"item {k} is unreadable")
        produced.append(k)
        yield k


def test_read_ahead_yields_every_item_in_order_and_reads_at_most_its_depth_ahead():
    produced: list[int] = []
    reading = ReadAhead(_counting(50, produced), depth=3)
    assert next(reading) == 0
    deadline = time.monotonic() + 10
    while len(produced) < 1 + 3 and time.monotonic() < deadline:  # the thread fills the queue
        time.sleep(0.01)
    time.sleep(0.2)  # ... and then waits
    assert 1 + 3 <= len(produced) <= 1 + 3 + 1  # (one more may be read, waiting to be queued)
    assert [0, *reading] == list(range(50))
    assert not reading._thread.is_alive()


def test_read_ahead_raises_a_source_error_after_the_items_before_it():
    reading = ReadAhead(_counting(10, [], fail_at=4))
    got = []
    with pytest.raises(ValueError, match="item 4 is unreadable"):
        for item in reading:
            got.append(item)
    assert got == [0, 1, 2, 3]
    assert not reading._thread.is_alive()


def test_read_ahead_closed_early_stops_reading():
    produced: list[int] = []
    reading = ReadAhead(_counting(10_000, produced), depth=2)
    assert next(reading) == 0
    reading.close()
    assert not reading._thread.is_alive()
    stopped_at = len(produced)
    time.sleep(0.2)
    assert len(produced) == stopped_at < 10
    with pytest.raises(StopIteration):
        next(reading)


def test_in_order_runs_work_in_order_in_another_thread():
    done, threads = [], set()
    outputs = InOrder(depth=2)
    for k in range(20):
        outputs.put(lambda k=k: (done.append(k), threads.add(threading.current_thread())))
    assert outputs.close() is None
    assert done == list(range(20))
    assert threads and threading.current_thread() not in threads


def test_in_order_stops_at_the_first_failure_and_raises_it():
    done = []
    gate = threading.Event()

    def fail():
        raise OSError(28, "No space left on device")

    outputs = InOrder(depth=8)
    outputs.put(gate.wait)  # (holds the thread: everything below is queued before it runs)
    outputs.put(lambda: done.append(1))
    outputs.put(fail)
    outputs.put(lambda: done.append(2))  # after the failure: never run
    gate.set()
    error = outputs.close()
    assert isinstance(error, OSError) and done == [1]
    with pytest.raises(OSError, match="No space left"):
        outputs.put(lambda: done.append(3))
    assert outputs.close() is error and done == [1]  # (idempotent)


@pytest.fixture(scope="module")
def small_video(tmp_path_factory, aerial_scene):
    """A 320x256 video of a drifting real still with a bright walker, 60 frames."""
    path = tmp_path_factory.mktemp("bg") / "in.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (320, 256))
    for k in range(60):
        frame = render(aerial_scene, similarity(0, 0.5, -40 + 0.5 * k, -30 + 0.2 * k), (320, 256))
        frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
        cv2.rectangle(frame, (100 + k, 120), (106 + k, 138), (40, 200, 230), -1)
        writer.write(frame)
    writer.release()
    return path


def _lines(path) -> list[dict]:
    rows = []
    for text in path.read_text().splitlines():
        row = json.loads(text)
        row.pop("ms", None)  # (the time a stage took)
        rows.append(row)
    return rows


def _video(path) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            return frames
        frames.append(frame)


def test_track_writes_the_same_files_with_and_without_background_threads(small_video, tmp_path):
    written = {}
    for background in (False, True):
        out, jsonl = tmp_path / f"{background}.mp4", tmp_path / f"{background}.jsonl"
        lock = LockRequest.parse("103,129@2", "--lock")
        summary = run_track(
            str(small_video), lock, str(out), str(jsonl), Pipeline.default(auto_lock=False),
            background=background,
        )  # fmt: skip
        written[background] = (_lines(jsonl), _video(out), summary.frames)
    (lines, video, frames), (lines_bg, video_bg, frames_bg) = written[False], written[True]
    assert len(lines) == frames == 60 and any(row["mode"] == "locked" for row in lines)
    assert lines_bg == lines and frames_bg == frames
    assert len(video_bg) == len(video) == 60
    assert all(np.array_equal(a, b) for a, b in zip(video, video_bg, strict=True))


def test_a_write_that_fails_behind_ends_the_run_with_the_files_alike(
    small_video, tmp_path, monkeypatch
):
    from emts import io

    real = io.VideoWriter.write

    def full_after_ten(self, image):
        if self.frames == 10:
            raise OSError(28, "No space left on device", self.path)
        real(self, image)

    monkeypatch.setattr(io.VideoWriter, "write", full_after_ten)
    out, jsonl = tmp_path / "a.mp4", tmp_path / "a.jsonl"
    with pytest.raises(OSError, match="No space left"):
        run_track(str(small_video), LockRequest(), str(out), str(jsonl), background=True)
    assert len(_lines(jsonl)) == len(_video(out)) == 10  # every frame written, no line more


def test_a_folder_with_a_blank_first_frame_a_broken_file_and_a_new_size_gives_the_same_lines(
    tmp_path, aerial_scene
):
    # the blank first frame leaves the detector unchosen (Stages A-B then run in order in the
    # tracking thread), the broken file is skipped, the new size restarts the motion history
    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(24):
        frame = render(aerial_scene, similarity(0, 0.5, -40 + k, -30), (320, 256))
        frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
        cv2.rectangle(frame, (100 + k, 120), (106 + k, 138), (40, 200, 230), -1)
        if k == 0:
            frame[:] = 90
        if k >= 18:
            frame = cv2.resize(frame, (400, 320))
        cv2.imwrite(str(folder / f"{k:03d}.png"), frame)
    (folder / "010.png").write_bytes(b"not a png")
    written = {}
    for background in (False, True):
        jsonl = tmp_path / f"{background}.jsonl"
        run_track(
            str(folder), LockRequest.parse("103,129@3", "--lock"), None, str(jsonl),
            Pipeline.default(auto_lock=False), fps=10, background=background,
        )  # fmt: skip
        written[background] = _lines(jsonl)
    assert len(written[True]) == 24 and "skipped" in written[True][10]
    assert written[True] == written[False]


def test_stages_a_b_run_ahead_give_the_same_results_as_in_step(small_video):
    capture = cv2.VideoCapture(str(small_video))
    frames = [capture.read()[1] for _ in range(20)]
    plain, ahead = Pipeline.default(auto_lock=False), Pipeline.default(auto_lock=False)
    assert not ahead.can_run_ahead  # (--model auto: chosen on the first frame with content)
    for k, frame in enumerate(frames):
        if k == 2:
            plain.lock(103, 129)
            ahead.lock(103, 129)
        a = plain.step(frame)
        front = ahead.front_ahead(frame, first=k == 0, network=True)
        assert front.network is not None  # Stage C's networks ran ahead with A-B
        b = ahead.step(frame, front)
        assert ahead.can_run_ahead
        assert (a.mode, a.event) == (b.mode, b.event)
        assert (a.target is None) == (b.target is None)
        if a.target is not None:
            assert np.array_equal(a.target.box, b.target.box)
        assert np.array_equal(a.channels, b.channels)
        assert [(list(box), score) for box, score in a.detections] == [
            (list(box), score) for box, score in b.detections
        ]
        assert b.ms["total"] >= b.ms["A"] + b.ms["B"] + front.ms.get("C", 0.0)
        assert b.ms["C"] >= front.ms.get("C", 0.0)


def test_stage_c_networks_stay_in_step_when_not_run_ahead(small_video):
    capture = cv2.VideoCapture(str(small_video))
    frames = [capture.read()[1] for _ in range(6)]
    ahead = Pipeline.default(auto_lock=False)  # (network_ahead False: the default)
    for k, frame in enumerate(frames):
        front = ahead.front_ahead(frame, first=k == 0)
        assert front.network is None and "C" not in front.ms
        ahead.step(frame, front)
    ahead.network_ahead = True
    assert ahead.front_ahead(frames[0]).network is not None
    assert ahead.front_ahead(frames[1], network=False).network is None


def test_emts_track_runs_the_networks_ahead_while_frames_wait_for_stages_c_to_e(small_video):
    capture = cv2.VideoCapture(str(small_video))
    frames = [capture.read()[1] for _ in range(12)]
    pipeline = Pipeline.default(auto_lock=False)
    waiting = iter([0, 0, 3, 1, 0, 2] * 2)
    fronts = [f for _, f in _with_fronts(iter(frames), pipeline, lambda: next(waiting))]
    assert [f.network is not None for f in fronts] == [False, False, True, False, False, True] * 2
    # where emts track encodes a video behind (the cores busy), A-B alone run ahead
    pipeline.network_ahead = False
    alone = [f for _, f in reading_ahead(iter(frames), pipeline, networks=False)]
    assert len(alone) == 12 and all(f.network is None for f in alone)
