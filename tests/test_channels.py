import cv2
import numpy as np
import pytest

from conftest import compose, render, similarity
from emts.config import ChannelConfig
from emts.geometry import WORKING_TO_NETWORK
from emts.stages.a_ego_motion import EgoMotion
from emts.stages.b_channels import (
    CHANNEL_RANGES,
    RESIDUAL_GAIN_FLOOR,
    RESIDUAL_REFERENCE,
    MotionChannels,
    motion_in_network,
    network_image,
    normalize_residual_level,
    residual_gain,
    residual_level,
)

BASE = similarity(0.0, 1.0, -80.0, -80.0)
# Away from the borders: 16 network px (two stride-8 cells) in from each side of the content.
INTERIOR = (slice(16, 192 - 16), slice(8 + 16, 256 - 8 - 16))


def _pair(scene, motion):
    return render(scene, BASE), render(scene, compose(motion, BASE))


def _channels(first, second, motion, config=None):
    stage_b = MotionChannels(config)
    stage_b.update(first, EgoMotion())
    return stage_b.update(second, EgoMotion(np.asarray(motion, np.float64)))


def test_channels_have_the_documented_shape_dtype_and_ranges(aerial_scene):
    motion = similarity(0.01, 1.01, 5.0, -3.0)
    stack = _channels(*_pair(aerial_scene, motion), motion)
    assert stack.shape == (3, 192, 256) and stack.dtype == np.float32
    for index, name in enumerate(("L", "R", "D")):
        low, high = CHANNEL_RANGES[name]
        assert low <= stack[index].min() and stack[index].max() <= high


def test_first_frame_has_no_motion():
    stack = MotionChannels().update(np.full((512, 640), 90, np.uint8), EgoMotion())
    assert not stack[1:].any()
    np.testing.assert_allclose(stack[0][:, 8:248], 90 / 255, atol=1e-6)


@pytest.mark.parametrize("warp_at", ["network", "working"])
@pytest.mark.parametrize(
    "motion", [(0.0, 1.0, 15.0, 0.0), (0.02, 1.0, 0.0, 0.0), (-0.01, 1.02, 6.0, 9.0)]
)
def test_exact_warp_of_a_static_scene_leaves_no_residual_away_from_borders(
    aerial_scene, motion, warp_at
):
    m = similarity(*motion)
    stack = _channels(*_pair(aerial_scene, m), m, ChannelConfig(warp_at=warp_at))
    residual, difference = stack[1][INTERIOR], stack[2][INTERIOR]
    # Bilinear resampling of real texture leaves a little; motion itself would be ~0.1+.
    assert np.percentile(residual, 99) < 0.02 and residual.mean() < 0.005
    assert np.abs(difference).mean() < 0.005


def test_without_ego_compensation_camera_motion_lights_up_everything(aerial_scene):
    m = similarity(0.0, 1.0, 15.0, 0.0)
    first, second = _pair(aerial_scene, m)
    compensated = _channels(first, second, m)
    raw = _channels(first, second, m, ChannelConfig(ego_compensation=False))
    assert raw[1][INTERIOR].mean() > 10 * compensated[1][INTERIOR].mean()


@pytest.mark.parametrize("warp_at", ["network", "working"])
def test_a_moving_square_lights_up_r_and_nothing_else(aerial_scene, warp_at):
    m = similarity(0.0, 1.0, 8.0, 3.0)
    first, second = _pair(aerial_scene, m)
    first, second = first.copy(), second.copy()
    cv2.rectangle(first, (300, 240), (320, 270), 255, -1)  # 20x30 working px square...
    cv2.rectangle(second, (306, 240), (326, 270), 255, -1)  # ...moved 6 px right in the frame
    stack = _channels(first, second, m, ChannelConfig(warp_at=warp_at))
    residual = stack[1]
    # The square spans network x ~ 8 + 0.375 * (300..326) = 120..130, y = 90..101.
    square = residual[86:106, 114:136]
    elsewhere = residual[INTERIOR].copy()
    elsewhere[86 - 16 : 106 - 16, 114 - 24 : 136 - 24] = 0
    assert square.max() > 0.2
    assert square.max() > 10 * np.percentile(elsewhere, 99.5)
    assert np.unravel_index(np.argmax(residual), residual.shape)[1] in range(114, 136)


def test_padding_columns_carry_no_motion(aerial_scene):
    m = similarity(0.0, 1.0, 12.0, 5.0)
    stack = _channels(*_pair(aerial_scene, m), m, ChannelConfig(ego_compensation=False))
    assert not stack[1:, :, :8].any() and not stack[1:, :, 248:].any()


def test_motion_in_network_coordinates_scales_the_translation():
    m = motion_in_network(np.array([[1.0, 0.0, 16.0], [0.0, 1.0, -8.0]]))
    np.testing.assert_allclose(m, [[1, 0, 6.0], [0, 1, -3.0]])


@pytest.mark.parametrize("kind", ["noise", "scene", "flat"])
def test_network_image_equals_the_opencv_area_letterbox_bit_for_bit(aerial_scene, kind):
    rng = np.random.default_rng(7)
    frame = {
        "noise": rng.integers(0, 256, (512, 640), np.uint8),
        "scene": render(aerial_scene, BASE),
        "flat": np.full((512, 640), 255, np.uint8),
    }[kind]
    expected = WORKING_TO_NETWORK.apply(frame).astype(np.float32) * np.float32(1.0 / 255.0)
    np.testing.assert_array_equal(network_image(frame), expected)


# --- residual-level normalization (the detector's input, issue 8) ---------------------------


def _stack(level: float, rows: slice = slice(None), seed: int = 0) -> np.ndarray:
    """A (3, 192, 256) stack whose R has 90th percentile ``level`` on ``rows`` (0 elsewhere)."""
    rng = np.random.default_rng(seed)
    stack = np.zeros((3, 192, 256), np.float32)
    stack[0] = rng.uniform(0.2, 0.8, (192, 256))
    difference = rng.normal(0.0, 1.0, (192, 256)).astype(np.float32)
    stack[2, rows] = difference[rows]
    stack[1, rows] = np.abs(difference[rows])
    stack[1:, :, :8] = stack[1:, :, 248:] = 0.0
    stack[1:] *= level / residual_level(stack)
    return stack


def test_a_quiet_frame_passes_unchanged():
    stack = _stack(RESIDUAL_REFERENCE * 0.8)
    assert residual_gain(stack) == 1.0
    assert normalize_residual_level(stack) is stack


def test_a_loud_frame_is_brought_down_to_the_reference_as_a_lower_contrast_scene():
    stack = _stack(RESIDUAL_REFERENCE * 4)
    out = normalize_residual_level(stack)
    gain = residual_gain(stack)
    assert gain == pytest.approx(0.25, rel=1e-4)
    assert residual_level(out) == pytest.approx(RESIDUAL_REFERENCE, rel=1e-4)
    np.testing.assert_allclose(out[1:], stack[1:] * gain, atol=1e-7)
    # L shrinks about its mean, and the previous frame (L - D) exactly alike
    mean = stack[0, ::2, 8:248:2].mean()
    np.testing.assert_allclose(out[0] - mean, gain * (stack[0] - mean), atol=1e-6)
    previous, previous_out = stack[0] - stack[2], out[0] - out[2]
    np.testing.assert_allclose(previous_out - mean, gain * (previous - mean), atol=1e-6)
    assert out[0].min() >= 0.0 and out[0].max() <= 1.0


def test_letterbox_rows_do_not_dilute_the_level():
    band = _stack(RESIDUAL_REFERENCE * 3)
    letterboxed = band.copy()
    letterboxed[1:, :40] = letterboxed[1:, 150:] = 0.0  # rows a 16:9 input leaves empty
    level = residual_level(letterboxed)
    expected = np.percentile(letterboxed[1, 40:150:2, 8:248:2], 90)
    assert level == pytest.approx(expected, rel=2e-2)
    assert level > 2 * RESIDUAL_REFERENCE


def test_the_gain_has_a_floor_and_reference_zero_switches_it_off():
    stack = _stack(RESIDUAL_REFERENCE * 100)
    assert residual_gain(stack) == RESIDUAL_GAIN_FLOOR
    assert residual_gain(stack, reference=0.0) == 1.0
    assert normalize_residual_level(stack, reference=0.0) is stack
    assert residual_gain(np.zeros((3, 192, 256), np.float32)) == 1.0  # a stream's first frame


def test_a_batch_gets_a_gain_per_frame():
    quiet, loud = _stack(RESIDUAL_REFERENCE / 2), _stack(RESIDUAL_REFERENCE * 2, seed=1)
    out = normalize_residual_level(np.stack([quiet, loud]))
    np.testing.assert_array_equal(out[0], quiet)
    np.testing.assert_allclose(out[1], normalize_residual_level(loud))


def test_normalizing_twice_changes_nothing():
    once = normalize_residual_level(_stack(RESIDUAL_REFERENCE * 3))
    assert normalize_residual_level(once) is once


# --- another network size (a detector trained at 384x288) -----------------------------------


def test_stage_b_at_384x288_has_that_shape_and_quiet_padding(aerial_scene):
    from emts.geometry import network_letterbox

    m = similarity(0.0, 1.0, 12.0, 5.0)
    first, second = _pair(aerial_scene, m)
    stage_b = MotionChannels(ChannelConfig(ego_compensation=False), network_size=(384, 288))
    stage_b.update(first, EgoMotion())
    stack = stage_b.update(second, EgoMotion(np.asarray(m, np.float64)))
    assert stack.shape == (3, 288, 384) and stack.dtype == np.float32
    assert not stack[1:, :, :12].any() and not stack[1:, :, 372:].any()
    assert stack[1, :, 12:372].mean() > 0.01  # uncompensated camera motion lights up R
    expected = network_letterbox((384, 288)).apply(second).astype(np.float32) / np.float32(255)
    np.testing.assert_allclose(stack[0], expected, atol=1e-7)


def test_an_exact_warp_at_384x288_leaves_no_residual_inside(aerial_scene):
    m = similarity(0.02, 1.01, 6.0, -4.0)
    first, second = _pair(aerial_scene, m)
    stage_b = MotionChannels(network_size=(384, 288))
    stage_b.update(first, EgoMotion())
    stack = stage_b.update(second, EgoMotion(np.asarray(m, np.float64)))
    assert np.percentile(stack[1, 24:-24, 36:-36], 99) < 0.02
    np.testing.assert_allclose(
        motion_in_network(np.array([[1.0, 0.0, 16.0], [0.0, 1.0, -8.0]]), (384, 288)),
        [[1, 0, 9.0], [0, 1, -4.5]],
    )


@pytest.mark.parametrize("warp_at", ["network", "working"])
@pytest.mark.parametrize("size", [(256, 192), (512, 384)])
def test_stage_b_warps_by_stage_a_homography_where_it_has_one(aerial_scene, size, warp_at):
    """An oblique camera's change of perspective: the homography registers the ground, the
    similarity that approximates it leaves misregistration in R (at the paper's size and at
    the thermal model's)."""
    centre = np.array([[1, 0, 320.0], [0, 1, 256.0], [0, 0, 1]])
    truth = centre @ np.array([[1, 0, 4.0], [0, 1, -3.0], [0, 4e-5, 1]]) @ np.linalg.inv(centre)
    base = np.vstack([BASE, [0, 0, 1]])
    first, second = (
        np.clip(cv2.warpPerspective(aerial_scene, m @ base, (640, 512)), 0, 255).astype(np.uint8)
        for m in (np.eye(3), truth)
    )
    approximate = truth[:2] / truth[2, 2]  # the affine part: what a similarity fit gets near
    stacks = []
    for homography in (None, truth.copy()):
        stage_b = MotionChannels(ChannelConfig(warp_at=warp_at), network_size=size)
        stage_b.update(first, EgoMotion())
        motion = EgoMotion(approximate.copy(), "lk", 100, 1.0, homography)
        stacks.append(stage_b.update(second, motion))
    without, with_h = stacks
    k = size[0] // 16  # two stride-8 cells at 256x192, scaled with the size
    interior = (slice(k, size[1] - k), slice(size[0] // 32 + k, size[0] - size[0] // 32 - k))
    assert np.percentile(with_h[1][interior], 99) < 0.02 and with_h[1][interior].mean() < 0.005
    assert with_h[1][interior].mean() < 0.5 * without[1][interior].mean()


def test_stage_b_warps_the_network_image_by_default_and_refuses_an_unknown_warp():
    assert ChannelConfig().warp_at == "network"
    with pytest.raises(ValueError, match="warp_at"):
        MotionChannels(ChannelConfig(warp_at="input"))


def test_the_working_warp_keeps_l_and_a_still_scene_leaves_no_residual(aerial_scene):
    first, second = _pair(aerial_scene, similarity(0.0, 1.0, 0.0, 0.0))
    identity = similarity(0.0, 1.0, 0.0, 0.0)
    stacks = [
        _channels(first, second, identity, ChannelConfig(warp_at=at))
        for at in ("network", "working")
    ]
    np.testing.assert_array_equal(*stacks)


@pytest.mark.parametrize("motion", [(0.0, 1.0, 3.4, -2.6), (0.01, 1.0, 1.3, 0.7)])
def test_warping_before_the_shrink_leaves_less_texture_in_r(aerial_scene, motion):
    """A sub-pixel warp at the network size smooths the ground's texture and leaves it in R;
    both frames resampled alike on the 640x512 grid leave far less."""
    m = similarity(*motion)
    first, second = _pair(aerial_scene, m)
    network, working = (
        _channels(first, second, m, ChannelConfig(warp_at=at))[1][INTERIOR]
        for at in ("network", "working")
    )
    assert working.mean() < 0.8 * network.mean()  # 0.69 and 0.54 here
    assert np.percentile(working, 90) < 0.8 * np.percentile(network, 90)  # 0.52, 0.36


@pytest.mark.parametrize("size", [(256, 192), (512, 384)])
def test_the_working_warp_streams_what_each_pair_of_frames_gives_alone(aerial_scene, size):
    """Its two frame buffers are reused from frame to frame: a stream must still give, at
    every frame, the channels of that frame and the one before on their own."""
    config = ChannelConfig(warp_at="working")
    rng = np.random.default_rng(4)
    motions = [similarity(0.003 * k, 1.0, *rng.uniform(-4, 4, 2)) for k in range(5)]
    poses = [BASE]
    for m in motions[1:]:
        poses.append(compose(m, poses[-1]))
    frames = [render(aerial_scene, pose) for pose in poses]
    stream = MotionChannels(config, network_size=size)
    streamed = [
        stream.update(f, EgoMotion(np.asarray(m, np.float64)))
        for f, m in zip(frames, motions, strict=True)
    ]
    for t in range(1, len(frames)):
        alone = MotionChannels(config, network_size=size)
        alone.update(frames[t - 1], EgoMotion())
        pair = alone.update(frames[t], EgoMotion(np.asarray(motions[t], np.float64)))
        np.testing.assert_array_equal(streamed[t], pair)
    stream.reset()
    assert not stream.update(frames[0], EgoMotion())[1:].any()


def test_halved_channels_average_l_and_d_and_rebuild_r_as_stage_b_does():
    from emts.errors import BadInputError
    from emts.stages.b_channels import halved_channels, residual_from_difference

    rng = np.random.default_rng(0)
    channels = rng.uniform(-0.2, 1.0, (3, 384, 512)).astype(np.float32)
    small = halved_channels(channels)
    assert small.shape == (3, 192, 256) and small.dtype == np.float32
    blocks = channels.reshape(3, 192, 2, 256, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(small[0], blocks[0], atol=1e-5)
    np.testing.assert_allclose(small[2], blocks[2], atol=1e-5)
    np.testing.assert_allclose(small[1], residual_from_difference(blocks[2]), atol=1e-5)
    content = np.zeros((192, 256), bool)
    content[20:170] = True
    masked = halved_channels(channels, content)
    assert not masked[1:, ~content].any() and np.array_equal(masked[0], small[0])
    with pytest.raises(BadInputError):
        halved_channels(channels[:, :383])


def test_the_residual_level_samples_about_the_papers_grid_at_any_size():
    from emts.stages.b_channels import _sample_step

    assert [_sample_step(h) for h in (192, 240, 288, 384, 576)] == [2, 2, 2, 4, 6]
    rng = np.random.default_rng(1)
    stack = np.zeros((3, 384, 512), np.float32)
    stack[1] = rng.exponential(0.01, (384, 512))
    stack[1, :, :16] = stack[1, :, -16:] = 0.0  # padding columns
    level = residual_level(stack)
    assert level == pytest.approx(np.percentile(stack[1, :, 16:-16], 90), rel=0.03)


def _walk(scene, steps: int, square_step: float, rng_seed: int = 7):
    """A stream of a camera drifting over ``scene`` with a bright 12x24 square walking
    ``square_step`` working px a frame: (frames, Stage A motions)."""
    rng = np.random.default_rng(rng_seed)
    motions = [similarity(0.002 * k, 1.0, *rng.uniform(-5, 5, 2)) for k in range(steps)]
    poses = [BASE]
    for m in motions[1:]:
        poses.append(compose(m, poses[-1]))
    frames = []
    for t, pose in enumerate(poses):
        frame = render(scene, pose).copy()
        x = int(round(300 + square_step * t))
        cv2.rectangle(frame, (x, 240), (x + 12, 264), 255, -1)
        frames.append(frame)
    return frames, [EgoMotion(np.asarray(m, np.float64)) for m in motions]


@pytest.mark.parametrize("warp_at", ["network", "working"])
def test_r_over_three_frames_keeps_the_ground_quiet_and_triples_a_slow_walkers_trail(
    aerial_scene, warp_at
):
    """R over n frames brings the frame n back on through the product of Stage A's motions:
    a static scene stays quiet, a square moving 1 px a frame leaves a much stronger residual
    (its 1-px edges' difference, blurred and shrunk 2.5x, was faint), and D is still the
    previous frame's difference."""
    frames, motions = _walk(aerial_scene, 6, square_step=1.0)
    stacks = {}
    for n in (1, 3):
        stage_b = MotionChannels(ChannelConfig(warp_at=warp_at, residual_baseline=n))
        stacks[n] = [stage_b.update(f, m) for f, m in zip(frames, motions, strict=True)]
    one, three = stacks[1][-1], stacks[3][-1]
    np.testing.assert_array_equal(one[0], three[0])  # L
    np.testing.assert_array_equal(one[2], three[2])  # D: the previous frame's
    ground = three[1][INTERIOR].copy()
    ground[70 - 16 : 110 - 16, 100 - 24 : 150 - 24] = 0  # the square's trail
    assert np.percentile(ground, 99) < 0.03 and ground.mean() < 0.006
    trail = (slice(80, 112), slice(104, 148))
    assert three[1][trail].max() > 1.6 * one[1][trail].max()
    # the first frames compare with the oldest they have: the second is eq. 2's R
    np.testing.assert_array_equal(stacks[1][1], stacks[3][1])


def test_r_over_n_frames_restarts_with_the_stream_and_refuses_fewer_than_one(aerial_scene):
    frames, motions = _walk(aerial_scene, 4, square_step=2.0)
    stage_b = MotionChannels(ChannelConfig(warp_at="working", residual_baseline=3))
    for f, m in zip(frames, motions, strict=True):
        stage_b.update(f, m)
    stage_b.reset()
    assert not stage_b.update(frames[0], EgoMotion())[1:].any()
    again = stage_b.update(frames[1], motions[1])
    alone = MotionChannels(ChannelConfig(warp_at="working"))
    alone.update(frames[0], EgoMotion())
    np.testing.assert_array_equal(again, alone.update(frames[1], motions[1]))
    with pytest.raises(ValueError, match="residual_baseline"):
        MotionChannels(ChannelConfig(residual_baseline=0))


@pytest.mark.parametrize("warp_at", ["network", "working"])
def test_r_over_three_frames_is_eq2_of_the_frame_three_back_through_the_motions_product(
    aerial_scene, warp_at
):
    rng = np.random.default_rng(11)
    motions = [
        similarity(rng.uniform(-0.03, 0.03), rng.uniform(0.98, 1.03), *rng.uniform(-9, 9, 2))
        for _ in range(6)
    ]
    poses = [BASE]
    for m in motions[1:]:
        poses.append(compose(m, poses[-1]))
    frames = [render(aerial_scene, pose) for pose in poses]
    stream = MotionChannels(ChannelConfig(warp_at=warp_at, residual_baseline=3))
    streamed = [
        stream.update(f, EgoMotion(np.asarray(m, np.float64)))
        for f, m in zip(frames, motions, strict=True)
    ]
    for t in range(3, len(frames)):
        product = np.eye(3)
        for m in motions[t - 2 : t + 1]:
            product = np.vstack([m, [0, 0, 1]]) @ product
        alone = MotionChannels(ChannelConfig(warp_at=warp_at))
        alone.update(frames[t - 3], EgoMotion())
        pair = alone.update(frames[t], EgoMotion(product[:2].copy()))
        np.testing.assert_allclose(streamed[t][1], pair[1], atol=2e-4)


def test_halved_channels_keep_r_over_n_frames_for_the_coarse_pass(aerial_scene):
    """The coarse pass halves the fine pass's channels: R over 3 frames must stay R over 3
    frames there (rebuilt from the previous frame's D it would be eq. 2's R again)."""
    from emts.stages.b_channels import halved_channels

    frames, motions = _walk(aerial_scene, 6, square_step=1.0)
    config = ChannelConfig(warp_at="working", residual_baseline=3)
    fine, half = MotionChannels(config, (512, 384)), MotionChannels(config, (256, 192))
    for f, m in zip(frames, motions, strict=True):
        at_fine, at_half = fine.update(f, m), half.update(f, m)
    kept = halved_channels(at_fine, residual_baseline=3)
    rebuilt = halved_channels(at_fine)
    np.testing.assert_array_equal(kept[[0, 2]], rebuilt[[0, 2]])  # L and D alike
    trail = (slice(80, 112), slice(104, 148))
    truth = at_half[1][trail].ravel()
    assert np.corrcoef(kept[1][trail].ravel(), truth)[0, 1] > 0.95
    assert np.abs(kept[1][trail] - at_half[1][trail]).max() < 0.5 * truth.max()
    assert kept[1][trail].max() > 1.4 * rebuilt[1][trail].max()
