"""Stage C training side: architecture, targets, losses, export (needs torch)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from emts.train.losses import detector_loss, focal_loss, supcon_loss  # noqa: E402
from emts.train.model import DetectorConfig, MicroDetector, count_macs  # noqa: E402
from emts.train.targets import MAX_OBJECTS, build_targets, gaussian_radius  # noqa: E402

TABLE_2_ROWS = {"stem": 464, "S1": 1496, "S2": 3424, "S3": 12984, "neck": 3120, "heads": 533}


def test_parameter_count_matches_table_2_rows_and_the_spec_range():
    model = MicroDetector()
    assert model.parameter_rows() == TABLE_2_ROWS
    total = sum(p.numel() for p in model.parameters())
    assert 21_900 <= total <= 22_100


def test_named_variants_keep_the_paper_model_and_widen_every_stage():
    from emts.train.model import DETECTOR_VARIANTS

    assert DETECTOR_VARIANTS["paper"] == DetectorConfig()
    wide = MicroDetector(DETECTOR_VARIANTS["wide"]).eval()
    assert sum(p.numel() for p in wide.parameters()) == 46_541
    assert 1.7 < count_macs(wide)["total"] / count_macs(MicroDetector())["total"] < 1.9
    heat, size, offset, embedding = wide(torch.zeros(1, 3, 192, 256))
    assert heat.shape == (1, 1, 24, 32) and embedding.shape == (1, 8, 24, 32)


def test_outputs_are_on_the_32x24_grid():
    heat, size, offset, embedding = MicroDetector().eval()(torch.zeros(2, 3, 192, 256))
    assert heat.shape == (2, 1, 24, 32) and size.shape == (2, 2, 24, 32)
    assert offset.shape == (2, 2, 24, 32) and embedding.shape == (2, 8, 24, 32)


def test_luminance_only_ablation_takes_one_channel():
    model = MicroDetector(DetectorConfig(in_channels=1)).eval()
    assert model(torch.zeros(1, 1, 192, 256))[0].shape == (1, 1, 24, 32)


def test_mac_counter_counts_the_stem_exactly_and_totals_about_15_mmacs():
    macs = count_macs(MicroDetector())
    assert macs["stem.0"] == 16 * 27 * 96 * 128  # 5.3 MMACs: the paper's Table 2 is too low
    assert 14e6 < macs["total"] < 16.5e6


def test_targets_put_a_peak_at_the_centre_cell_with_size_and_offset():
    t = build_targets(np.array([[84.0, 28.0, 48.0, 96.0]]), identities=[7])
    cx, cy = (84 + 24) / 8, (28 + 48) / 8  # 13.5, 9.5
    assert t.heatmap[0, 9, 13] == 1.0 and t.heatmap.max() == 1.0
    assert t.indices[0] == 9 * 32 + 13 and t.mask.sum() == 1 and t.identity[0] == 7
    np.testing.assert_allclose(t.offset[0], [cx - 13, cy - 9])
    np.testing.assert_allclose(np.exp(t.log_size[0]) * 8, [48, 96], rtol=1e-6)
    assert 0.0 < t.heatmap[0, 9, 14] < 1.0  # a size-adaptive Gaussian around the peak


def test_hidden_persons_become_ignore_regions_not_positives():
    t = build_targets(np.array([[100.0, 60.0, 16.0, 32.0]]), visible=[0.1])
    assert t.mask.sum() == 0 and t.heatmap.max() == 0.0 and t.weight[0, 9, 13] == 0.0


def test_gaussian_radius_grows_with_size():
    assert gaussian_radius(2, 1) < gaussian_radius(8, 4) < gaussian_radius(16, 8)


def test_focal_loss_rewards_a_correct_peak():
    target = torch.zeros(1, 1, 24, 32)
    target[0, 0, 5, 5] = 1.0
    weight = torch.ones_like(target)
    good = torch.full_like(target, -6.0)
    good[0, 0, 5, 5] = 6.0
    bad = torch.full_like(target, -6.0)
    bad[0, 0, 12, 20] = 6.0
    assert focal_loss(good, target, weight) < 0.01 < focal_loss(bad, target, weight)


def test_supcon_pulls_same_identity_together():
    labels = torch.tensor([0, 0, 1, 1])
    together = torch.tensor([[1.0, 0], [0.9, 0.1], [0, 1.0], [0.1, 0.9]])
    apart = torch.tensor([[1.0, 0], [0, 1.0], [1.0, 0.1], [0.1, 1.0]])
    assert supcon_loss(together, labels) < supcon_loss(apart, labels)
    assert float(supcon_loss(together[:1], labels[:1])) == 0.0


def test_total_loss_backpropagates_to_every_parameter():
    model = MicroDetector()
    t = build_targets(np.array([[100.0, 60.0, 16.0, 32.0], [40, 40, 10, 20]]), identities=[1, 2])
    batch = {
        "x": torch.rand(2, 3, 192, 256),
        **{
            name: torch.from_numpy(np.stack([getattr(t, name)] * 2))
            for name in ("heatmap", "weight", "indices", "log_size", "offset", "identity", "mask")
        },
    }
    loss, parts = detector_loss(model(batch["x"]), batch)
    loss.backward()
    assert set(parts) == {"heatmap", "size", "offset", "embedding"} and parts["embedding"] > 0
    assert all(p.grad is not None for p in model.parameters())
    assert batch["indices"].shape == (2, MAX_OBJECTS)

    # --size-weight: only the size term's weight changes; the parts are reported unweighted
    with torch.no_grad():
        outputs = model(batch["x"])
        paper, paper_parts = detector_loss(outputs, batch)
        heavy, heavy_parts = detector_loss(outputs, batch, {"size": 1.0})
    assert heavy_parts == paper_parts and paper_parts["size"] > 0
    assert float(heavy - paper) == pytest.approx(0.9 * paper_parts["size"], rel=1e-4)


def test_onnx_export_matches_torch(tmp_path):
    pytest.importorskip("onnx")
    from emts.stages.c_detect.detector import Detector
    from emts.train.export import export_onnx

    model = MicroDetector().eval()
    path = export_onnx(model, tmp_path / "d.onnx")
    x = np.random.default_rng(0).random((3, 192, 256), dtype=np.float32)
    heat, size, offset, embedding = Detector(path).raw(x)
    with torch.no_grad():
        ref = model(torch.from_numpy(x[None]))
    np.testing.assert_allclose(heat, torch.sigmoid(ref[0]).numpy(), atol=1e-5)
    np.testing.assert_allclose(embedding, ref[3].numpy(), atol=1e-4)


def test_a_model_trained_at_384x288_runs_the_pipeline_at_that_size(tmp_path):
    pytest.importorskip("onnx")
    from emts.geometry import Frame, FrameGeometry
    from emts.pipeline import Pipeline
    from emts.stages.c_detect.detector import Detector
    from emts.train.export import export_onnx, load_trained

    model = MicroDetector().eval()
    saved = {"model": model.state_dict(), "config": {}, "network_size": (384, 288)}
    torch.save(saved, tmp_path / "model.pt")
    loaded = load_trained(tmp_path / "model.pt")
    assert loaded.network_size == (384, 288)
    detector = Detector(export_onnx(loaded, tmp_path / "d.onnx"), threshold=0.0)
    assert detector.network_size == (384, 288)
    heat = detector.raw(np.zeros((3, 288, 384), np.float32))[0]
    assert heat.shape == (1, 1, 36, 48)  # the stride-8 grid of the larger input
    # the network's own boxes (the colour evidence rescores and reorders them:
    # emts.stages.c_detect.boxfit)
    pipeline = Pipeline(detector, verifier=None, auto_lock=False, box_fit=None)
    rng = np.random.default_rng(0)
    for _ in range(2):
        result = pipeline.step(rng.integers(0, 255, (360, 640, 3), np.uint8))
    assert result.channels.shape == (3, 288, 384)
    boxes = np.array([b for b, _ in result.detections]).reshape(-1, 4)
    network = np.array([d.box for d in detector(result.channels)]).reshape(-1, 4)
    expected = FrameGeometry((640, 360), (384, 288)).boxes(network, Frame.NETWORK, Frame.INPUT)
    assert len(boxes)
    np.testing.assert_allclose(boxes, expected[: len(boxes)], atol=0.01)


def test_models_saved_before_the_option_load_at_the_papers_size(tmp_path):
    from emts.train.export import load_trained

    torch.save({"model": MicroDetector().state_dict(), "config": {}}, tmp_path / "old.pt")
    assert load_trained(tmp_path / "old.pt").network_size == (256, 192)


def test_a_random_crop_keeps_the_grid_and_ignores_people_cut_at_its_edge():
    from emts.train.data import Sample, random_crop

    channels = np.zeros((2, 3, 288, 384), np.float32)
    boxes = [np.array([[100.0, 100, 10, 24], [300.0, 100, 10, 24]])] * 2
    sample = Sample(channels, boxes, [np.array([1, 2])] * 2, [np.ones(2)] * 2, "tier1")
    rng = np.random.default_rng(3)
    for _ in range(20):
        crop = random_crop(sample, (256, 192), rng)
        assert crop.channels.shape == (2, 3, 192, 256)
        targets = crop.targets
        assert targets[0].heatmap.shape == (1, 24, 32)
        shift = boxes[0][0, :2] - crop.boxes[0][0, :2]
        assert (shift % 8 == 0).all()  # a whole number of stride-8 cells
        for box, seen in zip(crop.boxes[0], crop.visible[0], strict=True):
            centre = box[:2] + box[2:] / 2
            inside = (centre >= 0).all() and centre[0] < 256 and centre[1] < 192
            assert seen == (1.0 if inside else 0.0)
        assert int(targets[0].mask.sum()) == int(crop.visible[0].sum())


def test_a_mirrored_sample_has_the_mirrored_targets():
    from emts.train.data import Sample, mirror

    rng = np.random.default_rng(0)
    channels = rng.random((2, 3, 192, 256)).astype(np.float32)
    boxes = [np.array([[20.0, 30, 10, 24], [200.5, 100, 8, 16]])] * 2
    sample = Sample(channels, boxes, [np.array([1, 2])] * 2, [np.array([1.0, 0.0])] * 2, "tier1")
    mirrored = mirror(sample)
    assert np.array_equal(mirrored.channels, channels[..., ::-1])
    assert mirrored.boxes[0][0].tolist() == [226.0, 30, 10, 24]  # 256 - 20 - 10
    for before, after in zip(sample.targets, mirrored.targets, strict=True):
        assert np.allclose(after.heatmap, before.heatmap[..., ::-1])
        assert np.allclose(after.weight, before.weight[..., ::-1])  # the ignore region too
        assert np.allclose(np.sort(after.log_size, 0), np.sort(before.log_size, 0))
    twice = mirror(mirrored)
    assert np.array_equal(twice.channels, channels)
    assert np.allclose(twice.boxes[1], boxes[1])
    assert np.array_equal(sample.channels, channels)  # the original left as it was
