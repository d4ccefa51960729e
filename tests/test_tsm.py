"""The temporal-shift ablation detector (issue 11 part 3): shift semantics (`eq:tsm`,
`eq:causaltsm`), causal streaming = causal offline, zero shift = stateless, and the streaming
ONNX with its caches as graph inputs/outputs (`eq:statefn`)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from emts.train.model import (  # noqa: E402
    DetectorConfig,
    MicroDetector,
    causal_step,
    temporal_shift,
)

H, W = 64, 96  # small frames: any multiple of 16 runs the architecture


def _clip(batch=1, frames=3, channels=8):
    """z[b, t, c] = 100 t + c (constant over the image): every value names its source."""
    t = torch.arange(frames).view(1, frames, 1, 1, 1) * 100.0
    c = torch.arange(channels).view(1, 1, channels, 1, 1) + 1.0
    return (t + c).expand(batch, frames, channels, 2, 2).clone()


def test_bidirectional_shift_takes_fold_one_from_the_past_fold_two_from_the_future():
    z = _clip(frames=3, channels=8)  # f = 1
    out = temporal_shift(z, 1, "bidirectional")[0, :, :, 0, 0]
    # t = 1: channel 1 from t - 1, channel 2 from t + 1, channels 3..8 from t
    assert out[1].tolist() == [1, 202, 103, 104, 105, 106, 107, 108]
    assert out[0, :2].tolist() == [0, 102]  # the past of frame 0 is zeros
    assert out[2, :2].tolist() == [101, 0]  # the future of the last frame is zeros


def test_causal_shift_takes_both_folds_from_the_previous_frame():
    z = _clip(frames=3, channels=16)  # f = 2: four channels shifted
    out = temporal_shift(z, 2, "causal")[0, :, :, 0, 0]
    assert out[0, :4].tolist() == [0, 0, 0, 0]
    assert out[2, :6].tolist() == [101, 102, 103, 104, 205, 206]


def test_causal_step_emits_the_new_cache_and_uses_the_old_one():
    z = _clip(frames=1, channels=16)[:, 0]
    cache = torch.full((1, 4, 2, 2), -1.0)
    shifted, new = causal_step(z, cache, 2)
    assert shifted[0, :, 0, 0].tolist()[:6] == [-1, -1, -1, -1, 5, 6]
    assert new[0, :, 0, 0].tolist() == [1, 2, 3, 4]


def test_folds_are_an_eighth_of_each_blocks_input_channels():
    model = MicroDetector(DetectorConfig(tsm="causal"))
    assert [b.fold for b in model.blocks()] == [2, 3, 3, 5, 5, 8, 8]
    assert len(model.cache_shapes()) == 7
    assert MicroDetector().blocks()[0].fold == 0  # stateless: no shift


def _trained_like(config: DetectorConfig) -> MicroDetector:
    """A model with non-trivial weights and BN statistics (eval mode)."""
    torch.manual_seed(0)
    model = MicroDetector(config)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return model.eval()


def test_streaming_equals_the_causal_offline_forward():
    model = _trained_like(DetectorConfig(tsm="causal"))
    clip = torch.rand(2, 4, 3, H, W)
    with torch.no_grad():
        offline = model(clip)
        caches = model.initial_caches(2, H, W)
        steps = []
        for t in range(4):
            *heads, caches = model.step(clip[:, t], caches)
            steps.append(heads)
    for k in range(4):
        streamed = torch.stack([s[k] for s in steps], dim=1).flatten(0, 1)
        assert torch.allclose(streamed, offline[k], atol=1e-5)
    # and the shift matters: frame 1 differs from the frame run alone
    alone = model(clip[:, 1])[3]
    assert (steps[1][3] - alone).abs().max() > 1e-4


def test_zero_shift_fraction_is_the_stateless_model():
    stateless = _trained_like(DetectorConfig())
    shifted = MicroDetector(DetectorConfig(tsm="bidirectional", tsm_fraction=0.0)).eval()
    shifted.load_state_dict(stateless.state_dict())  # one state dict for both variants
    clip = torch.rand(1, 3, 3, H, W)
    with torch.no_grad():
        for a, b in zip(shifted(clip), stateless(clip.flatten(0, 1)), strict=True):
            assert torch.allclose(a, b, atol=1e-6)
        caches = shifted.initial_caches(1, H, W)
        assert all(c.shape[1] == 0 for c in caches)
        heads = shifted.step(clip[:, 0], caches)[:4]
        for a, b in zip(heads, stateless(clip[:, 0]), strict=True):
            assert torch.allclose(a, b, atol=1e-6)


def test_tsm_clip_backpropagates_through_the_shift():
    model = MicroDetector(DetectorConfig(tsm="bidirectional"))
    heads = model(torch.rand(1, 3, 3, H, W))
    sum(h.sum() for h in heads).backward()
    assert model.stage1[0][0].weight.grad.abs().sum() > 0


def test_unknown_tsm_mode_is_refused():
    with pytest.raises(ValueError):
        MicroDetector(DetectorConfig(tsm="sideways"))


def test_streaming_onnx_matches_torch_with_caches_as_graph_io(tmp_path):
    pytest.importorskip("onnxruntime")
    from emts.stages.c_detect.streaming import StreamingDetector, is_streaming
    from emts.train.export import export_streaming_onnx

    model = _trained_like(DetectorConfig(tsm="causal"))
    path = export_streaming_onnx(model, tmp_path / "tsm.onnx")
    assert is_streaming(path)
    detector = StreamingDetector(path, threads=1)
    names = [i.name for i in detector.session.get_inputs()]
    assert names == ["channels", *[f"cache_in_{k}" for k in range(7)]]
    assert len(detector.session.get_outputs()) == 4 + 7
    clip = torch.rand(1, 4, 3, 192, 256)
    with torch.no_grad():
        heat, size, offset, embedding = model(clip)
    for _ in range(2):  # reset() starts a new stream with zero caches
        detector.reset()
        for t in range(4):
            h, s, o, e = detector.raw(clip[0, t].numpy())
            np.testing.assert_allclose(h[0], torch.sigmoid(heat[t]).numpy(), atol=1e-4)
            np.testing.assert_allclose(s[0], size[t].numpy(), atol=1e-4)
            np.testing.assert_allclose(e[0], embedding[t].numpy(), atol=1e-4)
    assert detector.caches["cache_in_6"].any()  # the stream carried state


@pytest.fixture(scope="module")
def streaming_model(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    from emts.train.export import export_streaming_onnx

    folder = tmp_path_factory.mktemp("tsm")
    return export_streaming_onnx(_trained_like(DetectorConfig(tsm="causal")), folder / "tsm.onnx")


def _stream(frames=6, step=3):
    from emts.train.quantize import Calibration

    rng = np.random.default_rng(0)
    samples = rng.uniform(0, 1, (frames, 3, 192, 256)).astype(np.float32)
    return Calibration(samples, step, "test frames")


def test_propagated_caches_are_the_float_streams_incoming_state(streaming_model):
    from emts.stages.c_detect.streaming import StreamingDetector
    from emts.train.quantize import with_caches

    calibration = _stream()
    zero = with_caches(streaming_model, calibration, "zero")
    assert all(not v.any() for v in zero.extra.values())
    propagated = with_caches(streaming_model, calibration, "propagated")
    detector = StreamingDetector(streaming_model, threads=1)
    for k, frame in enumerate(calibration.samples):
        if k % 3 == 0:
            detector.reset()  # a clip starts from zero caches
            assert not propagated.extra["cache_in_0"][k].any()
        for name, value in detector.caches.items():
            np.testing.assert_allclose(propagated.extra[name][k], value[0], atol=1e-6)
        detector.raw(frame)
    assert propagated.extra["cache_in_3"][1].any()


def test_cache_inputs_get_calibrated_ranges_only_from_propagated_state(streaming_model, tmp_path):
    import onnx
    from onnx import numpy_helper

    from emts.errors import BadInputError
    from emts.train.quantize import quantize, with_caches

    calibration = _stream()
    with pytest.raises(BadInputError, match="tsm-caches"):
        quantize(streaming_model, tmp_path / "bare.onnx", calibration)
    scales = {}
    for caches in ("zero", "propagated"):
        path = quantize(
            streaming_model,
            tmp_path / f"{caches}.onnx",
            with_caches(streaming_model, calibration, caches),
        )
        model = onnx.load(str(path))
        weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        node = next(
            n
            for n in model.graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] == "cache_in_3"
        )
        scales[caches] = float(weights[node.input[1]])
    # zero caches: a degenerate range; propagated: the steady-state range of the cache
    assert scales["propagated"] != scales["zero"]
    assert scales["propagated"] > 1e-4


def test_tsm_caches_on_a_stateless_model_is_one_line_and_exit_2(tmp_path, capsys):
    from emts.cli import main

    code = main(["quantize", "detector", "--out", str(tmp_path / "x.onnx"), "--tsm-caches", "zero"])
    assert code == 2
    assert "no cache inputs" in capsys.readouterr().err


def test_fine_tuning_starts_from_the_stateless_onnx_with_the_shift_switched_on():
    pytest.importorskip("onnx")
    from emts.errors import BadInputError
    from emts.precision import shipped_model
    from emts.train.export import detector_from_onnx
    from emts.train.tsm import tsm_model

    shipped = shipped_model("detector", "fp32")
    causal = tsm_model(shipped, "causal")
    assert causal.config.tsm == "causal" and causal.blocks()[0].fold == 2
    stateless = detector_from_onnx(shipped)
    for a, b in zip(causal.state_dict().values(), stateless.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # same weights: only the shift differs
    assert tsm_model(shipped, "none").blocks()[0].fold == 0  # the control
    with pytest.raises(BadInputError):
        tsm_model(shipped, "sideways")
