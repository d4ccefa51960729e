"""benchmarks/labels: our person12 labels for frames 202-300 and the 300-line ground truth."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "labels"))
person12_gt = pytest.importorskip("person12_gt")


def _fake_clip(root: Path, lines: int = 201) -> Path:
    """A clip folder holding only a groundtruth_rect.txt of ``lines`` boxes (line i: i,1,2,3)."""
    root.mkdir()
    (root / "groundtruth_rect.txt").write_text("".join(f"{i},1,2,3\n" for i in range(lines)))
    return root


def test_our_labels_are_99_boxes_inside_the_frame():
    boxes = person12_gt.our_labels()
    assert boxes.shape == (99, 4)
    shown = boxes[np.isfinite(boxes[:, 0])]
    assert np.all(shown[:, 2:] > 0)
    assert np.all(shown[:, 0] >= 0) and np.all(shown[:, 0] + shown[:, 2] <= 640)
    assert np.all(shown[:, 1] >= 0) and np.all(shown[:, 1] + shown[:, 3] <= 360)


def test_the_300_lines_are_the_clips_201_then_ours(tmp_path):
    clip = _fake_clip(tmp_path / "clip")
    truth = person12_gt.full_ground_truth(clip)
    assert truth.shape == (300, 4)
    assert np.array_equal(truth[:201, 0], np.arange(201))
    assert np.array_equal(truth[201:], person12_gt.our_labels(), equal_nan=True)
    out = tmp_path / "gt300.txt"
    person12_gt.write_ground_truth(clip, out)
    lines = out.read_text().splitlines()
    assert len(lines) == 300
    assert lines[200] == "200,1,2,3"
    assert lines[201] == person12_gt.LABELS.read_text().splitlines()[0]


def test_a_short_clip_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="expected 201"):
        person12_gt.full_ground_truth(_fake_clip(tmp_path / "clip", lines=200))
