"""Runtime of a *stateful* detector graph (the TSM ablation variant, `eq:statefn`).

The graph takes the frame's channels plus its caches ``cache_in_k`` and returns the four
heads plus the new caches ``cache_out_k``; :class:`StreamingDetector` keeps the caches between
calls (zeros at the start of a stream, :meth:`StreamingDetector.reset`). onnxruntime only: the
deployed detector is stateless, this exists for the ablation and the calibration study.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from emts.errors import BadInputError
from emts.stages.b_channels import RESIDUAL_REFERENCE, normalize_residual_level
from emts.stages.c_detect.detector import (
    DEFAULT_THRESHOLD,
    Detection,
    decode,
    load_graph,
    load_session,
)

CACHE_IN, CACHE_OUT = "cache_in_", "cache_out_"


def cache_inputs(session) -> list:
    """The cache inputs (onnxruntime NodeArg) of a session, in graph order."""
    return [i for i in session.get_inputs() if i.name.startswith(CACHE_IN)]


def is_streaming(path: str | Path) -> bool:
    """Whether the ONNX model at ``path`` carries caches as graph inputs."""
    graph = load_graph(Path(path), "detector", external_data=False).graph
    return any(i.name.startswith(CACHE_IN) for i in graph.input)


def zero_caches(session, batch: int = 1) -> dict[str, np.ndarray]:
    return {
        i.name: np.zeros([batch, *[int(d) for d in i.shape[1:]]], np.float32)
        for i in cache_inputs(session)
    }


class StreamingDetector:
    """A streaming (cached) detector session plus the decoder; call it frame by frame."""

    def __init__(
        self,
        model: str | Path,
        threads: int = 2,
        threshold: float = DEFAULT_THRESHOLD,
        residual_reference: float = RESIDUAL_REFERENCE,
    ) -> None:
        self.path = Path(model)
        self.session = load_session(self.path, "detector", threads)
        caches = cache_inputs(self.session)
        if not caches:
            raise BadInputError(f"{self.path} has no cache inputs: not a streaming detector")
        self.input_name = self.session.get_inputs()[0].name
        names = [o.name for o in self.session.get_outputs()]
        self.heads = names[:4]
        self.updates = {c.name: c.name.replace(CACHE_IN, CACHE_OUT) for c in caches}
        missing = [n for n in self.updates.values() if n not in names]
        if missing:
            raise BadInputError(f"{self.path}: cache outputs {missing} missing")
        self.threshold = threshold
        self.residual_reference = residual_reference
        self.reset()

    def reset(self) -> None:
        """Start a new stream: zero caches."""
        self.caches = zero_caches(self.session)

    def raw(self, channels: np.ndarray) -> list[np.ndarray]:
        """Heads for one (3, H, W) frame; advances the caches."""
        x = normalize_residual_level(channels, self.residual_reference)[None]
        feed = {self.input_name: np.ascontiguousarray(x, np.float32), **self.caches}
        outputs = self.session.run([*self.heads, *self.updates.values()], feed)
        self.caches = dict(zip(self.updates, outputs[4:], strict=True))
        return outputs[:4]

    def __call__(self, channels: np.ndarray) -> list[Detection]:
        heat, size, offset, embedding = self.raw(channels)
        return decode(heat[0], size[0], offset[0], embedding[0], self.threshold)
