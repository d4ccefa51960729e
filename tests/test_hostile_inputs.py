"""Hostile inputs (docs/reviews of 2026-12, classes A-K): every one ends in one clear line and
a defined exit code -- never a traceback, never silently wrong output, never an input
overwritten -- and what a run computed before it stopped is kept. One test per class, each
case a command line."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from emts.cli import main
from emts.precision import shipped_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from damaged_media import (  # noqa: E402 (shared with hostile_pass)
    atoms,
    faststart,
    noise_video,
    walking_block_video,
)


def _video(path: Path, frames: int = 8, size=(320, 256)) -> Path:
    """A small mp4 of a bright block walking over a textured background."""
    return walking_block_video(path, frames, size)


def _emts(command: str) -> int:
    """The exit code of ``emts COMMAND`` run in this process."""
    return _emts_argv(command.split())


def _emts_argv(argv: list[str]) -> int:
    """The exit code of ``emts`` with ``argv`` run in this process (argparse's errors exit)."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _one_line_error(capture) -> str:
    """The run's stderr (``capsys``, or ``capfd`` for OpenCV's own lines), checked to be one
    ``emts: error:`` line (progress bars aside)."""
    err = capture.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("emts:")]
    assert "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("emts: error:"), err
    return lines[0]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """tmp_path as the current folder, with in.mp4, detector copies m.onnx and m2.onnx and a
    verifier copy v.onnx."""
    monkeypatch.chdir(tmp_path)
    _video(tmp_path / "in.mp4")
    for name, kind in (("m.onnx", "detector"), ("m2.onnx", "detector"), ("v.onnx", "verifier")):
        shutil.copy(shipped_model(kind, "fp32"), tmp_path / name)
    return tmp_path


# -- A: an output that names a model the run reads --------------------------------------------

TRAIN = pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None, reason="needs the train extra"
)


@pytest.mark.parametrize(
    "command",
    [
        "track in.mp4 --model m.onnx --jsonl m.onnx",
        "track in.mp4 --verifier v.onnx --jsonl v.onnx",
        "track in.mp4 --model m.mp4 --out m.mp4",  # a model by any name
        "track in.mp4 --jsonl x.jsonl --model m.png --timeline m.png",
        "track in.mp4 --jsonl link.onnx --model m.onnx",  # a hard link to the model
        "track in.mp4 --jsonl shipped.onnx",  # a shipped model (auto reads them)
        "detect in.mp4 --model m.onnx --jsonl m.onnx",
        "channels in.mp4 --model m.onnx --no-video --jsonl m.onnx",
        "bench --frames 2 --warmup 0 --model m.onnx --json m.onnx",
        "bench --frames 2 --warmup 0 --peer-yolo m.onnx --json m.onnx",
        pytest.param("quantize detector --out m.onnx --model m.onnx", marks=TRAIN),
        pytest.param("quantize detector --out m.onnx --model m.json", marks=TRAIN),
        pytest.param("ensemble m.onnx m2.onnx --out m2.onnx", marks=TRAIN),
        pytest.param("export m.onnx --out m.onnx --any-size", marks=TRAIN),
    ],
)
def test_a_an_output_naming_a_model_the_run_reads_is_refused(workdir, capsys, monkeypatch, command):
    # the shipped models as a copy: a failing test must not overwrite the package's own
    monkeypatch.setattr("emts.precision.shipped_files", lambda: [workdir / "shipped.onnx"])
    for name in ("m.json", "m.mp4", "m.png", "shipped.onnx"):  # a model by any other name
        shutil.copy(workdir / "m.onnx", workdir / name)
    (workdir / "link.onnx").hardlink_to(workdir / "m.onnx")
    before = {p: _md5(p) for p in workdir.iterdir() if p.suffix != ".mp4" or p.stem == "m"}
    assert _emts(command) == 2
    assert "choose another file" in _one_line_error(capsys)
    assert {p: _md5(p) for p in before} == before


# -- B: a network size Stages B and C cannot run at ------------------------------------------


def _with_run_size(source: Path, path: Path, size: str) -> Path:
    """A copy of the detector ``source`` that records ``size`` as its run size."""
    onnx = pytest.importorskip("onnx")
    model = onnx.load(str(source))
    entry = model.metadata_props.add()
    entry.key, entry.value = "emts_run_size", size
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(
    "command",
    [
        "bench --frames 2 --warmup 0 --network-size 0x0",
        "bench --frames 2 --warmup 0 --network-size=-8x-8",
        "track in.mp4 --network-size 0x0 --jsonl x.jsonl",
        "track in.mp4 --network-size 640x0 --jsonl x.jsonl",
        "track in.mp4 --detector-mode fused --network-size 0x0 --jsonl x.jsonl",
        "track in.mp4 --network-size 2048x1024 --jsonl x.jsonl",  # larger than 640x512
        "track in.mp4 --network-size 256x512 --jsonl x.jsonl",  # narrower than 5:4
        "track in.mp4 --network-size 40x32 --jsonl x.jsonl",  # 5x4 cells: an odd number
        "track in.mp4 --network-size 640x504 --jsonl x.jsonl",
        "detect in.mp4 --network-size 24x16 --jsonl x.jsonl",
        "serve in.mp4 --network-size 0x0 --port 0",
        "export m.onnx --out x.onnx --any-size --run-size 0x0",
        "export m.onnx --out x.onnx --any-size --fit-box-scale 24x16",
        "track in.mp4 --model rs0.onnx --jsonl x.jsonl",  # recorded run sizes
        "detect in.mp4 --model rs40.onnx --jsonl x.jsonl",
        "channels in.mp4 --model rs0.onnx --no-video --jsonl x.jsonl",
        "bench --frames 2 --warmup 0 --model rs0.onnx",
        "serve in.mp4 --model rs40.onnx --port 0",
        pytest.param("quantize detector --model rs0.onnx --out q.onnx", marks=TRAIN),
    ],
)
def test_b_an_unusable_network_size_is_refused_before_any_frame(workdir, capsys, command):
    _with_run_size(workdir / "m.onnx", workdir / "rs0.onnx", "0x0")
    _with_run_size(workdir / "m.onnx", workdir / "rs40.onnx", "40x32")
    assert _emts(command) == 2
    assert "multiples of 16, at least 5:4 wide, at most 640x496" in _one_line_error(capsys)
    assert not (workdir / "x.jsonl").exists()


# -- F: a --lock tap outside the frame -------------------------------------------------------


@pytest.mark.parametrize(
    ("lock", "kept"),
    [
        ("100000,100000", 0),
        ("-5,-5", 0),
        ("320,10", 0),  # one past the last pixel centre of a 320 px wide frame
        ("10,-0.6@2", 2),
        ("400,10,20,20", 0),  # a box centred outside
        ("-40,-40,20,20@3", 3),
    ],
)
def test_f_a_tap_outside_the_frame_is_refused_on_its_frame(workdir, capsys, lock, kept):
    code = _emts(f"track in.mp4 --lock={lock} --jsonl t.jsonl --out t.mp4 --no-verifier")
    assert code == 2
    assert "is outside frame" in _one_line_error(capsys)
    assert len((workdir / "t.jsonl").read_text().splitlines()) == kept  # lines so far kept


@pytest.mark.parametrize("lock", ["319.5,255.5", "-0.5,-0.5", "300,230,40,40"])
def test_f_a_tap_on_the_frame_is_accepted(workdir, lock):
    assert _emts(f"track in.mp4 --lock={lock} --jsonl t.jsonl --no-verifier") == 0


# -- G: a damaged video, a source of no usable frame ------------------------------------------


@pytest.fixture
def damaged(tmp_path, monkeypatch):
    """tmp_path as the current folder with whole.mp4 (40 frames, index first), cut.mp4 (its
    first half) and garbage.mp4 (OpenCV's own, a quarter of its frame data zeroed)."""
    monkeypatch.chdir(tmp_path)
    data = noise_video(tmp_path / "garbage.mp4")
    whole = faststart(data)
    (tmp_path / "whole.mp4").write_bytes(whole)
    (tmp_path / "cut.mp4").write_bytes(whole[: len(whole) // 2])
    mdat_at, mdat_size = next((o, s) for k, o, s in atoms(data) if k == "mdat")
    start = mdat_at + mdat_size // 3
    zeroed = data[:start] + bytes(mdat_size // 4) + data[start + mdat_size // 4 :]
    (tmp_path / "garbage.mp4").write_bytes(zeroed)
    (tmp_path / "zero.jpg").write_bytes(b"")
    cv2.imwrite(str(tmp_path / "one.png"), np.zeros((1, 1), np.uint8))
    cv2.imwrite(str(tmp_path / "tiny.png"), np.zeros((7, 9), np.uint8))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.jpg").write_bytes(b"")
    cv2.imwrite(str(tmp_path / "bad" / "b.png"), np.zeros((1, 1), np.uint8))
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        "track cut.mp4 --jsonl g.jsonl --no-verifier",
        "track garbage.mp4 --jsonl g.jsonl --out g.mp4 --no-verifier",
        "detect cut.mp4 --jsonl g.jsonl",
        "channels garbage.mp4 --jsonl g.jsonl --no-video",
        "track zero.jpg --jsonl g.jsonl",
        "track one.png --jsonl g.jsonl",
        "track tiny.png --jsonl g.jsonl",
        "detect zero.jpg --jsonl g.jsonl",
        "channels 'one.*' --jsonl g.jsonl --no-video",
        "track bad --jsonl g.jsonl",  # a folder of only bad images
        "detect bad --jsonl g.jsonl",
    ],
)
def test_g_a_damaged_video_or_no_usable_frame_is_not_a_clean_exit(damaged, capsys, caplog, command):
    code = _emts(command.replace("'", ""))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    if command.split()[1].endswith(".mp4"):  # results kept, the damage said, exit 3
        assert code == 3
        assert len(warnings) == 1 and "of its 40 frames (truncated or damaged)" in warnings[0]
        kept = len((damaged / "g.jsonl").read_text().splitlines())
        assert 0 < kept < 40 and f"ended after {kept} of its 40" in warnings[0]
        if not command.startswith("detect"):  # the summary line says it too
            assert f"incomplete input: {warnings[0]}" in err
    else:
        lines = [line for line in err.splitlines() if line.startswith("emts:")]
        assert code == 2 and len(lines) == 1 and lines[0].startswith("emts: error:"), err
        assert bool(warnings) == ("bad" in command)  # a folder: a warning per bad image


def test_g_a_whole_video_is_a_clean_exit(damaged, capsys):
    assert _emts("track whole.mp4 --jsonl g.jsonl --no-verifier") == 0
    assert "ended" not in capsys.readouterr().err
    assert len((damaged / "g.jsonl").read_text().splitlines()) == 40


# -- H: an empty string given as a path or value ----------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["track", "", "--jsonl", "x.jsonl"], "SOURCE"),
        (["track", " ", "--jsonl", "x.jsonl"], "SOURCE"),
        (["detect", "", "--jsonl", "x.jsonl"], "SOURCE"),
        (["track", "in.mp4", "--jsonl", ""], "--jsonl"),
        (["track", "in.mp4", "--jsonl", "x.jsonl", "--out", ""], "--out"),
        (["track", "in.mp4", "--jsonl", "x.jsonl", "--timeline", ""], "--timeline"),
        (["track", "in.mp4", "--jsonl", "x.jsonl", "--mavlink", ""], "--mavlink"),
        (["track", "in.mp4", "--jsonl", "x.jsonl", "--model", ""], "--model"),
        (["channels", "in.mp4", "--out", ""], "--out"),
        (["bench", "--json", ""], "--json"),
        (["demo", "--out-dir", ""], "--out-dir"),
        (["ensemble", "m.onnx", "", "--out", "e.onnx"], "models"),
    ],
)
def test_h_an_empty_value_is_refused(workdir, capsys, argv, flag):
    cv2.imwrite(str(workdir / "frame.png"), np.zeros((64, 64), np.uint8))  # cwd: an image
    assert _emts_argv(argv) == 2
    line = _one_line_error(capsys)
    assert f"argument {flag}: must not be empty" in line
    assert not (workdir / "x.jsonl").exists() and not (workdir / "track.jsonl").exists()


def test_h_an_empty_source_is_not_the_current_folder(workdir):
    from emts.errors import BadInputError
    from emts.io import open_source

    cv2.imwrite(str(workdir / "frame.png"), np.zeros((64, 64), np.uint8))
    with pytest.raises(BadInputError, match="empty name"):
        open_source("")


# -- I: a video or image the writer cannot write ----------------------------------------------


def _frames_in(path: Path) -> int:
    capture = cv2.VideoCapture(str(path))
    count = 0
    while capture.read()[0]:
        count += 1
    return count


def _disk_fills_after(monkeypatch, calls: int) -> None:
    """os.statvfs reports a roomy disk for ``calls`` calls, then one with 100 KB left."""
    real, seen = os.statvfs, []

    class Full:
        f_bavail, f_frsize = 25, 4096

    def statvfs(path):
        seen.append(path)
        return real(path) if len(seen) <= calls else Full()

    monkeypatch.setattr(os, "statvfs", statvfs)


@pytest.mark.parametrize(
    "case",
    [
        "track: the disk fills while writing --out",
        "channels: the disk fills while writing --out",
        "track: --jsonl on a full disk",
        "track: a frame too large for the codec",
        "track: a video that does not play when closed",
        "demo's figure: an image on a full disk",
        *(f"--fps {fps}" for fps in ("1e9", "1e-9", "0", "1001", "nan")),
        "bench --pace 0.5",
        "adapt --fps 5000",
    ],
)
def test_i_a_write_that_fails_says_why_and_keeps_what_it_can(workdir, capfd, monkeypatch, case):
    from emts.io import write_image

    if case.startswith("--fps"):
        fps = case.split()[1]
        for command in ("track in.mp4 --jsonl x.jsonl", "detect in.mp4 --jsonl x.jsonl",
                        "channels in.mp4", "serve in.mp4"):  # fmt: skip
            assert _emts(f"{command} --fps {fps}") == 2
            assert "argument --fps: must be a finite number in [1, 1000]" in capfd.readouterr().err
        return
    if case.startswith(("bench", "adapt")):
        command = {"bench": "bench --pace 0.5", "adapt": "adapt in.mp4 --out a --fps 5000"}
        assert _emts(command[case.split()[0]]) == 2
        assert "must be a finite number in [1, 1000]" in capfd.readouterr().err
        return
    if case.startswith("demo"):
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full")
        with pytest.raises(OSError, match="No space left") as error:
            write_image("/dev/full", np.zeros((8, 8), np.uint8))  # emts: error: FILE: why
        assert error.value.filename == "/dev/full" and Path("/dev/full").exists()
        return
    if "disk fills" in case:
        _disk_fills_after(monkeypatch, 5)
        command = case.split(":")[0]
        extra = " --no-verifier" if command == "track" else ""
        code = _emts(f"{command} in.mp4 --out v.mp4 --jsonl v.jsonl{extra}")
        line = _one_line_error(capfd)
        assert code == 2 and "its disk is nearly full" in line and "playable" in line
        written = len((workdir / "v.jsonl").read_text().splitlines())
        assert 0 < written == _frames_in(workdir / "v.mp4")  # playable, every line's frame
    elif "--jsonl on a full disk" in case:
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full")
        assert _emts("track in.mp4 --jsonl /dev/full --no-verifier") == 2
        assert "/dev/full: No space left on device" in _one_line_error(capfd)
    elif "too large" in case:
        cv2.imwrite(str(workdir / "wide.png"), np.zeros((20, 9000), np.uint8))
        assert _emts("track wide.png --jsonl x.jsonl --out wide.mp4 --no-verifier") == 2
        line = _one_line_error(capfd)  # and no raw OpenCV lines
        assert "frame 9000x20 is too large for the mpeg4 codec (at most 8191 px a side)" in line
    else:  # the file was damaged under the writer: said, not a clean exit
        folder = workdir / "frames"
        folder.mkdir()
        for k in range(3):
            cv2.imwrite(str(folder / f"{k}.png"), np.full((64, 80), 40 * k, np.uint8))

        class Unplayable:  # what OpenCV makes of an mp4 without its index
            def __init__(self, path):
                pass

            def isOpened(self):  # noqa: N802 (OpenCV's name)
                return False

            def release(self):
                pass

        monkeypatch.setattr(cv2, "VideoCapture", Unplayable)  # an image source reads none
        assert _emts("track frames --jsonl x.jsonl --out v.mp4 --no-verifier") == 2
        assert "v.mp4: the video is incomplete and does not play" in _one_line_error(capfd)


# -- K: a Ctrl-C while starting, a FIFO among the images, gimbal gains beyond any gimbal ------

_INTERRUPTED_IMPORT = """
import sys
import time

class CtrlC:  # Ctrl-C pressed while this module loads
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
from emts.cli import main
sys.exit(main(["track", "in.mp4", "--out", "e.mp4", "--jsonl", "e.jsonl"]))
"""


@pytest.mark.parametrize(
    "case",
    [
        *(f"Ctrl-C while importing {m}" for m in ("emts.cli.entry", "numpy", "emts.io")),
        "a FIFO in an image folder",
        "a FIFO as the source",
        "--gimbal kp=1e308",
        "--gimbal max_yaw_rate=1e308",
        "--gimbal dead_band=2",
        "a gimbal config of the API",
    ],
)
def test_k_start_up_fifos_and_gimbal_gains(workdir, capsys, case):
    if case.startswith("Ctrl-C"):
        run = subprocess.run(
            [sys.executable, "-c", _INTERRUPTED_IMPORT, case.split()[-1]],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=120,
        )
        assert run.returncode == 130
        assert run.stderr.splitlines() == [
            "emts: interrupted (SIGINT) while starting; nothing was written"
        ]
        assert not (workdir / "e.jsonl").exists()
    elif "FIFO" in case:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        from emts.errors import BadInputError
        from emts.io import open_source

        folder = workdir / "frames"
        folder.mkdir()
        for k in range(3):
            cv2.imwrite(str(folder / f"f{k:03d}.png"), np.full((64, 80), 40 * k, np.uint8))
        os.mkfifo(folder / "f001b.png")  # imread would wait for a writer for ever
        if "folder" in case:
            assert [p.name for p in open_source(folder).paths] == [
                f"f{k:03d}.png" for k in range(3)
            ]
            assert [p.name for p in open_source(str(folder / "*.png")).paths][1] == "f001.png"
        else:
            with pytest.raises(BadInputError, match="not a regular file"):
                open_source(folder / "f001b.png")
    elif case.startswith("--gimbal"):
        pytest.importorskip("pymavlink")
        command = "track in.mp4 --jsonl x.jsonl --mavlink udpout:127.0.0.1:14599 --follow gimbal"
        assert _emts(f"{command} {case}") == 2
        assert "must be a finite number in" in _one_line_error(capsys)
        assert not (workdir / "x.jsonl").exists()
    else:
        from emts.apps.mavlink import GimbalFollow, _float32
        from emts.config import GimbalFollowConfig
        from emts.errors import BadInputError

        with pytest.raises(BadInputError, match="kp must be a finite number"):
            GimbalFollow(GimbalFollowConfig(kp=1e308))
        assert _float32(1e308) == pytest.approx(3.4028234663852886e38)
        assert np.isnan(_float32(float("nan")))


def test_g_serve_says_on_status_that_a_truncated_video_ended_early(damaged):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from emts.apps.serve import GroundStation, create_app
    from emts.pipeline import Pipeline

    station = GroundStation("cut.mp4", Pipeline(None, verifier=None), pace=False).start()
    client = TestClient(create_app(station))
    deadline = time.monotonic() + 20
    while client.get("/status").json()["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    status = client.get("/status").json()
    station.stop()
    assert status["status"] == "ended"
    assert "of its 40 frames (truncated or damaged)" in status["error"]


# -- a fresh pass of new cases (benchmarks/hostile_pass.py, reports/hostile) -------------------


def _edited_model(source: Path, path: Path, edit: str) -> Path:
    """A copy of the ONNX model ``source`` with every weight NaN (``nan``) or every output
    cast to an integer type (``int``)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    if edit == "nan":
        for k, tensor in enumerate(model.graph.initializer):
            values = numpy_helper.to_array(tensor)
            if values.dtype == np.float32 and values.size > 1:
                nan = numpy_helper.from_array(np.full_like(values, np.nan), tensor.name)
                model.graph.initializer[k].CopyFrom(nan)
    else:
        for output in model.graph.output:
            inner = output.name + "_float"
            for node in model.graph.node:
                node.output[:] = [inner if o == output.name else o for o in node.output]
            model.graph.node.append(
                helper.make_node("Cast", [inner], [output.name], to=TensorProto.INT32)
            )
            output.type.tensor_type.elem_type = TensorProto.INT32
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("track in.mp4 --model nan.onnx --jsonl x.jsonl", "NaN or infinite"),
        ("detect in.mp4 --model int.onnx --jsonl x.jsonl", "of type int32"),
        ("bench --frames 2 --warmup 0 --model nan.onnx", "NaN or infinite"),
        ("track in.mp4 --verifier vnan.onnx --jsonl x.jsonl", "NaN or infinite"),
        ("track in.mp4 --verifier vint.onnx --jsonl x.jsonl", "of type int32"),
        pytest.param("ensemble m.onnx nan.onnx --out e.onnx", "NaN or infinite", marks=TRAIN),
        pytest.param("export nan.onnx --out e.onnx --any-size", "NaN or infinite", marks=TRAIN),
    ],
)
def test_c_a_model_of_nan_weights_or_integer_outputs_is_refused_at_load(
    workdir, capsys, command, fragment
):
    _edited_model(workdir / "m.onnx", workdir / "nan.onnx", "nan")
    _edited_model(workdir / "m.onnx", workdir / "int.onnx", "int")
    _edited_model(workdir / "v.onnx", workdir / "vnan.onnx", "nan")
    _edited_model(workdir / "v.onnx", workdir / "vint.onnx", "int")
    assert _emts(command) == 2
    assert fragment in _one_line_error(capsys)
    assert not (workdir / "x.jsonl").exists() and not (workdir / "e.onnx").exists()


def _clip_set(folder: Path, clips: int = 2, frames: int = 3) -> Path:
    """A small clip set as emts synth writes one (noise frames, no persons)."""
    import json

    from emts.synth.store import write_clip

    rng = np.random.default_rng(1)
    for index in range(clips):
        images = [rng.integers(0, 255, (512, 640), np.uint8) for _ in range(frames)]
        jpegs = [cv2.imencode(".jpg", image)[1].tobytes() for image in images]
        decoded = [cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_GRAYSCALE) for j in jpegs]
        labels = [{"frame": t, "persons": [], "distractors": []} for t in range(frames)]
        write_clip(folder, index, jpegs, decoded, {"kind": "tier1", "frames": labels})
    manifest = {"format_version": 1, "set": "bench", "kind": "tier1", "split": "heldout"}
    manifest |= {"clips": clips, "frames_per_clip": frames, "seed": 0, "complete": True}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _rewrite_clip(path: Path, change) -> None:
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["difference"] = change(arrays["difference"])
    np.savez(path.with_suffix(""), **arrays)


def _manifest_says(folder: Path, clips) -> None:
    import json

    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "clips": clips}))


CLIP_SET_DAMAGE = {  # damage -> what the one line says
    "manifest-of-10**9-clips": (lambda f: _manifest_says(f, 10**9), "names 1000000000 clips"),
    "manifest-clips-a-word": (lambda f: _manifest_says(f, "two"), "not a number of clips"),
    "manifest-cut": (
        lambda f: (f / "manifest.json").write_text('{"clips": 2, "se'),
        "manifest.json cannot be read",
    ),
    "clip-of-5-row-differences": (
        lambda f: _rewrite_clip(f / "clips" / "000000.npz", lambda d: d[:, :5]),
        "a corrupt or truncated clip",
    ),
    "clip-of-nan-differences": (
        lambda f: _rewrite_clip(f / "clips" / "000000.npz", lambda d: d * np.nan),
        "NaN or infinite",
    ),
    "a-fifo-for-a-clip": (
        lambda f: ((f / "clips" / "000000.npz").unlink(), os.mkfifo(f / "clips" / "000000.npz")),
        "not a regular file",
    ),
}


@pytest.mark.parametrize(("damage", "fragment"), CLIP_SET_DAMAGE.values(), ids=CLIP_SET_DAMAGE)
def test_d_a_damaged_clip_set_is_one_line_without_hanging_or_a_traceback(
    tmp_path, capsys, damage, fragment
):
    if "fifo" in fragment and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    folder = _clip_set(tmp_path / "set")
    damage(folder)
    for argv in (
        ["synth", "preview", str(folder), "--out", str(tmp_path / "sheet.png")],
        ["synth", "export", str(folder), str(tmp_path / "frames")],
    ):
        assert _emts_argv(argv) == 2
        assert fragment in _one_line_error(capsys)
    assert not (tmp_path / "sheet.png").exists()


@TRAIN
@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["eval", "hituav", "--hituav", "hit", "--out", "ev"], "not readable COCO annotations"),
        (["eval", "detect", "--bench", "set", "--out", "ev"], "the bench scores frames 5-18"),
        (["eval", "detect", "--bench", "set", "--out", "in.mp4"], "is a file; name a folder"),
        (["adapt", "in.mp4", "--out", "a", "--tracks", "bin.jsonl"], "not text"),
        (["adapt", "in.mp4", "--out", "a", "--tracks", "fifo.jsonl"], "not a regular file"),
        (["adapt", "in.mp4", "--out", "a", "--steps", str(10**20)], "--steps: must be between"),
        (["adapt", "in.mp4", "--out", "a", "--lr", "1e300"], "--lr: must be a finite number"),
        (["train", "verifier", "--out", "tv", "--lr", "nan"], "--lr: must be a finite number"),
    ],
)
def test_d_corrupt_files_and_values_of_the_training_tools_are_one_line(
    workdir, capsys, argv, fragment
):
    (workdir / "hit").mkdir()
    (workdir / "hit" / "val.json").write_bytes(b"\x00\xff" * 50)
    (workdir / "bin.jsonl").write_bytes(bytes(range(256)))
    os.mkfifo(workdir / "fifo.jsonl")
    _clip_set(workdir / "set")  # 3 frames a clip: shorter than the bench's 18
    assert _emts_argv(argv) == 2
    assert fragment in _one_line_error(capsys)
    assert not (workdir / "ev").exists() and not (workdir / "a" / "model.onnx").exists()


@TRAIN
@pytest.mark.parametrize(
    ("truth", "args", "fragment"),
    [
        ("1,1,50,100,10,30,1\n" * 3, "--target-id 1", "has 3 rows on frame 1"),
        ("1e308,1e308,1e308,1e308\n" * 8, "--lock-gt 0", "outside the"),
        ("50,100,10,30\n" * 8, "--lock 5000,5000", "is outside frame 0"),
        ("50,100,10,30\n" * 8, "--lock=-20,-20,5,5", "is outside frame 0"),
    ],
)
def test_e_f_eval_track_refuses_duplicate_truth_and_taps_off_the_image(
    workdir, capfd, truth, args, fragment
):
    (workdir / "gt.txt").write_text(truth)
    command = f"eval track in.mp4 --gt gt.txt {args} --no-verifier --out ev"
    assert _emts(command) == 2
    assert fragment in _one_line_error(capfd)  # (capfd: no numpy RuntimeWarning line either)


@pytest.mark.parametrize("lock", ["160,128@", "10,10@ "])
def test_f_a_tap_that_names_no_frame_is_refused(workdir, capsys, lock):
    assert _emts_argv(["track", "in.mp4", f"--lock={lock}", "--jsonl", "t.jsonl"]) == 2
    assert "expected 'auto', X,Y[@FRAME]" in _one_line_error(capsys)
    assert not (workdir / "t.jsonl").exists()


@TRAIN
def test_f_adapt_refuses_walkers_taller_than_the_frame(workdir, capsys):
    assert _emts("adapt in.mp4 --out a --person-height 1000 2000") == 2
    assert "expected 0 < LO < HI <= 512" in _one_line_error(capsys)


def test_g_a_truncated_jpeg_is_skipped_in_our_words_not_libjpegs(workdir, capfd, caplog):
    folder = workdir / "frames"
    folder.mkdir()
    for k in range(4):
        cv2.imwrite(str(folder / f"f{k}.jpg"), np.full((64, 80, 3), 40 * k, np.uint8))
    whole = (folder / "f2.jpg").read_bytes()
    (folder / "f2.jpg").write_bytes(whole[: len(whole) // 3])
    (folder / "f3.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))  # no IHDR: OpenCV's error
    assert _emts("track frames --jsonl t.jsonl --no-verifier") == 0
    err = capfd.readouterr().err
    assert "Premature end of JPEG" not in err and "[ERROR" not in err, err
    warnings = [r.getMessage() for r in caplog.records]
    assert "frame 2 skipped: truncated JPEG f2.jpg (no end-of-image marker)" in warnings
    lines = (workdir / "t.jsonl").read_text().splitlines()
    assert len(lines) == 5 and '"skipped"' in lines[2]  # frame numbers kept
    assert _emts("track frames/f2.jpg --jsonl u.jsonl") == 2  # alone: no usable frame
    assert "truncated JPEG" in _one_line_error(capfd)
