"""Teacher-forced state: does the int8 TSM lose AP through its own (quantized) caches carried
across frames, or per frame? int8 fed the float stream's caches vs its own (diagnosis).
Usage: python benchmarks/tsm_int8_state.py BENCH_CLIPS"""

import sys
import tempfile
from pathlib import Path

import numpy as np

from emts.eval.detect import BENCH_FRAMES, EVAL_THRESHOLD, ground_truth
from emts.eval.metrics import ImageResult, coco_ap
from emts.stages.c_detect.streaming import StreamingDetector
from emts.synth.store import ClipSet
from emts.train.quantize import detector_calibration, quantize, with_caches

model = Path("reports/quant/tsm_causal.onnx")
cal = with_caches(
    model,
    detector_calibration({"tier1": "data/tier1", "negatives": "data/negatives"}, 100, 10, 0),
    "propagated",
)
int8 = quantize(model, Path(tempfile.mkdtemp()) / "q.onnx", cal, "minmax")
f = StreamingDetector(model, threads=1, threshold=EVAL_THRESHOLD)
own = StreamingDetector(int8, threads=1, threshold=EVAL_THRESHOLD)
forced = StreamingDetector(int8, threads=1, threshold=EVAL_THRESHOLD)
res = {"float": [], "int8 own caches": [], "int8 fed float caches": []}
bench = ClipSet("data/bench")
diffs = []
for index in bench.indices[: int(sys.argv[1])]:
    clip = bench.load(index)
    for d in (f, own):
        d.reset()
    for t in range(1, max(BENCH_FRAMES) + 1):
        forced.caches = dict(f.caches)
        x = clip.channels[t]
        outs = {"float": f(x), "int8 own caches": own(x), "int8 fed float caches": forced(x)}
        diffs.append(max(np.abs(own.caches[k] - f.caches[k]).max() for k in f.caches))
        if t in BENCH_FRAMES:
            gt, ig = ground_truth(clip.labels["frames"][t]["persons"])
            for k, dets in outs.items():
                res[k].append(
                    ImageResult(
                        gt,
                        ig,
                        np.array([d.box for d in dets]).reshape(-1, 4),
                        np.array([d.score for d in dets]),
                    )
                )
for k, r in res.items():
    ap = coco_ap(r)
    print(f"{k}: AP@0.25 {ap['AP@0.25']:.4f} AP@0.5 {ap['AP@0.5']:.4f}")
print("max |cache int8 - float| median over frames", float(np.median(diffs)))
