"""EMTS: ego-motion-normalized temporal signatures for aerial person tracking.

The runtime (this package minus ``synth``, ``train`` and ``eval``) needs only numpy,
OpenCV and onnxruntime. Stages follow the paper's Fig. 1:

* :mod:`emts.stages.a_ego_motion` -- Stage A, camera motion between consecutive frames.
* :mod:`emts.stages.b_channels` -- Stage B, the ego-motion-normalized ``[L, R, D]`` channels.
"""

import os

# onnxruntime queues telemetry under ~/.cache/Microsoft/DeveloperTools as soon as it is
# imported; a tool on a drone writes only what it was asked to. The variable must be set
# before the first import of onnxruntime (disable_telemetry_events() does not stop the
# write); a value the user set is kept.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from emts.config import ChannelConfig, EgoMotionConfig
from emts.errors import BadInputError, EmtsError
from emts.geometry import Frame, FrameGeometry
from emts.stages.a_ego_motion import EgoMotion, EgoMotionEstimator
from emts.stages.b_channels import MotionChannels

__version__ = "0.1.0"

__all__ = [
    "BadInputError",
    "ChannelConfig",
    "EgoMotion",
    "EgoMotionConfig",
    "EgoMotionEstimator",
    "EmtsError",
    "Frame",
    "FrameGeometry",
    "MotionChannels",
]
