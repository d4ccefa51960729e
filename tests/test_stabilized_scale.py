"""benchmarks/stabilized_scale.py: G's scale follows a looming camera, and bad input is one line."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
stabilized_scale = pytest.importorskip("stabilized_scale")
cv2 = pytest.importorskip("cv2")


def _looming_clip(folder: Path, frames: int = 14, zoom: float = 1.03) -> None:
    """Textured ground zooming in about the centre by ``zoom`` a frame, a walker of constant
    size standing at the centre (the camera follows them)."""
    rng = np.random.default_rng(0)
    ground = np.full((360, 640, 3), 110.0, np.float32)
    stones = zip(
        rng.integers(0, 630, 900), rng.integers(0, 350, 900), rng.uniform(0, 255, 900), strict=True
    )
    for x, y, v in stones:
        ground[y : y + 6, x : x + 6] = v  # paving stones: corners for Stage A
    folder.mkdir()
    for i in range(frames):
        s = zoom**i
        m = np.array([[s, 0, 320 * (1 - s)], [0, s, 180 * (1 - s)]])
        image = cv2.warpAffine(ground, m, (640, 360), borderMode=cv2.BORDER_REFLECT)
        image[160:200, 312:328] = (40, 40, 140)
        image[160:168, 315:325] = (180, 200, 230)
        cv2.imwrite(str(folder / f"{i:06d}.jpg"), np.clip(image, 0, 255).astype(np.uint8))


def test_the_scale_grows_with_the_loom_and_the_report_is_written(tmp_path):
    _looming_clip(tmp_path / "frames")
    out = tmp_path / "out"
    code = stabilized_scale.main(
        [
            "--clip",
            str(tmp_path / "frames"),
            "--lock",
            "312,160,16,40",
            "--fps",
            "10",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads((out / "stabilized_scale.json").read_text())
    assert len(report["frames"]) == 14 and (out / "stabilized_scale.png").stat().st_size > 0
    scales = [r["scale"] for r in report["frames"] if r["scale"] is not None]
    assert scales[-1] > 1.2  # 1.03 ** 13 = 1.47 of ground zoom since the lock
    assert report["summary"]["window_radius_max"] is not None


def test_a_missing_clip_is_one_line_and_exit_2(tmp_path, capsys):
    code = stabilized_scale.main(
        ["--clip", str(tmp_path / "none.mp4"), "--lock", "1,1,4,4", "--out", str(tmp_path)]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
