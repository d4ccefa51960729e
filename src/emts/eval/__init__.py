"""Evaluation protocols and reports (needs the ``train`` extra for pycocotools/matplotlib)."""
