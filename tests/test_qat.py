"""Quantization-aware training: fake quantization on and off, the starting model, bad input."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from emts.cli import main  # noqa: E402
from emts.stages.c_detect.detector import default_model_path  # noqa: E402
from emts.train.export import freeze_batch_norm  # noqa: E402
from emts.train.model import MicroDetector  # noqa: E402
from emts.train.qat import PerChannelWeightQuant, QuantAware, starting_model  # noqa: E402


def test_weights_are_seen_as_symmetric_int8_per_output_channel():
    weight = torch.randn(4, 3, 3, 3) * torch.tensor([0.01, 0.1, 1.0, 10.0]).view(4, 1, 1, 1)
    seen = PerChannelWeightQuant()(weight)
    scale = weight.abs().amax(dim=(1, 2, 3)) / 127
    steps = seen / scale.view(4, 1, 1, 1)
    np.testing.assert_allclose(steps, steps.round(), atol=1e-3)  # on the int8 grid
    assert steps.abs().max() <= 127 + 1e-3
    np.testing.assert_allclose(seen, weight, atol=float(scale.max()) / 2 + 1e-6)


def test_fake_quantization_changes_outputs_trains_and_comes_off_cleanly():
    torch.manual_seed(0)
    model = starting_model(default_model_path()).eval()
    x = torch.rand(1, 3, 192, 256)
    x[:, 2] -= 0.5  # D is signed
    with torch.no_grad():
        before = model(x)[0]
        quant = QuantAware(model)
        model.train()
        freeze_batch_norm(model)  # as QAT does: the folded model has no statistics to learn
        for _ in range(3):
            model(x)  # the observers see the data
        model.eval()
        fake = model(x)[0]
    assert not torch.equal(fake, before)
    change = (torch.sigmoid(fake) - torch.sigmoid(before)).abs()
    assert change.mean() < 0.15  # int8 is close to fp32, not another model (measured: 0.08)
    model(x)[0].sum().backward()
    assert model.stem[0].parametrizations.weight.original.grad is not None
    restored = quant.remove()
    assert set(restored.state_dict()) == set(MicroDetector().state_dict())
    with torch.no_grad():
        torch.testing.assert_close(restored(x)[0], before)  # latent weights untouched (no step)


def test_qat_from_a_missing_run_is_one_line_and_exit_2(tmp_path, capsys):
    from emts.synth.store import ClipSet  # noqa: F401  (clip sets are checked first)

    code = main(
        ["train", "detector", "--qat-from", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]
    )
    assert code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
