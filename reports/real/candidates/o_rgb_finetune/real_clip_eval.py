"""Candidate O: person12 frames 1-201 through Stages A-C for each detector given (`shipped` = the
shipped default model), temporal and plain: recall / FP per frame at tau_s 0.3 / AP@0.25 / AP@0.5.

    python real_clip_eval.py ../shared/data/uav123-person12 shipped runs/ft_rgb_s0/model.onnx ...
"""

import sys

import numpy as np

from emts.stages.c_detect.detector import Detector
from emts.eval.metrics import ImageResult
from emts.eval.real import (
    EVAL_THRESHOLD,
    network_boxes,
    person12_frames,
    person_metrics,
    temporal_boxes,
)
from emts.stages.c_detect.temporal import TemporalDetector

frames = list(person12_frames(sys.argv[1]))
for path in sys.argv[2:]:
    det = Detector(
        None if path == "shipped" else path, threshold=EVAL_THRESHOLD, network_size=(256, 192)
    )
    st = TemporalDetector(det)
    rt = []
    rp = []
    for f in frames:
        b, s = temporal_boxes(st, f)
        rt.append(ImageResult(f.gt, np.zeros(1, bool), b, s))
        b, s = network_boxes(det, f, f.channels)
        rp.append(ImageResult(f.gt, np.zeros(1, bool), b, s))
    mt = person_metrics(rt)
    mp = person_metrics(rp)
    k = " / ".join  # recall / FP per frame / AP@0.25 / AP@0.5
    keys = ("recall@0.3", "fp_per_frame@0.3", "AP@0.25", "AP@0.5")
    mt, mp = ([f"{m[key]:.3f}" for key in keys] for m in (mt, mp))
    print(f"{path:30s} temporal {k(mt)}   plain {k(mp)}", flush=True)
