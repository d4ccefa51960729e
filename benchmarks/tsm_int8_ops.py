"""Where does propagated-cache min-max lose 0.04 AP on the TSM detector? (diagnosis, not
shipped): the same calibration with the cache path (Concat/Slice) left float, and with only
the convolutions quantized. Usage: python benchmarks/tsm_int8_ops.py [BENCH_CLIPS]"""

import logging
import sys
import tempfile
from pathlib import Path

import onnx

from emts.eval.tsm import streaming_bench
from emts.train.quantize import detector_calibration, quantize, with_caches

model = Path("reports/quant/tsm_causal.onnx")
sets = {"tier1": "data/tier1", "negatives": "data/negatives"}
cal = with_caches(model, detector_calibration(sets, 100, 10, 0), "propagated")
scratch = Path(tempfile.mkdtemp())
graph = onnx.load(str(model))
ops = sorted({n.op_type for n in graph.graph.node} - {"Constant"})


def q(name, op_types=None):
    return quantize(model, scratch / f"{name}.onnx", cal, op_types=op_types)


logging.getLogger().setLevel(logging.ERROR)
models = {
    "float": model,
    "minmax propagated (as shipped in the table)": q("base"),
    "... Concat/Slice left float (caches never quantized)": q(
        "nocat", [o for o in ops if o not in ("Concat", "Slice")]
    ),
    "... only Conv quantized": q("conv", ["Conv"]),
}
clips = int(sys.argv[1]) if len(sys.argv) > 1 else 100
acc = streaming_bench(models, {}, "data/bench", clips)
for k, v in acc.items():
    print(f"{k}: AP@0.25 {v['AP@0.25']:.4f} AP@0.5 {v['AP@0.5']:.4f}")
