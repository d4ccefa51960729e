"""The mesh walker atlas: a closed, outward-facing body, planted, one standing height tall."""

from __future__ import annotations

import numpy as np

from emts.synth.atlas import REGIONS, load_atlas


def _signed_volume(vertices: np.ndarray, faces: np.ndarray) -> float:
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def test_atlas_holds_standing_and_walking_poses_of_several_bodies():
    atlas = load_atlas()
    assert atlas.bodies >= 4 and atlas.phases >= 8
    assert atlas.faces.min() == 0 and atlas.faces.max() == atlas.vertex_count - 1
    assert set(np.unique(atlas.region)) == set(range(len(REGIONS)))
    assert atlas.walk.shape == (atlas.bodies, atlas.phases, atlas.vertex_count, 3)


def test_every_pose_stands_on_the_ground_about_one_height_tall():
    atlas = load_atlas()
    for body in range(atlas.bodies):
        np.testing.assert_allclose(np.ptp(atlas.stand[body][:, 2]), 1.0, atol=2e-3)
        for pose in atlas.walk[body]:
            assert abs(pose[:, 2].min()) < 2e-3  # the stance foot on the ground
            assert 0.9 < pose[:, 2].max() < 1.03  # the walking bob: the head a little up or down


def test_surface_winds_outwards_with_a_human_volume():
    # Face culling keeps the triangles whose normal points at the camera: that needs outward
    # winding, i.e. a positive signed volume. A 1.7 m, 65 kg person is ~0.065 m^3 = 0.013 H^3.
    atlas = load_atlas()
    for body in range(atlas.bodies):
        volume = _signed_volume(atlas.stand[body].astype(np.float64), atlas.faces)
        assert 0.006 < volume < 0.03


def test_pose_interpolates_between_phases_and_blends_to_standing():
    atlas = load_atlas()
    step = 1.0 / atlas.phases
    np.testing.assert_allclose(atlas.pose(0, 2 * step, 1.0), atlas.walk[0, 2], atol=1e-6)
    half = atlas.pose(0, 2.5 * step, 1.0)
    np.testing.assert_allclose(half, 0.5 * (atlas.walk[0, 2] + atlas.walk[0, 3]), atol=1e-5)
    np.testing.assert_allclose(atlas.pose(0, 0.3, 0.0), atlas.stand[0], atol=1e-6)
    np.testing.assert_allclose(atlas.pose(0, 1.0 + 2 * step, 1.0), atlas.walk[0, 2], atol=1e-5)
