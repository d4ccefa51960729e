"""YOLOv8n at its real architecture (random weights) as ONNX at 640x640, no NMS, for
``emts bench --peer-yolo`` (issue 11 part 6). Only speed is compared, so weights do not matter.

Run it in a scratch venv *outside* the project (ultralytics never goes into ours, and never
with its dependencies)::

    python3 -m venv /tmp/yolo-venv
    /tmp/yolo-venv/bin/pip install -c constraints.txt torch==2.13.0 onnx pyyaml psutil \
        opencv-python-headless pillow
    /tmp/yolo-venv/bin/pip install --no-deps ultralytics ultralytics-thop torchvision==0.28.0
    /tmp/yolo-venv/bin/python benchmarks/export_yolov8n.py /tmp/yolov8n.onnx
    emts bench --peer-yolo /tmp/yolov8n.onnx --threads 2

(``ultralytics`` imports ``cv2`` and ``PIL`` at start-up, hence the two extra packages.) The
ONNX file (12.7 MB) is not committed.
"""

from __future__ import annotations

import sys

import torch
from ultralytics.nn.tasks import DetectionModel


def main(out: str) -> None:
    model = DetectionModel("yolov8n.yaml", nc=80, verbose=False).eval()
    model.fuse(verbose=False)  # conv + batch norm folded, as an exported YOLOv8n is
    parameters = sum(p.numel() for p in model.parameters())
    torch.onnx.export(
        model,
        torch.zeros(1, 3, 640, 640),
        out,
        input_names=["images"],
        output_names=["output0"],  # (1, 84, 8400): boxes and class scores, before NMS
        opset_version=17,
        dynamo=False,
    )
    print(f"{out}: YOLOv8n, {parameters} parameters, input 1x3x640x640, no NMS")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "yolov8n.onnx")
