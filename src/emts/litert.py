"""The LiteRT backend (issue 11 part 4): the shipped models as ``.tflite`` through XNNPACK.

``--backend litert`` runs ``models/detector.tflite`` / ``detector.int8.tflite`` (and the
verifier's twins) in LiteRT's interpreter (the ``ai-edge-litert`` wheel, extra ``[litert]``;
no torch, no TensorFlow) with its default XNNPACK delegate on ``threads`` threads -- the
runtime the paper deploys on a Pi Zero 2W. :class:`LiteRTSession` is a thin adapter with the
part of onnxruntime's ``InferenceSession`` interface the detector and verifier use
(``get_inputs``, ``get_outputs``, ``run``), so :class:`emts.stages.c_detect.detector.Detector` and
:class:`emts.stages.e_verify.Verifier` run either file unchanged:
:func:`emts.stages.c_detect.detector.load_session`
picks the runtime by the file's suffix.

The int8 files hold int8 tensors with a per-tensor scale and zero point at their outputs
(they keep the convolution that reads the input, and so the input, float unless converted
with ``--input-conv int8``): the adapter quantizes an int8 input and dequantizes the
outputs, so callers see float32 as with onnxruntime. The files hold one fixed batch of 1; a
batch of ``B`` runs as ``B`` invocations.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from emts.errors import BadInputError

BACKENDS = ("onnxruntime", "litert")
DEFAULT_BACKEND = "onnxruntime"
SUFFIXES = {"onnxruntime": ".onnx", "litert": ".tflite"}
INSTALL_HINT = "pip install 'emts[litert]'"


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise BadInputError(f"backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    return backend


def backend_of(path: str | Path) -> str:
    """The runtime that runs a model file: ``litert`` for ``.tflite``, else ``onnxruntime``."""
    return "litert" if Path(path).suffix == ".tflite" else "onnxruntime"


def require_litert():
    """LiteRT's ``Interpreter`` class; a missing runtime is one line (BadInputError)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        raise BadInputError(
            f"--backend litert needs the LiteRT runtime (ai-edge-litert): {INSTALL_HINT}"
        ) from None
    return Interpreter


def litert_available() -> bool:
    try:
        require_litert()
    except BadInputError:
        return False
    return True


@dataclass(frozen=True)
class TensorInfo:
    """What onnxruntime's ``NodeArg`` tells the callers: a name and a shape."""

    name: str
    shape: list[int]


@dataclass(frozen=True)
class _Tensor:
    index: int
    info: TensorInfo
    dtype: np.dtype
    scale: float  # 0.0: a float tensor
    zero_point: int


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence LiteRT's native start-up line ("INFO: Created TensorFlow Lite XNNPACK delegate
    for CPU.", written to file descriptor 2 by C++) unless logging is at INFO (``-v``);
    load errors still arrive as Python exceptions with their message."""
    if logging.getLogger().isEnabledFor(logging.INFO):
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (e.g. captured): nothing to silence
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _order(name: str) -> tuple[int, str]:
    """Signature names as exporters write them (``output_0``, ``output_1``, ...) in order."""
    match = re.search(r"(\d+)$", name)
    return (int(match.group(1)) if match else -1, name)


def _sidecar_metadata(path: Path) -> dict[str, str]:
    sidecar = path.with_name(path.name + ".json")
    try:
        return dict(json.loads(sidecar.read_text()).get("metadata") or {})
    except (OSError, ValueError, AttributeError):
        return {}


class LiteRTSession:
    """A LiteRT interpreter (XNNPACK, ``threads`` threads) behind onnxruntime's interface.

    Args:
        path: a ``.tflite`` model with one signature (one input).
        kind: "detector" or "verifier", for messages.
        threads: threads of the interpreter and its XNNPACK delegate.
    """

    def __init__(self, path: Path, kind: str, threads: int) -> None:
        interpreter_class = require_litert()
        if not path.is_file():
            raise BadInputError(f"{kind} model {path} not found")
        try:
            with _quiet_native_stderr():
                self.interpreter = interpreter_class(model_path=str(path), num_threads=threads)
                self.interpreter.allocate_tensors()
            runner = self.interpreter.get_signature_runner()
        except (ValueError, RuntimeError) as error:
            reason = str(error).strip().splitlines()[-1] if str(error).strip() else "unknown"
            raise BadInputError(
                f"{kind} model {path} cannot be loaded ({reason}); pass a {kind} .tflite"
            ) from None
        self.path = path
        self.threads = threads
        self._metadata = _sidecar_metadata(path)
        self._inputs = self._tensors(runner.get_input_details())
        self._outputs = self._tensors(runner.get_output_details())

    def get_modelmeta(self) -> SimpleNamespace:
        """The source ONNX's EMTS metadata, as ``emts export-litert`` recorded it beside the
        model (``MODEL.tflite.json``, key ``"metadata"``); a .tflite holds none itself."""
        return SimpleNamespace(custom_metadata_map=dict(self._metadata))

    @staticmethod
    def _tensors(details: dict) -> list[_Tensor]:
        out = []
        for name in sorted(details, key=_order):
            d = details[name]
            scales = d["quantization_parameters"]["scales"]
            zeros = d["quantization_parameters"]["zero_points"]
            quantized = len(scales) == 1 and np.issubdtype(d["dtype"], np.integer)
            out.append(
                _Tensor(
                    int(d["index"]),
                    TensorInfo(name, [int(v) for v in d["shape"]]),
                    np.dtype(d["dtype"]),
                    float(scales[0]) if quantized else 0.0,
                    int(zeros[0]) if quantized else 0,
                )
            )
        return out

    def get_inputs(self) -> list[TensorInfo]:
        return [t.info for t in self._inputs]

    def get_outputs(self) -> list[TensorInfo]:
        return [t.info for t in self._outputs]

    def _set(self, tensor: _Tensor, value: np.ndarray) -> None:
        if tensor.scale:
            info = np.iinfo(tensor.dtype)
            q = np.rint(value / tensor.scale) + tensor.zero_point
            value = np.clip(q, info.min, info.max).astype(tensor.dtype)
        else:
            value = np.ascontiguousarray(value, tensor.dtype)
        self.interpreter.set_tensor(tensor.index, value)

    def _get(self, tensor: _Tensor) -> np.ndarray:
        value = self.interpreter.get_tensor(tensor.index)
        if tensor.scale:
            return (value.astype(np.float32) - tensor.zero_point) * np.float32(tensor.scale)
        return value

    def _invoke(self, x: np.ndarray) -> list[np.ndarray]:
        self._set(self._inputs[0], x)
        self.interpreter.invoke()
        return [self._get(t) for t in self._outputs]

    def run(self, output_names, feed: dict) -> list[np.ndarray]:
        """The model's outputs (float32, in signature order) for the one input in ``feed``;
        ``output_names`` is ignored (all outputs, as onnxruntime's None)."""
        (x,) = feed.values()
        x = np.asarray(x, np.float32)
        expected = self._inputs[0].info.shape
        if x.ndim != len(expected) or list(x.shape[1:]) != expected[1:]:
            raise BadInputError(
                f"{self.path.name}: input of shape {list(x.shape)}, the model takes {expected}"
            )
        if x.shape[0] == expected[0]:
            return self._invoke(x)
        per_sample = [self._invoke(sample[None]) for sample in x]
        return [np.concatenate(parts) for parts in zip(*per_sample, strict=True)]
