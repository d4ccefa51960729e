"""The colour view the appearance samples is read at the working frame's scale, whatever the
camera's resolution (:func:`emts.stages.appearance.appearance_view`)."""

from types import SimpleNamespace

import cv2
import numpy as np

from emts.geometry import Frame, FrameGeometry
from emts.stages.appearance import AppearanceTemplate, appearance_view


def _front(size):
    return SimpleNamespace(geometry=FrameGeometry(size), working=np.zeros((512, 640), np.uint8))


def _scene(rng, size=(640, 360)):
    """A textured colour frame: blurred noise with a few coloured blocks."""
    w, h = size
    image = cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), (0, 0), 2.0)
    image[100:180, 300:330] = (40, 60, 200)
    image[200:260, 100:140] = (200, 180, 30)
    return image


def test_a_larger_colour_frame_is_viewed_at_the_working_scale():
    frame = _scene(np.random.default_rng(0), (1280, 720))
    view = appearance_view(frame, _front((1280, 720)))
    assert view.image.shape == (360, 640, 3)
    # a point of the working frame reads the same place of the picture
    geometry = FrameGeometry((1280, 720))
    point = geometry.points([[630.0, 280.0]], Frame.INPUT, Frame.WORKING)[0]
    mapped = view.from_working @ np.array([*point, 1.0])
    np.testing.assert_allclose(mapped[:2], [314.75, 139.75])


def test_the_view_does_not_depend_on_the_cameras_resolution():
    # a detailed 1920x1080 frame, and what a 640x360 camera sees of the same scene
    noise = np.random.default_rng(1).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    large = cv2.GaussianBlur(noise, (0, 0), 1.0)
    small = cv2.resize(large, (640, 360), interpolation=cv2.INTER_AREA)
    views = [appearance_view(f, _front((f.shape[1], f.shape[0]))) for f in (small, large)]
    top_left, size = np.array([280.0, 150.0]), (40, 110)  # WORKING px
    patches = [AppearanceTemplate.sample(v.image, v.from_working, top_left, size) for v in views]
    # read straight from the large frame (one pixel of every 3x3, unfiltered): aliased
    direct = FrameGeometry((1920, 1080)).matrix(Frame.WORKING, Frame.INPUT)
    aliased = AppearanceTemplate.sample(large, direct, top_left, size)
    difference = np.abs(patches[0] - patches[1]).mean()
    assert difference < 0.5 * np.abs(aliased - patches[0]).mean()
    assert patches[1].std() <= 1.02 * patches[0].std() < aliased.std() / 1.2


def test_a_frame_at_the_working_scale_or_gray_is_viewed_as_it_is():
    frame = _scene(np.random.default_rng(2))
    view = appearance_view(frame, _front((640, 360)))
    assert view.image is frame
    gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    front = _front((640, 360))
    assert appearance_view(gray, front).image is front.working


def test_the_front_end_shrinks_a_larger_colour_frame_once():
    from emts.front_end import MotionFrontEnd
    from emts.preprocess import Preprocessor

    frame = cv2.GaussianBlur(
        np.random.default_rng(3).integers(0, 256, (720, 1280, 3), dtype=np.uint8), (0, 0), 1.0
    )
    preprocess = Preprocessor()
    working, geometry, _ = preprocess(frame)
    assert preprocess.colour.shape == (360, 640, 3)
    # the gray working frame is made from the input as it is
    gray = geometry.to_working(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))
    assert np.array_equal(working, gray)
    front = MotionFrontEnd().step(frame)
    assert front.colour.shape == (360, 640, 3)
    assert appearance_view(frame, front).image is front.colour
    # no colour to keep: the working size, gray and 16-bit frames
    for other in (frame[:360, :640], frame[..., 0], frame[..., 0].astype(np.uint16) * 200):
        preprocess(other)
        assert preprocess.colour is None


def test_shrink_is_area_at_a_scale_of_two_and_anti_aliased_at_others():
    from emts.geometry import shrink

    rng = np.random.default_rng(4)
    for size in ((1280, 720), (1920, 1080), (2704, 1520)):
        frame = cv2.GaussianBlur(
            rng.integers(0, 256, (*size[::-1], 3), dtype=np.uint8), (0, 0), 1.5
        )
        area = cv2.resize(frame, (640, 360), interpolation=cv2.INTER_AREA).astype(int)
        small = shrink(frame, (640, 360))
        assert small.shape == (360, 640, 3)
        difference = np.abs(small.astype(int) - area).mean()
        # anti-aliased: no more energy than INTER_AREA leaves (aliasing adds it)
        assert difference == 0 if size == (1280, 720) else difference < 0.3 * area.std()
        assert small.std() <= 1.02 * area.std()
