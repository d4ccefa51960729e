import os, sys, numpy as np
import emts.detector as det
orig = det.Detector.raw
MODE = os.environ.get('TTA', 'flip')
def raw(self, channels, residual_reference=None):
    out = orig(self, channels, residual_reference)
    if channels.ndim != 3 or (os.environ.get('TTA_ONLY') and os.environ['TTA_ONLY'] not in str(self.path)): return out
    flipped = orig(self, np.ascontiguousarray(channels[:, :, ::-1]), residual_reference)
    heat = out[0].copy()
    hf = flipped[0][..., ::-1]
    if MODE == 'flip': heat = 0.5 * (heat + hf)
    elif MODE == 'max': heat = np.maximum(heat, hf)
    elif MODE == 'four':
        fv = orig(self, np.ascontiguousarray(channels[:, ::-1, :]), residual_reference)[0][..., ::-1, :]
        fhv = orig(self, np.ascontiguousarray(channels[:, ::-1, ::-1]), residual_reference)[0][..., ::-1, ::-1]
        heat = 0.25 * (heat + hf + fv + fhv)
    return [heat] + list(out[1:])
det.Detector.raw = raw
from emts.cli import main
sys.exit(main(sys.argv[1:]))
