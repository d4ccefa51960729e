"""The real suite with HIT-UAV's thermal stills shown through a colour palette, as a thermal
camera that records in a palette (ironbow-like) would give them: do the models still find
people once the pipeline converts the palette back to gray?

    python benchmarks/palette_thermal.py --colormap COLORMAP_INFERNO --out /tmp/pal

Runs `emts eval real` (seed 0) with the default and the thermal model, each still passed
through ``cv2.applyColorMap`` before the pipeline reads it (person12 untouched), and prints
the HIT-UAV rows with temporal scores. ``--model auto`` reads such frames as colour (they
are) and picks the default model; the thermal row is what ``--model thermal`` gives.
"""

from __future__ import annotations

import argparse

import cv2

import emts.eval.real as real
from emts.precision import shipped_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--colormap", default="COLORMAP_INFERNO", help="an OpenCV COLORMAP_*")
    parser.add_argument("--person12", default="../shared/data/uav123-person12")
    parser.add_argument("--hituav", default="../shared/data/hit-uav")
    parser.add_argument("--out", required=True, help="report folder")
    args = parser.parse_args()
    colormap = getattr(cv2, args.colormap)
    imread = cv2.imread

    def palette_imread(path, flags=cv2.IMREAD_COLOR):
        if "hit-uav" not in str(path):
            return imread(path, flags)
        gray = imread(path, cv2.IMREAD_GRAYSCALE)
        if gray is None:
            return None
        coloured = cv2.applyColorMap(gray, colormap)
        if flags == cv2.IMREAD_GRAYSCALE:  # what the pipeline makes of the palette frame
            return cv2.cvtColor(coloured, cv2.COLOR_BGR2GRAY)
        return coloured

    real.cv2.imread = palette_imread
    thermal = str(shipped_model("detector", "fp32", variant="thermal"))
    sections = real.evaluate_real(
        {"shipped": None, "thermal": thermal}, args.out, args.person12, args.hituav
    )
    for title, section in sections.items():
        if title.startswith("HIT-UAV"):
            for name, metrics in section.items():
                if name.endswith(f"({real.TEMPORAL})"):
                    print(
                        f"{title}: {name}: AP@0.25 {metrics['AP@0.25']:.3f}, "
                        f"AP@0.5 {metrics['AP@0.5']:.3f}"
                    )


if __name__ == "__main__":
    main()
