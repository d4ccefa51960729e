"""Hostile inputs (docs/reviews of 2026-12, classes A-K): every one ends in one clear line and
a defined exit code -- never a traceback, never silently wrong output, never an input
overwritten -- and what a run computed before it stopped is kept. One test per class, each
case a command line."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from emts.cli import main
from emts.precision import shipped_model


def _video(path: Path, frames: int = 8, size=(320, 256)) -> Path:
    """A small mp4 of a bright block walking over a textured background."""
    rng = np.random.default_rng(0)
    background = (rng.random((size[1], size[0])) * 80 + 60).astype(np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30, size)
    for k in range(frames):
        frame = background.copy()
        cv2.rectangle(frame, (50 + 3 * k, 100), (60 + 3 * k, 130), 255, -1)
        writer.write(cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))
    writer.release()
    return path


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _one_line_error(capsys) -> str:
    """The run's stderr, checked to be one ``emts: error:`` line (progress bars aside)."""
    err = capsys.readouterr().err
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
    assert main(command.split()) == 2
    assert "choose another file" in _one_line_error(capsys)
    assert {p: _md5(p) for p in before} == before
