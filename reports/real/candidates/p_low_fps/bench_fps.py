"""Candidate P: the synthetic bench (`data/bench`, held out from training) at its 30 fps and at
10 fps (every 3rd frame run through Stages A and B again), each detector frame by frame:
AP@0.25 / AP@0.5.

    python reports/real/candidates/p_low_fps/bench_fps.py shipped runs/ft_s3_s0/model.onnx ...
"""

import sys

from tqdm import tqdm

from emts.stages.c_detect.detector import Detector
from emts.eval.detect import NetworkDetect, evaluate_bench, ground_truth, summarize
from emts.eval.metrics import ImageResult
from emts.synth.store import ClipSet
from emts.train.verifier import strided_clip

STRIDE = 3
clip_set = ClipSet("data/bench")
slow = [strided_clip(clip_set.load(i), STRIDE) for i in tqdm(clip_set.indices, desc="10 fps")]
for path in sys.argv[1:]:
    detect = NetworkDetect(Detector(None if path == "shipped" else path, network_size=(256, 192)))
    at30, at10 = evaluate_bench(detect, "data/bench"), []
    for clip in slow:
        for k in range(2, len(clip.frames)):  # frames 7, 10, 13, 16 (1-based): 2 steps before
            gt, ignore = ground_truth(clip.labels["frames"][k]["persons"])
            at10.append(ImageResult(gt, ignore, *detect(clip.channels[k])))
    a, b = summarize(at30), summarize(at10)
    print(
        f"{path:30s} 30 fps AP@0.25 {a['AP@0.25']:.3f} AP@0.5 {a['AP@0.5']:.3f}   "
        f"10 fps AP@0.25 {b['AP@0.25']:.3f} AP@0.5 {b['AP@0.5']:.3f}",
        flush=True,
    )
