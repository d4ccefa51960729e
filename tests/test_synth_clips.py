"""The curriculum's clips: labels, determinism, split hygiene and the cached channels (§4)."""

import json

import numpy as np
import pytest

from emts.front_end import MotionFrontEnd
from emts.synth.clips import PERSON_HEIGHT_RANGE, ClipSpec, log_uniform, render_clip
from emts.synth.generate import generate_set
from emts.synth.plates import HELDOUT_EVERY, ID_BLOCK, hituav_split
from emts.synth.store import ClipSet


@pytest.fixture(scope="module")
def small_sets(tmp_path_factory):
    """Six Tier-1 and six negative clips on procedural plates, generated in-process."""
    root = tmp_path_factory.mktemp("sets")
    generate_set("tier1", root / "tier1", clips=6, seed=11, workers=1, progress=False)
    generate_set("negatives", root / "negatives", clips=6, seed=11, workers=1, progress=False)
    return root


def test_same_spec_renders_the_same_clip():
    a = render_clip(ClipSpec("tier1", "train", 5, 3))
    b = render_clip(ClipSpec("tier1", "train", 5, 3))
    assert a.jpegs == b.jpegs and a.labels == b.labels
    c = render_clip(ClipSpec("tier1", "heldout", 5, 3))
    assert c.jpegs != a.jpegs


def test_cached_channels_are_what_stage_a_b_returns_for_the_stored_frames(small_sets):
    clip = ClipSet(small_sets / "tier1")[2]
    front = MotionFrontEnd()
    fresh = np.stack([front.step(frame).channels for frame in clip.frames])
    assert clip.channels.shape == fresh.shape == (18, 3, 192, 256)
    np.testing.assert_array_equal(clip.channels[:, 0], fresh[:, 0])  # L: exact
    # D is stored as float16; R is rebuilt from it by Stage B's own function.
    np.testing.assert_allclose(clip.channels[:, 2], fresh[:, 2], atol=5e-4)
    np.testing.assert_allclose(clip.channels[:, 1], fresh[:, 1], atol=5e-4)


def test_labels_have_the_documented_shape(small_sets):
    clip_set = ClipSet(small_sets / "tier1")
    assert clip_set.manifest["complete"] and clip_set.manifest["clips"] == 6
    for index in clip_set.indices:
        labels = clip_set.labels(index)
        assert len(labels["frames"]) == 18
        for frame in labels["frames"]:
            assert np.array(frame["camera_motion"]).shape == (2, 3)
            for person in frame["persons"]:
                x, y, w, h = person["box"]
                assert x >= 0 and y >= 0 and x + w <= 640 + 1e-6 and y + h <= 512 + 1e-6
                assert 0.0 <= person["visible"] <= 1.0
        assert labels["frames"][0]["camera_motion"] == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_an_incomplete_set_is_refused(small_sets, tmp_path):
    import shutil

    from emts.errors import BadInputError

    partial = tmp_path / "partial"
    shutil.copytree(small_sets / "tier1", partial)
    manifest = json.loads((partial / "manifest.json").read_text())
    (partial / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    with pytest.raises(BadInputError, match="incomplete"):
        ClipSet(partial)


def test_every_tier1_clip_has_persons_and_no_negative_clip_has_any(small_sets):
    for name, expect_persons in (("tier1", True), ("negatives", False)):
        clip_set = ClipSet(small_sets / name)
        for index in clip_set.indices:
            frames = clip_set.labels(index)["frames"]
            has_persons = any(f["persons"] for f in frames)
            assert has_persons == expect_persons


def test_animals_and_vehicles_are_never_labeled_as_persons():
    seen_kinds = set()
    for index in range(40):
        labels = render_clip(ClipSpec("negative", "train", 2, index)).labels
        for frame in labels["frames"]:
            assert frame["persons"] == []
            seen_kinds |= {d["kind"] for d in frame["distractors"]}
    assert {"animal", "vehicle"} <= seen_kinds
    assert "person" not in seen_kinds


def test_person_heights_are_log_uniform_over_the_configured_range():
    rng = np.random.default_rng(0)
    heights = np.array([log_uniform(rng, *PERSON_HEIGHT_RANGE) for _ in range(4000)])
    assert heights.min() >= PERSON_HEIGHT_RANGE[0] and heights.max() <= PERSON_HEIGHT_RANGE[1]
    logs = (np.log(heights) - np.log(PERSON_HEIGHT_RANGE[0])) / np.log(
        PERSON_HEIGHT_RANGE[1] / PERSON_HEIGHT_RANGE[0]
    )
    # Uniform in log: each decile of the log range holds about a tenth of the draws.
    counts = np.histogram(logs, bins=10, range=(0, 1))[0] / len(logs)
    assert np.abs(counts - 0.1).max() < 0.025


def test_rendered_persons_change_scale_by_at_most_2_5_percent_per_frame():
    ratios = []
    for index in range(12):
        frames = render_clip(ClipSpec("tier1", "train", 9, index)).labels["frames"]
        for before, after in zip(frames, frames[1:], strict=False):
            heights = {p["id"]: p["box"][3] for p in before["persons"] if p["visible"] > 0.99}
            for p in after["persons"]:
                if p["id"] in heights and p["visible"] > 0.99 and heights[p["id"]] > 40:
                    ratios.append(p["box"][3] / heights[p["id"]])
    ratios = np.array(ratios)
    assert len(ratios) > 50
    # Box heights also breathe with the gait and the camera zoom; the median change is the drift.
    assert np.median(np.abs(ratios - 1)) < 0.025


def test_held_out_plates_are_whole_id_blocks_never_used_in_training():
    names = [f"0_60_40_0_{i:05d}.jpg" for i in range(0, 10000, 7)]
    for name in names:
        block = int(name.split("_")[-1][:5]) // ID_BLOCK
        assert (hituav_split(name) == "heldout") == (block % HELDOUT_EVERY == 2)


def test_procedural_plates_record_their_split(small_sets):
    for name, split in (("tier1", "train"), ("negatives", "train")):
        clip_set = ClipSet(small_sets / name)
        for index in clip_set.indices:
            plate = clip_set.labels(index)["plate"]
            assert plate.startswith("procedural:") and f":{split}:" in plate


def test_export_writes_pngs_and_labels(small_sets, tmp_path):
    from emts.synth.preview import contact_sheet, export_clip

    out = export_clip(small_sets / "tier1", tmp_path / "clip", 1)
    assert len(list(out.glob("frame_*.png"))) == 18
    assert json.loads((out / "labels.json").read_text())["clip"] == 1
    sheet = contact_sheet(small_sets / "tier1", tmp_path / "sheet.png", clips=3)
    assert sheet.stat().st_size > 10_000


def test_mesh_walker_share_changes_the_persons_only_when_asked():
    plain = render_clip(ClipSpec("tier1", "train", 5, 3))
    zero = render_clip(ClipSpec("tier1", "train", 5, 3, mesh_walkers=0.0))
    meshes = render_clip(ClipSpec("tier1", "train", 5, 3, mesh_walkers=1.0))
    assert plain.jpegs == zero.jpegs  # share 0 draws nothing: old sets stay what they were
    assert meshes.jpegs != plain.jpegs
    persons = [p for frame in meshes.labels["frames"] for p in frame["persons"]]
    assert persons and all(p["box"][2] > 0 and p["box"][3] > 0 for p in persons)


def test_contrast_scale_multiplies_every_movers_contrast_and_draws_nothing():
    plain = render_clip(ClipSpec("tier1", "train", 5, 3))
    same = render_clip(ClipSpec("tier1", "train", 5, 3, contrast_scale=1.0))
    strong = render_clip(ClipSpec("tier1", "train", 5, 3, contrast_scale=2.0))
    assert plain.jpegs == same.jpegs  # scale 1: old sets stay what they were
    assert strong.jpegs != plain.jpegs
    for a, b in zip(plain.labels["frames"], strong.labels["frames"], strict=True):
        # the same scene (no extra draw): same persons in the same places, twice the contrast
        assert [p["box"] for p in a["persons"]] == [p["box"] for p in b["persons"]]
        assert [d["box"] for d in a["distractors"]] == [d["box"] for d in b["distractors"]]
        for p, q in zip(a["persons"], b["persons"], strict=True):
            assert q["contrast"] == pytest.approx(2 * p["contrast"], abs=2e-3)


def test_default_sets_are_rendered_at_the_calibrated_contrast(small_sets):
    """Default sets carry the curriculum's contrast scale (CONTRAST_SCALE) in the manifest,
    and a clip in them is the clip that ClipSpec renders at that scale."""
    from emts.synth.common import CONTRAST_SCALE

    assert CONTRAST_SCALE > 1
    clip_set = ClipSet(small_sets / "tier1")
    assert clip_set.manifest["contrast_scale"] == CONTRAST_SCALE
    at_scale = render_clip(ClipSpec("tier1", "train", 11, 0, contrast_scale=CONTRAST_SCALE))
    plain = render_clip(ClipSpec("tier1", "train", 11, 0))
    stored = clip_set[0].labels["frames"]
    assert stored == at_scale.labels["frames"] != plain.labels["frames"]  # contrasts differ


def test_no_hard_shade_renders_the_clips_as_before():
    plain = render_clip(ClipSpec("tier1", "train", 5, 3))
    off = render_clip(ClipSpec("tier1", "train", 5, 3, hard_shade=0.0))
    assert plain.jpegs == off.jpegs and plain.labels == off.labels
    assert "hard_shade" not in plain.labels["scene"]
    assert all("shaded" not in p for f in plain.labels["frames"] for p in f["persons"])


def test_hard_shade_is_fixed_to_the_ground_and_darkens_everything_in_it():
    from emts.synth.phenomena import HardShade

    rng = np.random.default_rng(3)
    region = (np.array([100.0, 80.0]), np.array([740.0, 592.0]))
    for _ in range(6):
        shade = HardShade.random(rng, (840, 672), region, 40.0)
        assert shade.kind in ("building", "canopy")
        assert 0.45 <= shade.strength <= 0.85
        assert shade.mask.min() >= 0 and shade.mask.max() <= 1 + 1e-5  # (a blur's rounding)
        pose = np.array([[1.0, 0.0, -100.0], [0.0, 1.0, -80.0]])
        seen = shade.coverage(pose, (640, 512))
        assert 0.02 < seen.mean() < 0.98  # its edge crosses the view
        # the camera moves 10 px right: the shade moves 10 px left in the frame
        moved = shade.coverage(pose - np.array([[0, 0, 10.0], [0, 0, 0]]), (640, 512))
        np.testing.assert_allclose(moved[:, :-12], seen[:, 10:-2], atol=1e-4)
        frame = np.full((512, 640), 200.0, np.float32)
        shade.apply(frame, seen)
        np.testing.assert_allclose(frame, 200.0 * (1 - shade.strength * seen), rtol=1e-5)


def test_hard_shade_labels_each_person_with_the_share_of_them_in_shade():
    shaded = []
    for index in range(8):
        clip = render_clip(ClipSpec("tier1", "train", 5, index, hard_shade=1.0))
        scene = clip.labels["scene"]
        persons = [p for f in clip.labels["frames"] for p in f["persons"]]
        if "hard_shade" not in scene:  # (not a sunlit scene: a warm thermal body, night)
            assert all("shaded" not in p for p in persons)
            continue
        assert all(0.0 <= p["shaded"] <= 1.0 for p in persons)
        shaded += [p["shaded"] for p in persons]
    assert shaded and max(shaded) > 0.9  # someone walks in the shade


def test_a_set_made_with_hard_shade_says_so_in_its_manifest(tmp_path):
    from emts.cli import main

    assert main(["synth", "bench", "--out", str(tmp_path / "b"), "--clips", "2",
                 "--workers", "1", "--hard-shade", "1"]) == 0  # fmt: skip
    clip_set = ClipSet(tmp_path / "b")
    assert clip_set.manifest["hard_shade"] == 1.0
    made = [render_clip(ClipSpec("tier1", "heldout", 0, i, contrast_scale=2.6, hard_shade=1.0))
            for i in range(2)]  # fmt: skip
    assert [clip_set[i].labels["frames"] for i in range(2)] == [c.labels["frames"] for c in made]
