import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emts.errors import BadInputError
from emts.geometry import WORKING_TO_NETWORK, Frame, FrameGeometry, Letterbox, lift

sizes = st.tuples(st.integers(16, 4000), st.integers(16, 4000))
frames = st.sampled_from(list(Frame))
coords = st.floats(-500, 5000, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(size=sizes, src=frames, dst=frames, x=coords, y=coords)
def test_point_round_trip_between_any_two_frames(size, src, dst, x, y):
    g = FrameGeometry(size)
    there = g.points([[x, y]], src, dst)
    back = g.points(there, dst, src)
    np.testing.assert_allclose(back, [[x, y]], atol=1e-6 * max(1.0, abs(x), abs(y)))


@settings(max_examples=200, deadline=None)
@given(
    size=sizes,
    dst=frames,
    box=st.tuples(coords, coords, st.floats(1, 500), st.floats(1, 500)),
)
def test_box_round_trip_from_input(size, dst, box):
    g = FrameGeometry(size)
    back = g.boxes(g.boxes([box], Frame.INPUT, dst), dst, Frame.INPUT)
    np.testing.assert_allclose(back, [box], rtol=1e-6, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(
    size=sizes,
    angle=st.floats(-0.1, 0.1),
    scale=st.floats(0.9, 1.1),
    tx=st.floats(-40, 40),
    ty=st.floats(-40, 40),
    x=coords,
    y=coords,
)
def test_motion_in_another_frame_moves_the_same_point(size, angle, scale, tx, ty, x, y):
    g = FrameGeometry(size)
    c, s = scale * np.cos(angle), scale * np.sin(angle)
    motion_working = np.array([[c, -s, tx], [s, c, ty]])
    motion_input = g.motion(motion_working, Frame.WORKING, Frame.INPUT)
    p_input = np.array([[x, y]])
    moved_in_input = p_input @ motion_input[:, :2].T + motion_input[:, 2]
    p_working = g.points(p_input, Frame.INPUT, Frame.WORKING)
    moved_in_working = p_working @ motion_working[:, :2].T + motion_working[:, 2]
    np.testing.assert_allclose(
        g.points(moved_in_working, Frame.WORKING, Frame.INPUT), moved_in_input, rtol=1e-7, atol=1e-5
    )


def test_a_working_sized_input_maps_to_itself():
    g = FrameGeometry((640, 512))
    np.testing.assert_allclose(g.matrix(Frame.INPUT, Frame.WORKING), np.eye(3))


def test_whole_frame_boxes_map_onto_the_content_of_each_frame():
    g = FrameGeometry((640, 512))
    np.testing.assert_allclose(
        g.boxes([[0, 0, 640, 512]], Frame.INPUT, Frame.STAGE_A), [[0, 0, 320, 256]]
    )
    # Network frame: 240x192 of content between 8-column pads.
    np.testing.assert_allclose(
        g.boxes([[0, 0, 640, 512]], Frame.INPUT, Frame.NETWORK), [[8, 0, 240, 192]]
    )


def test_wide_input_is_letterboxed_top_and_bottom_keeping_aspect():
    g = FrameGeometry((1920, 1080))
    lb = g.input_to_working
    assert lb.content == (640, 360) and lb.pad == (0, 76)
    np.testing.assert_allclose(
        g.boxes([[0, 0, 1920, 1080]], Frame.INPUT, Frame.WORKING), [[0, 76, 640, 360]]
    )


def test_letterbox_apply_replicates_borders_and_keeps_the_content():
    image = np.arange(100 * 200, dtype=np.uint8).reshape(100, 200)
    lb = Letterbox.fit((200, 100), (200, 200))
    out = lb.apply(image)
    assert out.shape == (200, 200)
    np.testing.assert_array_equal(out[50:150], image)
    np.testing.assert_array_equal(out[0], image[0])
    assert lb.content_mask()[50:150].all() and not lb.content_mask()[:50].any()


def test_network_letterbox_pads_exactly_one_stride_8_cell_per_side():
    assert WORKING_TO_NETWORK.content == (240, 192)
    assert WORKING_TO_NETWORK.pad == (8, 0)


def test_lift_makes_a_homogeneous_matrix():
    np.testing.assert_array_equal(lift(np.eye(2, 3)), np.eye(3))


@pytest.mark.parametrize("size", [(0, 10), (15, 100), (100, 8)])
def test_tiny_frames_are_rejected(size):
    with pytest.raises(BadInputError):
        FrameGeometry(size)


@pytest.mark.parametrize(
    ("size", "content", "pad"),
    [((384, 288), (360, 288), (12, 0)), ((512, 384), (480, 384), (16, 0))],
)
def test_larger_network_sizes_scale_working_to_their_height(size, content, pad):
    from emts.geometry import network_letterbox

    letterbox = network_letterbox(size)
    assert letterbox.content == content and letterbox.pad == pad
    geometry = FrameGeometry((1280, 720), size)
    box = geometry.boxes([[100, 200, 30, 80]], Frame.INPUT, Frame.NETWORK)[0]
    paper = FrameGeometry((1280, 720)).boxes([[100, 200, 30, 80]], Frame.INPUT, Frame.NETWORK)[0]
    np.testing.assert_allclose(box[2:], paper[2:] * size[1] / 192)  # people grow with the size
    np.testing.assert_allclose(
        geometry.boxes([box], Frame.NETWORK, Frame.INPUT)[0], [100, 200, 30, 80], atol=1e-9
    )


@pytest.mark.parametrize("size", [(380, 288), (200, 192), (256, 190)])
def test_unusable_network_sizes_are_refused(size):
    from emts.geometry import network_letterbox

    with pytest.raises(BadInputError, match="network size"):
        network_letterbox(size)


def test_a_homography_is_expressed_in_another_frame_like_the_affine_it_lifts():
    geometry = FrameGeometry((1280, 720))
    affine = np.array([[1.01, -0.02, 5.0], [0.02, 1.01, -3.0]])
    expected = geometry.motion(affine, Frame.WORKING, Frame.INPUT)
    mapped = geometry.homography(2.0 * lift(affine), Frame.WORKING, Frame.INPUT)  # any scale
    np.testing.assert_allclose(mapped[:2], expected, atol=1e-12)
    np.testing.assert_allclose(mapped[2], [0, 0, 1], atol=1e-12)


def test_a_few_boxes_map_as_the_matrix_path_maps_them():
    """FrameGeometry.boxes maps up to a few boxes in Python floats (its per-frame path); the
    numbers must be those of the corner points through the 3x3 map, to the last bit."""
    rng = np.random.default_rng(0)
    for size in [(640, 512), (1280, 720), (333, 777)]:
        geometry = FrameGeometry(size, (512, 384))
        for src in Frame:
            for dst in Frame:
                for n in (1, 3, 8, 9):  # 9: the numpy path
                    boxes = rng.uniform(-50, 700, (n, 4)) * rng.choice([1, 0.1, 1e-3], (n, 4))
                    corners = np.concatenate(
                        [boxes[:, :2] - 0.5, boxes[:, :2] + boxes[:, 2:] - 0.5], axis=0
                    )
                    mapped = geometry.points(corners, src, dst) + 0.5
                    expected = np.concatenate([mapped[:n], mapped[n:] - mapped[:n]], axis=1)
                    np.testing.assert_array_equal(geometry.boxes(boxes, src, dst), expected)
    assert geometry.boxes(np.zeros((0, 4)), Frame.INPUT, Frame.WORKING).shape == (0, 4)
