"""Stage E training recipe: BatchNorm folding, the mirror augmentation, the in-graph log."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from emts.train.verifier import (  # noqa: E402
    MIRROR,
    TrainOptions,
    Windows,
    _TrainingNet,
    export_verifier,
    train_verifier,
)


def test_folded_batchnorm_gives_the_training_net_outputs():
    torch.manual_seed(0)
    net = _TrainingNet(16, 8, log_eps=0.1, dropout=0.2, batchnorm=True)
    for norm in net.norms:
        norm.running_mean.uniform_(-1, 1)
        norm.running_var.uniform_(0.5, 2)
        norm.weight.data.uniform_(0.5, 2)
        norm.bias.data.uniform_(-1, 1)
    net.eval()
    x = torch.rand(5, 40, 16)
    torch.testing.assert_close(net.deployable()(x), net(x), atol=1e-5, rtol=0)


def test_merged_members_give_the_mean_of_their_logits(tmp_path):
    import onnxruntime as ort

    from emts.train.litert_export import verifier_from_onnx
    from emts.train.verifier import merge_members, train_members

    rng = np.random.default_rng(0)
    windows = Windows(rng.gamma(1.0, 0.5, (64, 40, 16)).astype(np.float32), np.arange(64) % 2.0, [])
    options = TrainOptions(epochs=1, width=6, hidden=5, log_eps=0.1, batchnorm=True, members=3)
    members = train_members(windows, options)
    x = torch.from_numpy(windows.x[:8])
    with torch.no_grad():
        logits = [m(x) for m in members]
        assert not torch.allclose(logits[0], logits[1])  # other seeds, other networks
        merged = merge_members(members)
        assert merged.features[0].out_channels == 18 and merged.head[1].out_features == 15
        torch.testing.assert_close(merged(x), torch.stack(logits).mean(0), atol=1e-5, rtol=0)
        path = export_verifier(merged, tmp_path / "merged.onnx")
        onnx_out = ort.InferenceSession(str(path)).run(None, {"descriptors": x.numpy()})[0]
        np.testing.assert_allclose(onnx_out, merged(x).numpy(), atol=1e-5)
        np.testing.assert_allclose(verifier_from_onnx(path)(x).numpy(), onnx_out, atol=1e-5)
    assert merge_members(members[:1]) is members[0]


def test_mirror_is_a_left_right_involution():
    assert sorted(MIRROR) == list(range(40))
    np.testing.assert_array_equal(MIRROR[MIRROR], np.arange(40))
    # row 0: column 0's magnitude <-> column 1's; bin 0-90 deg <-> 90-180 deg
    assert MIRROR[0] == 5 and MIRROR[1] == 7 and MIRROR[3] == 9


def test_log_model_round_trips_through_onnx(tmp_path):
    import onnxruntime as ort

    from emts.stages.e_verify import Verifier
    from emts.train.litert_export import verifier_from_onnx

    rng = np.random.default_rng(0)
    windows = Windows(
        rng.gamma(1.0, 0.5, (64, 40, 16)).astype(np.float32),
        (np.arange(64) % 2).astype(np.float32),
        [],
    )
    options = TrainOptions(epochs=1, width=8, hidden=4, log_eps=0.1, batchnorm=True, dropout=0.1)
    model = train_verifier(windows, options=options)
    path = export_verifier(model, tmp_path / "verifier.onnx")
    x = windows.x[:4]
    onnx_out = ort.InferenceSession(str(path)).run(None, {"descriptors": x})[0]
    with torch.no_grad():
        np.testing.assert_allclose(onnx_out, model(torch.from_numpy(x)).numpy(), atol=1e-5)
        rebuilt = verifier_from_onnx(path)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(rebuilt, onnx_out, atol=1e-5)
    assert Verifier(path).classify(x).shape == (4,)


def test_working_resolution_is_recorded_and_read_back(tmp_path):
    import cv2

    from emts.geometry import WORKING_GEOMETRY
    from emts.stages.e_verify import FrameView, Verifier

    rng = np.random.default_rng(0)
    windows = Windows(rng.random((8, 40, 16)).astype(np.float32), np.arange(8) % 2.0, [])
    model = train_verifier(windows, options=TrainOptions(epochs=1, width=4, hidden=4))
    network = Verifier(export_verifier(model, tmp_path / "network.onnx"))
    working = Verifier(export_verifier(model, tmp_path / "working.onnx", "working"))
    assert (network.resolution, working.resolution) == ("network", "working")
    scene = cv2.GaussianBlur(rng.integers(0, 255, (600, 720), np.uint8), (0, 0), 2)
    previous, current = scene[40:552, 40:680], scene[43:555, 45:685]  # camera moved (+5, +3)
    channels = np.zeros((3, 192, 256), np.float32)
    view = FrameView(channels, current, previous, np.array([[1, 0, -5], [0, 1, -3.0]]))
    with pytest.raises(ValueError):
        working.observe(view, np.array([100.0, 60, 12, 30]))  # no geometry to reach WORKING px
    view = FrameView(
        *(getattr(view, k) for k in ("channels", "working", "previous", "motion")), WORKING_GEOMETRY
    )
    working.observe(view, np.array([100.0, 60, 12, 30]))
    network.observe(channels, np.array([100.0, 60, 12, 30]))  # channels alone: the paper's input
    assert len(working.window) == len(network.window) == 1


def test_a_strided_clip_is_what_a_slower_camera_delivers():
    from emts.geometry import lift
    from emts.synth.clips import ClipSpec, render_clip
    from emts.synth.store import StoredClip
    from emts.train.verifier import frames_needed, strided_clip

    assert frames_needed(1) == 18 and frames_needed(3) == 52
    rendered = render_clip(ClipSpec("tier1", "train", 0, 1, frames=frames_needed(3)))
    clip = StoredClip(0, rendered.frames, None, rendered.labels)
    slow = strided_clip(clip, 3)
    assert len(slow.frames) == 18 and slow.channels.shape[0] == 18
    for j in (1, 7, 17):
        assert slow.frames[j] is clip.frames[3 * j]
        assert slow.labels["frames"][j]["persons"] == clip.labels["frames"][3 * j]["persons"]
        composed = np.eye(3)
        for k in (3 * j - 2, 3 * j - 1, 3 * j):
            composed = lift(np.array(clip.labels["frames"][k]["camera_motion"])) @ composed
        np.testing.assert_allclose(slow.labels["frames"][j]["camera_motion"], composed[:2])


def test_travel_is_ground_covered_in_body_heights_with_the_camera_removed():
    from emts.geometry import WORKING_GEOMETRY, Frame
    from emts.train.verifier import WINDOW_FRAMES, _travel

    pan = [[1.0, 0.0, -5.0], [0.0, 1.0, 0.0]]  # the scene moves 5 working px left per frame
    labels = {"frames": [{"camera_motion": pan} for _ in range(18)]}
    step = WORKING_GEOMETRY.motion(np.array(pan), Frame.WORKING, Frame.NETWORK)[0, 2]
    standing = [np.array([100.0 + step * (t - 2), 50, 4, 10]) for t in WINDOW_FRAMES]
    walking = [
        b + np.array([1.0 * (t - 2), 0, 0, 0]) for t, b in zip(WINDOW_FRAMES, standing, strict=True)
    ]
    assert _travel(labels, standing) == pytest.approx(0.0, abs=1e-9)
    assert _travel(labels, walking) == pytest.approx(1.5)  # 15 px over a 10-px body


def test_registration_noise_offsets_a_clips_motions_coherently():
    from emts.config import VerifierConfig
    from emts.synth.clips import ClipSpec, render_clip
    from emts.synth.store import StoredClip
    from emts.train.verifier import _ClipView

    rendered = render_clip(ClipSpec("negative", "train", 0, 2))
    clip = StoredClip(0, rendered.frames, None, rendered.labels)
    plain = _ClipView(clip, "working", VerifierConfig())
    noisy = _ClipView(clip, "working", VerifierConfig(), 1, 0.5, np.random.default_rng(3))
    shifts = np.array(
        [n[:, 2] - p[:, 2] for n, p in zip(noisy.motions, plain.motions, strict=True)]
    )
    np.testing.assert_allclose([n[:, :2] for n in noisy.motions], [p[:, :2] for p in plain.motions])
    assert np.abs(shifts.mean(axis=0)).max() > 2 * shifts.std(axis=0).max() / np.sqrt(len(shifts))
    assert 0.05 < shifts.std(axis=0).mean() < 0.4  # the per-frame part, sigma / 3


def test_a_stored_clip_set_can_be_served_at_a_lower_frame_rate(tmp_path):
    from emts.synth.generate import generate_set
    from emts.synth.store import ClipSet
    from emts.train.data import StoredClips
    from emts.train.verifier import strided_clip

    generate_set("tier1", tmp_path, clips=1, workers=1, progress=False)
    full = StoredClips(tmp_path, "tier1")
    slow = StoredClips(tmp_path, "tier1", frame_stride=3)
    assert len(full.light[0]) == 18 and len(slow.light[0]) == 6
    expected = strided_clip(ClipSet(tmp_path)[0], 3)
    np.testing.assert_array_equal(slow.light[0][4], full.light[0][12])  # L: the same frame
    np.testing.assert_array_equal(
        slow.difference[0], expected.channels[:, 2].astype(np.float16)
    )  # D: between frames 3 apart, Stage A/B run afresh
    assert not np.array_equal(slow.difference[0][4], full.difference[0][12])
    assert slow.labels[0]["frames"][4]["persons"] == full.labels[0]["frames"][12]["persons"]


def test_a_stored_clip_set_serves_r_over_n_frames_beside_the_previous_frames_d(tmp_path):
    from emts.front_end import channels_at
    from emts.synth.generate import generate_set
    from emts.synth.store import ClipSet
    from emts.train.data import StoredClips

    generate_set("tier1", tmp_path, clips=1, workers=1, progress=False)
    plain = StoredClips(tmp_path, "tier1")
    longer = StoredClips(tmp_path, "tier1", residual_baseline=3)
    expected = channels_at(ClipSet(tmp_path)[0].frames, residual_baseline=3)
    np.testing.assert_array_equal(longer.residual[0], expected[:, 1].astype(np.float16))
    np.testing.assert_array_equal(longer.light[0], plain.light[0])
    np.testing.assert_allclose(
        longer.difference[0].astype(np.float32), plain.difference[0].astype(np.float32), atol=2e-3
    )  # D: the previous frame's, as the set caches it (Stage A run again)
    rng = np.random.default_rng(0)
    light = longer.light[0]
    for _ in range(20):
        sample = longer.sample(rng, 4, 0)
        first = np.rint(sample.channels[0, 0] * 255).astype(np.uint8)
        start = next(t for t in range(len(light)) if np.array_equal(light[t], first))
        assert start >= 3  # R spans its 3 frames from the clip's 4th frame on
        np.testing.assert_array_equal(
            sample.channels[:, 1], longer.residual[0][start : start + 4].astype(np.float32)
        )
