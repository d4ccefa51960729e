"""Procedural actors: gait, projection, drift, rendering contract, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emts.synth.actors import random_actor
from emts.synth.actors.base import FPS, MAX_SCALE_RATE, BehaviourEvent, Sunlight
from emts.synth.actors.quadruped import Quadruped
from emts.synth.actors.rigid_mover import RigidMover
from emts.synth.actors.walker import GAIT_HZ_RANGE, MeshWalker, Walker

FRAME_SIZE = (640, 512)
FRAME_CENTRE = np.array([320.0, 256.0])
OBLIQUE = math.radians(30.0)
MID = math.radians(45.0)
NADIR = math.radians(90.0)
# A walker's reachable speed range (heights / s): stride 0.75-0.85 H at 1.5-2.5 steps/s.
WALKING_SPEED_RANGE = (0.5, 1.1)


def _walker(**overrides) -> Walker:
    """A plain walker: heading right, no events, no drift, no shadow."""
    params = dict(
        identity=1,
        ground_position=FRAME_CENTRE.copy(),
        height_px=60.0,
        pitch_rad=MID,
        heading_rad=0.0,
    )
    params.update(overrides)
    return Walker(**params)


def _following_pose(actor, anchor=FRAME_CENTRE) -> np.ndarray:
    """Translation-only pose that keeps the actor's ground point at ``anchor``."""
    offset = anchor - actor.ground_position
    return np.array([[1.0, 0.0, offset[0]], [0.0, 1.0, offset[1]]])


def _alpha_centroid(sprite) -> np.ndarray:
    alpha = sprite.alpha.values
    rows, cols = np.indices(alpha.shape)
    mass = alpha.sum()
    return np.array(
        [
            sprite.alpha.x0 + (cols * alpha).sum() / mass,
            sprite.alpha.y0 + (rows * alpha).sum() / mass,
        ]
    )


def _peak_hz(signal: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(signal - signal.mean()))
    frequencies = np.fft.rfftfreq(len(signal), 1.0 / FPS)
    return float(frequencies[1:][np.argmax(spectrum[1:])])


def _lower_body_spread(sprite) -> float:
    """Alpha-weighted horizontal std of the lower 40 % of the box: the legs' fore-aft spread."""
    x, y, _, h = sprite.box.astype(int)
    alpha = sprite.alpha.values
    top = y + int(0.6 * h) - sprite.alpha.y0
    legs = alpha[top : y + h - sprite.alpha.y0]
    columns = np.arange(legs.shape[1])[None, :]
    mean = (legs * columns).sum() / legs.sum()
    return float(np.sqrt((legs * (columns - mean) ** 2).sum() / legs.sum()))


# ------------------------------------------------------------------------------- gait


@pytest.mark.parametrize("gait_hz", [1.6, 2.3])
def test_leg_spread_oscillates_at_the_step_frequency(gait_hz):
    # gait_hz is the cadence (steps/s): the legs' fore-aft spread, symmetric in the two legs,
    # peaks once per step, i.e. at gait_hz (each single leg cycles at gait_hz / 2, see below).
    walker = _walker(gait_hz=gait_hz)
    frames = 128  # 0.23 Hz bins at 30 fps
    spread = []
    for _ in range(frames):
        spread.append(_lower_body_spread(walker.render(_following_pose(walker), FRAME_SIZE)))
        walker.step()
    peak = _peak_hz(np.array(spread))
    assert GAIT_HZ_RANGE[0] <= peak <= GAIT_HZ_RANGE[1]
    assert abs(peak - gait_hz) <= FPS / frames + 1e-9


@pytest.mark.parametrize("gait_hz", [1.6, 2.3])
def test_each_leg_cycles_at_half_the_step_frequency(gait_hz):
    walker = _walker(gait_hz=gait_hz)
    frames = 128
    ankle_forward = []
    for _ in range(frames):
        ankle_forward.append(walker.joints()["right_ankle"][0])
        walker.step()
    assert abs(_peak_hz(np.array(ankle_forward)) - gait_hz / 2) <= FPS / frames + 1e-9


def test_stance_foot_stays_planted_while_the_body_travels():
    walker = _walker(gait_hz=2.0)
    travelled, previous = 0.0, None
    slips = []
    for _ in range(60):
        joints = walker.joints()
        ankles = {side: joints[f"{side}_ankle"] for side in ("left", "right")}
        planted = min(ankles, key=lambda side: ankles[side][2])
        world_x = travelled + ankles[planted][0]
        if previous is not None and previous[0] == planted:
            slips.append(abs(world_x - previous[1]))
        previous = (planted, world_x)
        travelled += walker.speed_hps / FPS
        walker.step()
    body_step = walker.speed_hps / FPS
    assert np.median(slips) < 0.25 * body_step
    assert max(slips) < body_step


def test_nadir_walker_is_a_blob_much_shorter_than_an_oblique_one():
    oblique = _walker(pitch_rad=OBLIQUE).render(np.eye(3), FRAME_SIZE)
    nadir = _walker(pitch_rad=NADIR).render(np.eye(3), FRAME_SIZE)
    assert oblique.box[3] > 0.8 * 60.0 * math.cos(OBLIQUE)
    assert nadir.box[3] < 0.5 * oblique.box[3]


# ------------------------------------------------------------------------------ kinds


def test_animals_and_rigid_movers_are_never_persons():
    rng = np.random.default_rng(3)
    for kind in ("animal", "vehicle", "bicycle"):
        for identity in range(10):
            actor = random_actor(rng, kind, FRAME_CENTRE, 40.0, MID, identity)
            assert actor.kind == kind != "person"
            sprite = actor.render(np.eye(3), FRAME_SIZE)
            assert sprite is not None and sprite.kind == kind and sprite.identity == identity
    assert Quadruped(identity=1, ground_position=FRAME_CENTRE, height_px=20.0, pitch_rad=MID).kind
    assert RigidMover(identity=1, ground_position=FRAME_CENTRE, height_px=20.0, pitch_rad=MID).kind
    assert random_actor(rng, "person", FRAME_CENTRE, 40.0, MID, 1).kind == "person"


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        random_actor(np.random.default_rng(0), "dragon", FRAME_CENTRE, 40.0, MID, 1)


# --------------------------------------------------------------------------- motion


def test_height_drifts_geometrically_at_a_bounded_rate():
    rng = np.random.default_rng(5)
    rates = []
    for identity in range(40):
        walker = Walker.random(rng, FRAME_CENTRE, 30.0, MID, identity)
        rates.append(walker.scale_rate)
        for _ in range(17):
            walker.step()
        assert walker.height_px == pytest.approx(30.0 * (1 + walker.scale_rate) ** 17, rel=1e-9)
    assert max(abs(rate) for rate in rates) <= MAX_SCALE_RATE
    assert max(abs(rate) for rate in rates) > 0.5 * MAX_SCALE_RATE  # the range is used


def test_standing_person_stays_put_and_walkers_move_at_walking_speed():
    standing = _walker(behaviour="standing")
    start = standing.ground_position.copy()
    for _ in range(30):
        standing.step()
    np.testing.assert_array_equal(standing.ground_position, start)

    rng = np.random.default_rng(11)
    for identity in range(20):
        walker = Walker.random(
            rng, FRAME_CENTRE, 50.0, MID, identity, heading_rad=0.0, schedule=(), scale_rate=0.0
        )
        walker.behaviour = "walking"
        start = walker.ground_position.copy()
        for _ in range(int(FPS)):
            walker.step()
        heights_per_second = np.linalg.norm(walker.ground_position - start) / 50.0
        assert WALKING_SPEED_RANGE[0] <= heights_per_second <= WALKING_SPEED_RANGE[1]
        assert heights_per_second == pytest.approx(walker.stride_length * walker.gait_hz / 2)


def test_pause_stops_and_resumes_and_turn_changes_heading_smoothly():
    walker = _walker(
        schedule=(
            BehaviourEvent(10, 20, "pause"),
            BehaviourEvent(40, 20, "turn", math.pi / 2),
        )
    )
    positions, headings = [], []
    for _ in range(70):
        positions.append(walker.ground_position.copy())
        headings.append(walker.heading_rad)
        walker.step()
    speeds = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    assert speeds[19] < 0.01 * speeds[0]  # mid-pause
    assert speeds[35] == pytest.approx(speeds[0])  # resumed
    assert headings[-1] == pytest.approx(math.pi / 2)
    assert np.abs(np.diff(headings)).max() < 0.15  # no jump


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("kind", ["person", "mesh-person", "animal", "vehicle", "bicycle"])
def test_sprite_patches_agree_and_box_lies_inside_them(kind):
    rng = np.random.default_rng(7)
    pose = np.array([[0.9, -0.2, 30.0], [0.2, 0.9, -20.0]])  # some roll and zoom
    actor = random_actor(
        rng, kind, FRAME_CENTRE, 35.0, OBLIQUE, 4, sun=Sunlight(1.0, math.radians(30), 0.5)
    )
    actor.step()
    sprite = actor.render(pose, FRAME_SIZE)
    alpha, contrast = sprite.alpha, sprite.contrast
    assert alpha.values.dtype == np.float32 and contrast.values.dtype == np.float32
    assert alpha.values.min() >= 0.0 and alpha.values.max() <= 1.0
    assert alpha.values.max() > 0.99  # a solid body
    assert (alpha.x0, alpha.y0, alpha.shape) == (contrast.x0, contrast.y0, contrast.shape)
    x, y, w, h = sprite.box
    assert alpha.x0 <= x and x + w <= alpha.x0 + alpha.shape[1]
    assert alpha.y0 <= y and y + h <= alpha.y0 + alpha.shape[0]
    shadow = sprite.shadow
    assert shadow is not None and shadow.values.min() >= 0.0 and shadow.values.max() <= 0.5 + 1e-6
    assert np.isfinite(contrast.values).all()


def test_contrast_carries_the_clothing_values():
    clothing = {"skin": 2.0, "top": -3.0, "bottom": 0.5}
    sprite = _walker(height_px=80.0, pitch_rad=OBLIQUE, part_contrast=clothing).render(
        np.eye(3), FRAME_SIZE
    )
    solid = sprite.contrast.values[sprite.alpha.values > 0.99]
    for value in clothing.values():
        assert np.isclose(solid, value, atol=1e-3).any()
    assert solid.min() >= -3.0 - 1e-3 and solid.max() <= 2.0 + 1e-3


def test_shadow_is_not_part_of_the_box_and_moves_with_the_person():
    long_shadow = Sunlight(azimuth_rad=2.0, elevation_rad=math.radians(15), strength=0.6)
    plain = _walker(pitch_rad=OBLIQUE).render(np.eye(3), FRAME_SIZE)
    walker = _walker(pitch_rad=OBLIQUE, sun=long_shadow)
    shaded = walker.render(np.eye(3), FRAME_SIZE)
    assert plain.shadow is None
    np.testing.assert_array_equal(shaded.box, plain.box)
    # The 15-degree-sun shadow is ~3.7 heights long, far outside the body's patch.
    assert shaded.shadow.shape[1] > 2 * shaded.alpha.shape[1]
    gap = np.array([shaded.shadow.x0 - shaded.box[0], shaded.shadow.y0 - shaded.box[1]])
    for _ in range(30):
        walker.step()
    later = walker.render(np.eye(3), FRAME_SIZE)
    later_gap = np.array([later.shadow.x0 - later.box[0], later.shadow.y0 - later.box[1]])
    assert later.box[0] > shaded.box[0] + 10  # the person walked on ...
    assert np.abs(later_gap - gap).max() <= 3  # ... and the shadow came along


def test_same_seed_gives_identical_sprites():
    def run(seed):
        rng = np.random.default_rng(seed)
        actors = [
            random_actor(rng, kind, FRAME_CENTRE, 40.0, MID, i)
            for i, kind in enumerate(["person", "mesh-person", "animal", "vehicle", "bicycle"])
        ]
        out = []
        for _ in range(5):
            for actor in actors:
                actor.step()
                out.append(actor.render(np.eye(3), FRAME_SIZE))
        return out

    first, second = run(42), run(42)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a.alpha.values, b.alpha.values)
        np.testing.assert_array_equal(a.contrast.values, b.contrast.values)
        np.testing.assert_array_equal(a.box, b.box)
    different = run(43)
    assert any(a.alpha.shape != b.alpha.shape for a, b in zip(first, different, strict=True))


def test_walker_centroid_moves_smoothly_without_pixel_snapping():
    walker = _walker(height_px=30.0, pitch_rad=OBLIQUE)
    speed_px = walker.speed_hps * walker.height_px / FPS
    centroids = []
    for _ in range(40):
        centroids.append(_alpha_centroid(walker.render(np.eye(3), FRAME_SIZE)))
        walker.step()
    jumps = np.linalg.norm(np.diff(centroids, axis=0), axis=1)
    assert jumps.max() <= speed_px + 0.5


def test_slow_rigid_mover_advances_by_sub_pixel_steps():
    car = RigidMover(
        identity=1, ground_position=FRAME_CENTRE, height_px=12.0, pitch_rad=MID, speed_hps=0.75
    )
    step_px = car.speed_hps * car.height_px / FPS  # 0.3 px / frame
    centroids = []
    for _ in range(12):
        centroids.append(_alpha_centroid(car.render(np.eye(3), FRAME_SIZE)))
        car.step()
    moves = np.diff(np.array(centroids)[:, 0])
    np.testing.assert_allclose(moves, step_px, atol=0.02)


def test_render_returns_none_far_outside_the_frame():
    for position in ([-500.0, 256.0], [320.0, 5000.0], [2000.0, -900.0]):
        assert _walker(ground_position=np.array(position)).render(np.eye(3), FRAME_SIZE) is None
    # Half-way out is still drawn, its box reaching past the edge.
    sprite = _walker(ground_position=np.array([1.0, 256.0])).render(np.eye(3), FRAME_SIZE)
    assert sprite is not None and sprite.box[0] < 0


# --------------------------------------------------------------------------- mesh walker


def _mesh_walker(**overrides) -> MeshWalker:
    """A mesh walker heading right, no events, no drift, no shadow (cf. ``_walker``)."""
    params = dict(identity=1, ground_position=FRAME_CENTRE.copy(), height_px=60.0, pitch_rad=MID)
    params.update(overrides)
    return MeshWalker(**params)


def test_mesh_walker_legs_swing_at_the_step_frequency_like_the_procedural_one():
    walker = _mesh_walker(gait_hz=2.0)
    spread = []
    for _ in range(128):
        spread.append(_lower_body_spread(walker.render(_following_pose(walker), FRAME_SIZE)))
        walker.step()
    assert abs(_peak_hz(np.array(spread)) - 2.0) <= FPS / 128 + 1e-9
    assert np.ptp(spread) > 1.0  # px: the legs visibly open and close


def test_mesh_walker_is_as_tall_as_the_procedural_one_and_a_blob_at_nadir():
    for pitch in (OBLIQUE, MID):
        mesh = _mesh_walker(pitch_rad=pitch).render(np.eye(3), FRAME_SIZE)
        capsules = _walker(pitch_rad=pitch).render(np.eye(3), FRAME_SIZE)
        assert abs(mesh.box[3] - capsules.box[3]) <= 0.12 * capsules.box[3]
    nadir = _mesh_walker(pitch_rad=NADIR).render(np.eye(3), FRAME_SIZE)
    oblique = _mesh_walker(pitch_rad=OBLIQUE).render(np.eye(3), FRAME_SIZE)
    assert nadir.box[3] < 0.5 * oblique.box[3]


def test_mesh_walker_pause_blends_into_the_standing_pose_and_stands_still():
    standing = _mesh_walker(behaviour="standing")
    first = standing.render(np.eye(3), FRAME_SIZE)
    for _ in range(10):
        standing.step()
    later = standing.render(np.eye(3), FRAME_SIZE)
    np.testing.assert_array_equal(standing.ground_position, FRAME_CENTRE)
    assert abs(_alpha_centroid(later) - _alpha_centroid(first)).max() < 0.5  # only the sway


def test_mesh_walker_is_shaded_by_the_sun_only_when_asked():
    clothing = {"skin": -2.0, "top": -2.0, "bottom": -2.0}
    sun = Sunlight(azimuth_rad=0.5, elevation_rad=math.radians(40), strength=0.5)
    for shading, spread in ((0.0, (0.0, 1e-3)), (1.5, (0.2, 1.5))):
        sprite = _mesh_walker(
            height_px=90.0, pitch_rad=OBLIQUE, part_contrast=clothing, shading=shading, sun=sun
        ).render(np.eye(3), FRAME_SIZE)
        solid = sprite.contrast.values[sprite.alpha.values > 0.99]
        assert spread[0] <= np.ptp(solid) <= spread[1] + 1e-6
        assert abs(np.median(solid) + 2.0) <= shading / 2 + 1e-3  # levels within +-shading / 2


def test_mesh_walker_garments_follow_the_clothing_options():
    clothing = {"skin": 3.0, "top": -3.0, "bottom": -3.0}

    def skin_share(**garments) -> float:
        sprite = _mesh_walker(height_px=90.0, pitch_rad=OBLIQUE, part_contrast=clothing, **garments)
        solid = sprite.render(np.eye(3), FRAME_SIZE).contrast.values
        return float((solid > 2.5).mean())

    covered = skin_share()
    assert skin_share(short_sleeves=True) > covered
    assert skin_share(shorts=True) > skin_share(short_sleeves=True)
