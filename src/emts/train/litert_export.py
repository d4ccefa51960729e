"""The shipped ONNX models as LiteRT ``.tflite`` files, fp32 and int8 (issue 11 part 4).

Conversion runs through ``litert-torch`` (extra ``[litert-convert]``; it needs torch, and
works with torch 2.13.0) from a torch module rebuilt from the ONNX file, so the ``.tflite``
holds the very weights of the shipped ``.onnx``:

* detector: :func:`emts.train.export.detector_from_onnx` (BatchNorms folded, as in the ONNX)
  with the deployment wrapper's in-graph heatmap sigmoid;
* verifier: :class:`emts.train.verifier.VerifierNet`, its state taken from the ONNX
  initializers (they carry the module's parameter names).

int8 is post-training quantization through PyTorch's PT2E flow with litert-torch's
quantizer: weights int8 per output channel, symmetric; activations int8 per tensor,
asymmetric, their ranges the min and max over the *same calibration stream* as ``emts
quantize`` (:func:`emts.train.quantize.detector_calibration` /
:func:`~emts.train.quantize.verifier_calibration`: 100 clips x 10 consecutive frames of
Tier-1 and hard negatives, drawn 5:3); the sigmoid's output takes LiteRT's fixed 1/256
scale. Like ``emts quantize --input-conv float`` (the default), the convolution that reads
the input stays float: one int8 scale over the detector's [L, R, D] input rounds small
residuals away, over the verifier's 40 descriptors their small features (``--input-conv
int8`` makes them full integer). Outputs are int8; the runtime adapter,
:class:`emts.litert.LiteRTSession`, quantizes and dequantizes at the edges. The runtime
needs none of this: ``ai-edge-litert`` alone runs the files.
"""

from __future__ import annotations

import dataclasses
import logging
from importlib import metadata
from pathlib import Path

import numpy as np
import torch
from torch import nn

from emts.errors import BadInputError
from emts.train.quantize import Calibration

INPUT_SHAPES = {"detector": (1, 3, 192, 256), "verifier": (1, 40, 16)}
CONVERTER_HINT = (
    "this command needs the LiteRT converter (litert-torch, with torch): in a separate "
    "virtual environment, pip install -c constraints.txt 'emts[train,litert-convert]'"
)

log = logging.getLogger(__name__)


def require_converter():
    try:
        import litert_torch
    except ImportError:
        raise BadInputError(CONVERTER_HINT) from None
    return litert_torch


def converter_versions() -> dict[str, str]:
    versions = {}
    for name in ("litert-torch", "litert-converter", "ai-edge-litert", "torch", "torchao"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def onnx_metadata(path: str | Path) -> dict[str, str]:
    """The EMTS entries of an ONNX model's metadata (network size, box scale, Stage E input)."""
    from emts.stages.c_detect.detector import load_graph

    model = load_graph(Path(path), "detector or verifier", external_data=False)
    return {p.key: p.value for p in model.metadata_props if p.key.startswith("emts_")}


def verifier_from_onnx(path: str | Path) -> nn.Module:
    """The :class:`~emts.train.verifier.VerifierNet` of an exported verifier ONNX."""
    from onnx import numpy_helper

    from emts.stages.c_detect.detector import load_graph
    from emts.train.verifier import VerifierNet

    weights = {
        i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
        for i in load_graph(Path(path), "verifier").graph.initializer
    }
    width = int(weights["features.0.weight"].shape[0]) if "features.0.weight" in weights else 0
    hidden = int(weights["head.1.weight"].shape[0]) if "head.1.weight" in weights else 0
    log_eps = float(weights["log_eps"]) if "log_eps" in weights else None
    model = VerifierNet(width or 32, hidden or 32, log_eps).eval()
    state = model.state_dict()
    if set(weights) != set(state) or any(
        tuple(weights[k].shape) != tuple(v.shape) for k, v in state.items()
    ):
        raise BadInputError(f"{path} does not hold the verifier architecture's tensors")
    model.load_state_dict(weights)
    return model


def torch_module(kind: str, source: str | Path) -> nn.Module:
    """The float torch module of the ``kind`` ONNX model at ``source`` (same outputs)."""
    source = Path(source)
    if not source.is_file():
        raise BadInputError(f"{source}: no such model")
    if kind == "detector":
        from emts.train.export import _Deployable, detector_from_onnx

        return _Deployable(detector_from_onnx(source)).eval()
    if kind == "verifier":
        return verifier_from_onnx(source)
    raise BadInputError(f"kind {kind!r}: detector or verifier")


class _FloatInput(nn.Sequential):
    """Marks the convolution that reads the input (the detector's stem with its ReLU, the
    verifier's first convolution) to stay float in int8 conversion."""


def _keep_input_float(kind: str, module: nn.Module, convs: int = 1) -> nn.Module:
    """Mark the first ``convs`` convolutions float: 1 (the stem; the verifier's first), or for
    the detector 2 (also stage 1's first, depthwise, convolution with its ReLU: as ``emts
    quantize --float-convs 2``) or 3 (stage 1's whole first block: as ``--float-convs 3``)."""
    if kind == "detector" and convs in (1, 2, 3):
        module.model.stem = _FloatInput(*module.model.stem)
        if convs > 1:
            layers = list(module.model.stage1[0])  # depthwise, BN, ReLU, pointwise, BN, ReLU
            if convs == 2:
                module.model.stage1[0] = nn.Sequential(_FloatInput(*layers[:3]), *layers[3:])
            else:
                module.model.stage1[0] = _FloatInput(*layers)
    elif kind == "verifier" and convs == 1:
        module.features[0] = _FloatInput(module.features[0])
    else:
        raise BadInputError(
            f"--float-convs {convs}: the LiteRT {kind} keeps "
            + ("1, 2 or 3 float" if kind == "detector" else "1 float")
        )
    return module


def _int8_quantizer(float_types: tuple[type, ...] = ()):
    """litert-torch's PT2E quantizer: int8 weights per channel, symmetric; int8 activations
    per tensor, asymmetric, with min-max observers (litert-torch's default is a histogram
    observer; min-max is what the shipped onnxruntime int8 uses). Modules of
    ``float_types`` are left unquantized."""
    from litert_torch.quantize import pt2e_quantizer
    from torchao.quantization.pt2e.observer import MinMaxObserver

    config = pt2e_quantizer.get_symmetric_quantization_config(is_per_channel=True)
    activation = dataclasses.replace(
        config.input_activation, observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-12)
    )
    config = dataclasses.replace(config, input_activation=activation, output_activation=activation)
    quantizer = pt2e_quantizer.PT2EQuantizer().set_global(config)
    for kind in float_types:
        # A module type whose config is None is excluded from the global config and gets no
        # annotation (set_module_name(name, None) asserts, and its name filter misreads
        # torch 2.13's module stack). torch.export records the type as a class or, in newer
        # versions, as its qualified name: register both.
        quantizer.module_type_config[kind] = None
        quantizer.module_type_config[f"{kind.__module__}.{kind.__qualname__}"] = None
    return quantizer


def convert(
    kind: str,
    source: str | Path,
    out: str | Path,
    precision: str = "fp32",
    calibration: Calibration | None = None,
    float_input_conv: bool = False,
    network_size: tuple[int, int] | None = None,
    float_convs: int = 1,
) -> Path:
    """Write the ``.tflite`` of the ``kind`` ONNX model ``source`` to ``out``: ``fp32``, or
    ``int8`` calibrated on ``calibration`` (required then). ``float_input_conv`` keeps the
    convolution that reads the input float (as ``emts quantize --input-conv float``): the
    model then takes a float32 input and quantizes after that convolution. A detector is
    converted at ``network_size``, by default the size the runtime runs the ONNX at (fixed,
    run or trained size)."""
    litert_torch = require_converter()
    module = torch_module(kind, source)
    shape = INPUT_SHAPES[kind]
    if kind == "detector":
        if network_size is None:
            from emts.stages.c_detect.detector import Detector

            network_size = Detector(source, threads=1).network_size
        width, height = network_size
        shape = (1, 3, height, width)
    example = (torch.zeros(shape),)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if precision == "fp32":
        edge = litert_torch.convert(module, example)
    elif precision == "int8":
        if calibration is None or not len(calibration.samples):
            raise BadInputError("int8 conversion needs a calibration stream")
        from litert_torch.quantize.quant_config import QuantConfig
        from torchao.quantization.pt2e import quantize_pt2e

        floats = ()
        if float_input_conv:
            module, floats = _keep_input_float(kind, module, float_convs), (_FloatInput,)
        quantizer = _int8_quantizer(floats)
        graph = torch.export.export(module, example).module()
        graph = quantize_pt2e.prepare_pt2e(graph, quantizer)
        with torch.no_grad():
            for sample in calibration.samples:
                graph(torch.from_numpy(np.ascontiguousarray(sample[None], np.float32)))
        graph = quantize_pt2e.convert_pt2e(graph, fold_quantize=False)
        edge = litert_torch.convert(graph, example, quant_config=QuantConfig(quantizer))
    else:
        raise BadInputError(f"precision {precision!r}: fp32 or int8")
    edge.export(str(out))
    return out


def fidelity(source: str | Path, tflite: str | Path, kind: str, inputs: np.ndarray) -> list[float]:
    """Largest absolute difference per output between onnxruntime on ``source`` and LiteRT on
    ``tflite`` over ``inputs`` (N, ...) -- written into the provenance file."""
    from emts.stages.c_detect.detector import load_session

    reference = load_session(Path(source), kind, 1)
    converted = load_session(Path(tflite), kind, 1)
    name = reference.get_inputs()[0].name
    worst: list[float] = []
    for x in inputs:
        a = reference.run(None, {name: x[None].astype(np.float32)})
        b = converted.run(None, {"x": x[None].astype(np.float32)})
        diffs = [float(np.abs(p - q).max()) for p, q in zip(a, b, strict=True)]
        worst = [max(w, d) for w, d in zip(worst, diffs, strict=True)] if worst else diffs
    return [round(w, 6) for w in worst]
