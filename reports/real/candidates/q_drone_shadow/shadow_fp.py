"""person12, Stage C's temporal mode: per frame the highest score of a detection whose centre is
farther than the person's height from the label (a false positive at tau_s 0.3 if it passes),
summarized over frames 40-66 (the drone's own shadow in view) and elsewhere.

    python shadow_fp.py shipped runs/q_s0/model.onnx ...   (person12 at ../shared/data)
"""

import sys

import numpy as np

from emts.stages.c_detect.detector import Detector
from emts.eval.real import person12_frames, temporal_boxes
from emts.stages.c_detect.temporal import TemporalDetector

SHADOW = slice(39, 66)  # frames 40-66
frames = list(person12_frames("../shared/data/uav123-person12"))
for path in sys.argv[1:]:
    model = None if path == "shipped" else path
    stage = TemporalDetector(Detector(model, threshold=0.05, network_size=(256, 192)))
    far = []
    for frame in frames:
        boxes, scores = temporal_boxes(stage, frame)
        label = np.asarray(frame.gt).reshape(-1, 4)[0]
        centre = label[:2] + label[2:] / 2
        gaps = np.hypot(*(boxes[:, :2] + boxes[:, 2:] / 2 - centre).T) if len(boxes) else []
        outside = np.asarray(gaps) > label[3]
        far.append(scores[outside].max() if outside.any() else 0.0)
    far = np.array(far)
    rest = np.r_[far[: SHADOW.start], far[SHADOW.stop :]]
    print(
        f"{path:32s} far max score, frames 40-66 median {np.median(far[SHADOW]):.3f} "
        f"max {far[SHADOW].max():.3f}; elsewhere median {np.median(rest):.3f}",
        flush=True,
    )
