"""EMTS: ego-motion-normalized temporal signatures for aerial person tracking.

The runtime (this package minus ``synth``, ``train`` and ``eval``) needs only numpy,
OpenCV and onnxruntime. Stages follow the paper's Fig. 1:

* :mod:`emts.stages.a_ego_motion` -- Stage A, camera motion between consecutive frames.
* :mod:`emts.stages.b_channels` -- Stage B, the ego-motion-normalized ``[L, R, D]`` channels.
"""

import importlib
import os

# onnxruntime queues telemetry under ~/.cache/Microsoft/DeveloperTools as soon as it is
# imported; a tool on a drone writes only what it was asked to. The variable must be set
# before the first import of onnxruntime (disable_telemetry_events() does not stop the
# write); a value the user set is kept.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from emts.errors import BadInputError, EmtsError

__version__ = "0.1.0"

# The API's names, imported on first use: ``import emts`` (and so the ``emts`` command's
# start-up, before it can catch a Ctrl-C) loads no numpy, OpenCV or onnxruntime.
_LAZY = {
    "ChannelConfig": "emts.config",
    "EgoMotion": "emts.stages.a_ego_motion",
    "EgoMotionConfig": "emts.config",
    "EgoMotionEstimator": "emts.stages.a_ego_motion",
    "Frame": "emts.geometry",
    "FrameGeometry": "emts.geometry",
    "MotionChannels": "emts.stages.b_channels",
}

__all__ = ["BadInputError", "EmtsError", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'emts' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
