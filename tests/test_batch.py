"""``emts batch track`` (issue 57): many flights as Ray tasks, one local Ray instance (2 CPUs)
shared by the file's tests; tiny synthetic videos written by cv2.VideoWriter, one corrupt."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

import emts
from emts.apps.batch import SUMMARY_SUFFIX, Flight, done_summary, find_flights, flight_names
from emts.cli import main
from emts.errors import BadInputError

FRAMES = {"alpha": 24, "bravo": 16}  # the readable flights and their frame counts


def _write_video(path, count: int, seed: int, size=(160, 128)) -> None:
    """A textured ground drifting under the camera with a dark walker crossing it."""
    rng = np.random.default_rng(seed)
    ground = cv2.GaussianBlur(rng.integers(0, 255, (200, 260), np.uint8), (0, 0), 3)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, size)
    for k in range(count):
        frame = ground[k // 2 : k // 2 + size[1], k : k + size[0]].copy()
        cv2.rectangle(frame, (40 + 2 * k, 50), (47 + 2 * k, 70), 30, -1)
        writer.write(cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))
    writer.release()


@pytest.fixture(scope="module")
def flights_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flights")
    for seed, (name, count) in enumerate(FRAMES.items()):
        _write_video(folder / f"{name}.mp4", count, seed)
    (folder / "charlie.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video at all" * 20)
    (folder / "notes.txt").write_text("not a flight\n")
    return folder


def _batch(capsys, *argv: str) -> tuple[int, str]:
    code = main(["batch", "track", *argv])
    return code, capsys.readouterr().err


def _table(out) -> dict[str, dict]:
    return {row["flight"]: row for row in json.loads((out / "batch.json").read_text())["flights"]}


def _lines(path) -> int:
    return len(path.read_text().splitlines())


def _mtimes(out, names=tuple(FRAMES)) -> dict[str, int]:
    files = [out / f"{n}{suffix}" for n in names for suffix in (".jsonl", SUMMARY_SUFFIX)]
    return {f.name: f.stat().st_mtime_ns for f in files}


@pytest.fixture(scope="module")
def first_run(ray_session, flights_folder, tmp_path_factory):
    """The batch once, over the folder: (its out folder, exit code)."""
    out = tmp_path_factory.mktemp("first") / "results"
    code = main(["batch", "track", str(flights_folder), "--out", str(out), "--workers", "2"])
    return out, code


def _copy(first_run, tmp_path):
    """A copy of the first run's results (mtimes kept, then set an hour back)."""
    out = shutil.copytree(first_run[0], tmp_path / "results", copy_function=shutil.copy2)
    for path in out.iterdir():
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 3600 * 10**9))
    return out


def test_a_batch_tracks_every_flight_and_reports_the_corrupt_one(first_run, flights_folder):
    out, code = first_run
    assert code == 1  # one flight failed, after the others were finished
    table = _table(out)
    assert list(table) == ["alpha", "bravo", "charlie"]  # the folder's videos, in name order
    assert table["charlie"]["status"] == "failed"
    assert "not a readable video" in table["charlie"]["reason"]
    assert "\n" not in table["charlie"]["reason"]
    for name, count in FRAMES.items():
        row = table[name]
        assert row["status"] == "ok", row
        summary = json.loads((out / f"{name}{SUMMARY_SUFFIX}").read_text())
        assert summary == row
        assert summary["source"] == str(flights_folder / f"{name}.mp4")
        lines = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
        assert len(lines) == count == row["lines"] == row["frames"] + row["skipped_frames"]
        assert [line["frame"] for line in lines] == list(range(count))  # emts track's lines
        assert {"mode", "target", "ms"} <= set(lines[0])
        locked = sum(line["mode"] == "locked" for line in lines)
        assert row["lock_fraction"] == round(locked / count, 4)
        events = [line.get("event") for line in lines]
        assert row["lost_events"] == events.count("lost")
        assert row["relock_events"] == events.count("relock")
        assert row["ms_per_frame"] > 0
    markdown = (out / "batch.md").read_text()
    assert "3 flights: 2 ok, 1 failed, 0 skipped" in markdown
    assert "| charlie | failed |" in markdown and "| alpha | ok | 24 |" in markdown


def test_progress_says_what_the_folder_held_and_one_line_per_flight(
    ray_session, flights_folder, tmp_path, capsys
):
    out = tmp_path / "results"
    code, err = _batch(capsys, str(flights_folder / "alpha.mp4"), "--out", str(out))
    assert code == 0
    assert "[1/1] alpha: ok, 24 frames" in err
    assert "1 flight to track" in err and "1 flight: 1 ok, 0 failed, 0 skipped" in err
    code, err = _batch(capsys, str(flights_folder), "--out", str(out), "--workers", "1")
    assert code == 1
    assert "3 videos (alpha.mp4, bravo.mp4, charlie.mp4)" in err
    assert "1 of 3 flights done earlier, skipped (alpha)" in err
    assert "1 at a time" in err
    assert sum(line.startswith("[") for line in err.splitlines()) == 2  # bravo, charlie
    code, err = _batch(capsys, "-q", str(flights_folder), "--out", str(out))
    assert code == 1 and err == ""


def test_a_batch_run_again_skips_what_is_done_and_rewrites_nothing(
    first_run, flights_folder, tmp_path, capsys
):
    out = _copy(first_run, tmp_path)
    before = _mtimes(out)
    code, err = _batch(capsys, str(flights_folder), "--out", str(out))
    assert code == 1  # the corrupt flight is tried again, and fails again
    assert _mtimes(out) == before
    table = _table(out)
    assert {n: table[n]["status"] for n in table} == {
        "alpha": "skipped",
        "bravo": "skipped",
        "charlie": "failed",
    }
    assert table["alpha"]["frames"] == FRAMES["alpha"]  # the figures of the run that made them
    assert "done earlier" in table["alpha"]["reason"]
    assert "2 of 3 flights done earlier, skipped (alpha, bravo)" in err


def test_a_half_written_flight_is_redone(first_run, flights_folder, tmp_path, capsys):
    out = _copy(first_run, tmp_path)
    # alpha: killed mid-run (half its lines, no summary); bravo: its lines cut short
    (out / f"alpha{SUMMARY_SUFFIX}").unlink()
    lines = (out / "alpha.jsonl").read_text().splitlines(keepends=True)
    (out / "alpha.jsonl").write_text("".join(lines[:10]) + lines[10][:20])
    bravo = (out / "bravo.jsonl").read_text().splitlines(keepends=True)
    (out / "bravo.jsonl").write_text("".join(bravo[:-1]))
    videos = [str(flights_folder / f"{name}.mp4") for name in FRAMES]
    code, _ = _batch(capsys, *videos, "--out", str(out))
    assert code == 0
    table = _table(out)
    for name, count in FRAMES.items():
        assert table[name]["status"] == "ok"
        assert _lines(out / f"{name}.jsonl") == count == table[name]["lines"]
        assert done_summary(Flight(name, str(flights_folder / f"{name}.mp4")), out)


def test_force_redoes_every_flight(first_run, flights_folder, tmp_path, capsys):
    out = _copy(first_run, tmp_path)
    before = _mtimes(out)
    code, _ = _batch(capsys, str(flights_folder), "--out", str(out), "--force")
    assert code == 1
    after = _mtimes(out)
    assert all(after[name] > before[name] for name in before)
    table = _table(out)
    assert [table[n]["status"] for n in table] == ["ok", "ok", "failed"]
    assert all(_lines(out / f"{n}.jsonl") == count for n, count in FRAMES.items())


def test_a_summary_of_another_source_is_not_overwritten(
    first_run, flights_folder, tmp_path, capsys
):
    out = _copy(first_run, tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(flights_folder / "alpha.mp4", other / "alpha.mp4")
    before = _mtimes(out)
    code, err = _batch(capsys, str(other / "alpha.mp4"), "--out", str(out))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "--force" in err
    assert _mtimes(out) == before


def test_without_ray_the_command_says_which_extra_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    code, err = _batch(capsys, str(tmp_path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "pip install 'emts[distributed]'" in err
    assert not (tmp_path / "out").exists()


def test_folders_expand_to_their_videos_or_to_one_image_sequence(tmp_path):
    videos = tmp_path / "day1"
    videos.mkdir()
    for name in ("b.MP4", "a.avi", "._a.avi", "cover.jpg", "log.txt"):
        (videos / name).write_bytes(b"x")
    frames = tmp_path / "frames"
    frames.mkdir()
    for k in range(3):
        (frames / f"{k:04d}.jpg").write_bytes(b"x")
    flights, notes = find_flights([str(videos), str(frames), str(videos / "a.avi")])
    assert [(f.name, os.path.basename(f.source)) for f in flights] == [
        ("a", "a.avi"),
        ("b", "b.MP4"),
        ("frames", "frames"),
    ]
    assert all(os.path.isabs(f.source) for f in flights)
    assert notes[0].endswith("2 videos (a.avi, b.MP4); 1 images beside them left out")
    assert "no video, 3 images: one flight" in notes[1]
    empty = tmp_path / "empty"
    empty.mkdir()
    for bad in (empty, tmp_path / "missing.mp4"):
        with pytest.raises(BadInputError):
            find_flights([str(bad)])


def test_flights_that_share_a_stem_get_names_of_their_own(tmp_path):
    paths = [
        tmp_path / "day1" / "flight.mp4",
        tmp_path / "day2" / "flight.mp4",
        tmp_path / "day2" / "flight.avi",
        tmp_path / "day2" / "solo.mp4",
    ]
    names = flight_names(paths)
    assert names[0] == "day1-flight" and names[3] == "solo"
    assert names[1].startswith("day2-flight-") and names[2].startswith("day2-flight-")
    assert len(set(names)) == 4
    assert flight_names(paths) == names  # the same on every run


def test_sigterm_ends_a_batch_like_ctrl_c_with_the_table_written(ray_session, tmp_path):
    """In a process of its own (its own local Ray instance): Ray's handler would abort it."""
    folder = tmp_path / "long"
    folder.mkdir()
    for seed in range(2):
        _write_video(folder / f"long{seed}.mp4", 200, seed, size=(96, 80))
    out = tmp_path / "results"
    source = str(Path(emts.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "emts.cli", "batch", "track", str(folder), "--out", str(out)]
    run = subprocess.Popen([*argv, "--workers", "1"], stderr=subprocess.PIPE, text=True, env=env)
    said = []
    for line in run.stderr:  # the flights are submitted right after this line
        said.append(line)
        if "to track on" in line:
            run.send_signal(signal.SIGTERM)
            break
    said += run.stderr.readlines()
    assert run.wait(timeout=60) == 143, said
    assert "interrupted (SIGTERM)" in said[-1]
    table = _table(out)
    assert "interrupted" in {row["status"] for row in table.values()}
    assert {row["status"] for row in table.values()} <= {"ok", "interrupted"}


def test_more_threads_than_a_node_has_cpus_still_runs(
    ray_session, flights_folder, tmp_path, capsys
):
    out = tmp_path / "results"
    code, err = _batch(
        capsys, str(flights_folder / "bravo.mp4"), "--out", str(out), "--threads", "3"
    )
    assert code == 0, err  # each task asks Ray for the node's 2 CPUs, not 3 it would wait for
    assert "2 CPUs, 1 at a time" in err
    assert _table(out)["bravo"]["status"] == "ok"


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "x"], []])
def test_bad_arguments_are_one_line_and_exit_2(argv, tmp_path, capsys):
    if argv:
        argv = [str(tmp_path), "--out", str(tmp_path / "out"), *argv]
    with pytest.raises(SystemExit) as stop:
        main(["batch", "track", *argv])
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
