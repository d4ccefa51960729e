"""emts adapt as a user runs it: every option explained, a run stopped by SIGTERM keeps its
steps and resumes to the same final step, thermal footage adapts the thermal model."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import render

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from emts.cli import main  # noqa: E402
from emts.cli.entry import build_parser  # noqa: E402

SHIFT = (8.0, -5.0)  # camera drift of the test footage, input px per frame


def _write_footage(folder, scene: np.ndarray, frames: int = 10, colour: bool = True) -> None:
    """A drifting camera over a real aerial still, 640x360; colour: B, G, R made to differ
    (as a colour camera's), else single-channel (as a thermal camera's)."""
    import cv2

    folder.mkdir()
    for t in range(frames):
        pose = np.array([[1.0, 0, -60 - SHIFT[0] * t], [0, 1.0, -60 - SHIFT[1] * t]])
        gray = render(scene, pose, (640, 360))
        if colour:
            gray = cv2.merge([gray, np.clip(gray * 0.7 + 40, 0, 255).astype(np.uint8), gray // 2])
        cv2.imwrite(str(folder / f"{t:04d}.png"), gray)


def _adapt_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices["adapt"]


def test_every_adapt_option_has_help_text():
    parser = _adapt_parser()
    actions = [a for a in parser._actions if a.dest != "help"]
    assert {"--steps", "--lr", "--seed", "--threads", "--resume", "--model"} <= {
        flag for a in actions for flag in a.option_strings
    }
    missing = [a.option_strings or a.dest for a in actions if not (a.help or "").strip()]
    assert missing == []
    # and --help shows it: no option line stands alone without its text
    text = parser.format_help()
    for action in actions:
        assert action.help.split()[0] in text


def test_the_command_default_is_the_recipe_default():
    from emts.cli.train import ADAPT_STEPS
    from emts.train.adapt import DEFAULT_STEPS, AdaptConfig

    assert ADAPT_STEPS == DEFAULT_STEPS == AdaptConfig().steps == 300
    assert _adapt_parser().get_default("steps") == DEFAULT_STEPS


def test_replay_is_looked_for_where_the_options_say(tmp_path):
    from emts.train.adapt import look_for_replay

    (tmp_path / "data" / "tier1").mkdir(parents=True)
    (tmp_path / "data" / "tier1" / "manifest.json").write_text("{}")
    (tmp_path / "hit").mkdir()
    found, missing = look_for_replay(tmp_path / "data", tmp_path / "hit")
    assert found == {"tier1": tmp_path / "data" / "tier1"}
    assert missing == [
        str(tmp_path / "data" / "negatives" / "manifest.json"),
        str(tmp_path / "hit" / "train.json"),
    ]
    assert look_for_replay(None, None) == ({}, [])


def test_sigterm_keeps_a_partial_model_and_resume_reaches_the_same_final_step(
    tmp_path, aerial_scene, capsys
):
    folder, out = tmp_path / "flight", tmp_path / "adapted"
    _write_footage(folder, aerial_scene)
    none = str(tmp_path / "none")
    options = ["--out", str(out), "--steps", "8", "--model", "default", "--seed", "3"]
    options += ["--curriculum", none, "--hituav", none]
    command = [sys.executable, "-c", "import sys; from emts.cli import main; sys.exit(main())"]
    process = subprocess.Popen(
        [*command, "adapt", str(folder), *options],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines = []
    deadline = time.monotonic() + 50
    for line in process.stderr:  # no terminal: a plain progress line per step here
        lines.append(line)
        if "train adapt: step 2/8" in line or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=30)
    lines += rest.splitlines()
    assert process.returncode == 128 + signal.SIGTERM, "".join(lines)
    report = json.loads((out / "adapt.json").read_text())
    assert report["partial"] is True and 2 <= report["steps_done"] < 8
    said = [line for line in lines if "emts adapt: stopped at step" in line]
    assert len(said) == 1 and "--resume" in said[0] and str(out / "checkpoint.pt") in said[0]
    from emts.stages.c_detect.detector import Detector

    Detector(out / "model.onnx")(np.zeros((3, 192, 256), np.float32))  # a usable model
    stopped_at = report["steps_done"]

    # The resume line's command continues the run to step 8, from where it stopped.
    resume = said[0].split("to finish it: ", 1)[1].strip()
    assert resume.startswith("emts adapt ") and resume.endswith(" --resume")
    assert main(resume.split()[1:]) == 0
    err = capsys.readouterr().err
    assert f"resuming {out / 'checkpoint.pt'} at step {stopped_at} of 8" in err
    report = json.loads((out / "adapt.json").read_text())
    assert report["partial"] is False and report["steps_done"] == 8
    saved = torch.load(out / "checkpoint.pt", weights_only=False)
    assert saved["state"]["phase"] == 1 and "rng" in saved
    assert [h["step"] for h in saved["state"]["history"]] == [8]  # one 20-step window, whole

    # Other options are another run: its checkpoint is refused in one line, and kept.
    assert main(["adapt", str(folder), *options, "--steps", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert "another run's checkpoint" in err and "steps 8 -> 20" in err
    assert len(err.splitlines()) == 1


def test_a_model_is_never_adapted_over_itself(tmp_path, aerial_scene, capsys):
    import shutil

    from emts.stages.c_detect.detector import default_model_path

    folder, out = tmp_path / "flight", tmp_path / "adapted"
    _write_footage(folder, aerial_scene, frames=6)
    out.mkdir()
    shutil.copy(default_model_path(), out / "model.onnx")
    before = (out / "model.onnx").read_bytes()
    assert main(["adapt", str(folder), "--out", str(out), "--model", str(out / "model.onnx")]) == 2
    assert "choose another --out" in capsys.readouterr().err
    assert (out / "model.onnx").read_bytes() == before


def test_thermal_footage_adapts_the_thermal_model(tmp_path, aerial_scene, capsys):
    import onnx

    from emts.stages.c_detect.detector import Detector

    folder, out = tmp_path / "thermal", tmp_path / "adapted"
    _write_footage(folder, aerial_scene, frames=8, colour=False)
    none = str(tmp_path / "none")
    code = main(
        ["adapt", str(folder), "--out", str(out), "--steps", "2"]
        + ["--curriculum", none, "--hituav", none]
    )
    assert code == 0
    report = json.loads((out / "adapt.json").read_text())
    assert report["base_model"].endswith("detector.thermal.onnx")
    assert report["base_model_picked_by"] == "auto: footage without colour"
    assert report["trained_at"] == "256x192" and report["steps_done"] == 2
    # It runs as the thermal model does: at 512x384, Stage B's working warp, its reference.
    meta = {p.key: p.value for p in onnx.load(str(out / "model.onnx")).metadata_props}
    assert meta["emts_run_size"] == "512x384" and meta["emts_stage_b_warp"] == "working"
    assert meta["emts_network_size"] == "256x192" and "emts_residual_reference" in meta
    detector = Detector(out / "model.onnx")
    assert detector.network_size == (512, 384) and detector.stage_b_warp == "working"
    detector(np.zeros((3, 384, 512), np.float32))
    # The weights moved (two steps at lr 5e-4), from the thermal model's.
    base = Detector(report["base_model"], residual_reference=0.0, network_size=(256, 192))
    x = np.random.default_rng(0).random((1, 3, 192, 256)).astype(np.float32)
    heat = Detector(out / "model.onnx", residual_reference=0.0, network_size=(256, 192)).raw(x)[0]
    assert 0 < np.abs(heat - base.raw(x)[0]).max() < 0.5
