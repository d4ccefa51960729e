"""What EMTS draws never hides the person: the R inset keeps off the target, labels have no
ghost glyphs, and the pictures carry their axes and scales."""

import json
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from emts.apps.draw import _label, annotate, channels_figure, inset_corner, timeline


def _result(box, mode="locked"):
    target = None if box is None else SimpleNamespace(box=np.array(box, float), p_human=0.9)
    channels = np.zeros((3, 192, 256), np.float32)
    channels[1, 90:100, 120:130] = 0.5  # something moving, so the inset is not black
    return SimpleNamespace(
        detections=[], target=target, mode=mode, verified=True, channels=channels, index=3
    )


@pytest.mark.parametrize(
    ("box", "corner"),
    [
        (None, (512, 0)),  # no target: top right
        ((560, 20, 30, 60), (0, 0)),  # under the top-right corner: top left
        ((20, 20, 600, 60), (512, 384)),  # across the top: bottom right
        ((10, 10, 620, 480), None),  # everywhere: no inset at all
    ],
)
def test_the_inset_takes_a_corner_away_from_the_target(box, corner):
    assert inset_corner((640, 512), (128, 104), box) == corner


@pytest.mark.parametrize("size", [(512, 640), (720, 1280)])
def test_the_target_is_never_under_the_inset(size):
    frame = np.full((*size, 3), 128, np.uint8)
    w = size[1]
    box = (w - 60, 40, 30, 60)  # where a top-right inset used to sit
    picture = annotate(frame, _result(box))
    x, y, bw, bh = box
    # between the crosshair's arms (they stop a third of the way in): the person's pixels,
    # as the camera saw them
    assert (picture[y + 16 : y + bh - 16, x + 4 : x + bw - 4] == 128).all()
    assert (picture[:40, :40] != 128).any()  # the inset went to the top left instead


def test_a_label_draws_no_ghost_beyond_its_own_glyphs():
    image = np.zeros((60, 400, 3), np.uint8)
    _label(image, "reacquire", (10, 40))
    (width, _), _ = cv2.getTextSize("reacquire", cv2.FONT_HERSHEY_SIMPLEX, 0.6, 1)
    columns = np.flatnonzero(image.any(axis=(0, 2)))
    assert columns.max() <= 10 + width + 2  # the outline hugs the text, no extra glyph


def test_the_timeline_has_a_frame_axis_a_legend_and_the_events(tmp_path):
    records = [
        {"frame": i, "mode": m, "target": None if m == "search" else {"p_human": 0.8}}
        for i, m in enumerate(["search"] * 20 + ["locked"] * 60 + ["reacquire"] * 20)
    ]
    records[20]["event"], records[80]["event"] = "lock", "lost"
    path = tmp_path / "t.png"
    assert timeline(records, path, "t")
    image = cv2.imread(str(path))
    assert image.shape[0] >= 250  # room for the legend above and the frame axis below
    strip = image[190]  # a row through the mode strip
    left = 70 + 20 * 6 + 3  # the lock's mark, in the middle of its frame's bar
    assert (strip[left] == 0).all()  # drawn in black over the strip
    json.dumps(records)  # the records are what emts track writes


def test_the_channels_figure_scales_r_and_d_to_be_seen():
    channels = np.zeros((3, 192, 256), np.float32)
    channels[0] = 0.5
    channels[1] = 0.002  # a thermal frame's R: a few thousandths
    channels[1, 80:100, 100:110] = 0.02
    channels[2, 80:100, 100:110] = 0.01
    figure = channels_figure(channels, np.zeros((24, 32), np.float32), [], own_scale=True)
    panel = figure[:384, 512:1024]  # R, shown at 2x
    assert panel[170:190, 210 : 210 + 12].mean() > 150  # the mover is bright, not near-black
    assert figure.shape[0] > 384  # colour bars beneath
