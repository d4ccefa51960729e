r"""The two averagings measured beside the mean (candidate Z, bench only), as a wrapper:

    TTA=max|four python tta.py eval detect --bench data/bench --model thermal \
        --detector-mode temporal --out DIR

The mean itself is the runtime's option (``emts export ... --mirror-average on``,
``Detector(mirror_average=True)``): not written again here.
"""

import os
import sys

import numpy as np

import emts.stages.c_detect.detector as det

_raw = det.Detector.raw
MODE = os.environ["TTA"]  # max: the larger of the two heatmaps; four: also flipped upside down


def raw(self, channels, residual_reference=None):
    out = _raw(self, channels, residual_reference)
    if channels.ndim != 3:
        return out

    def heat_of(flip_rows: bool, flip_columns: bool) -> np.ndarray:
        rows = slice(None, None, -1 if flip_rows else 1)
        columns = slice(None, None, -1 if flip_columns else 1)
        flipped = np.ascontiguousarray(channels[:, rows, columns])
        return _raw(self, flipped, residual_reference)[0][..., rows, columns]

    if MODE == "max":
        heat = np.maximum(out[0], heat_of(False, True))
    else:
        views = [out[0], heat_of(False, True), heat_of(True, False), heat_of(True, True)]
        heat = np.mean(views, axis=0)
    return [heat, *out[1:]]


det.Detector.raw = raw
from emts.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
