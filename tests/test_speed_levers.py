"""benchmarks/speed_levers.py: its parts run and report every variant; bad arguments exit 2."""

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
levers = pytest.importorskip("speed_levers")


def _frames(count: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    base = (rng.random((264, 328)) * 255).astype(np.uint8)
    return [np.ascontiguousarray(base[k : k + 256, k : k + 320]) for k in range(count)]


def test_lk_costs_times_every_variant_and_says_whether_pyramids_are_taken():
    report = levers.lk_costs(_frames(), repeats=1)
    assert set(report["median_ms"]) == set(levers.LK_VARIANTS)
    assert all(v > 0 for v in report["median_ms"].values())
    assert report["calls"] == 2
    assert isinstance(report["prebuilt_pyramid_accepted"], bool)
    assert report["prebuilt_pyramid_accepted"] or report["prebuilt_pyramid_error"]


def test_bad_arguments_exit_2_before_any_work(tmp_path, capsys):
    assert levers.main(["--out", str(tmp_path), "--parts", "lk,warp"]) == 2
    assert "unknown part" in capsys.readouterr().out
    missing = tmp_path / "none.onnx"
    assert (
        levers.main(["--out", str(tmp_path), "--parts", "interleave", "--peer-yolo", str(missing)])
        == 2
    )
    assert "--peer-yolo" in capsys.readouterr().out
    assert not (tmp_path / "speed_levers.json").exists()
