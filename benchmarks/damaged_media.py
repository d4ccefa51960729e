"""Damaged MP4 files for the hostile-input checks (tests/test_hostile_inputs.py and
benchmarks/hostile_pass.py): a noise video, its index moved to the front (so a cut file still
opens and declares every frame), and the MP4 boxes to cut or zero."""

from __future__ import annotations

import struct
from pathlib import Path

import cv2
import numpy as np


def atoms(data: bytes, start: int = 0, end: int | None = None):
    """(kind, offset, size) of the MP4 boxes in data[start:end]."""
    offset, end = start, len(data) if end is None else end
    while offset < end:
        size, kind = struct.unpack(">I4s", data[offset : offset + 8])
        yield kind.decode("latin-1"), offset, size
        offset += size


def faststart(data: bytes) -> bytes:
    """OpenCV's mp4 (ftyp, free, mdat, moov) with its index moved to the front, as streaming
    tools write it, so that a cut file still opens and declares every frame."""
    boxes = {kind: (offset, size) for kind, offset, size in atoms(data)}
    at, size = boxes["moov"]
    moov = bytearray(data[at : at + size])

    def shift(start: int, end: int) -> None:  # every chunk offset moves by the index's size
        for kind, offset, length in atoms(moov, start, end):
            if kind in ("trak", "mdia", "minf", "stbl"):
                shift(offset + 8, offset + length)
            elif kind == "stco":
                (count,) = struct.unpack(">I", moov[offset + 12 : offset + 16])
                for k in range(offset + 16, offset + 16 + 4 * count, 4):
                    (value,) = struct.unpack(">I", moov[k : k + 4])
                    moov[k : k + 4] = struct.pack(">I", value + size)

    shift(8, size)
    ftyp = boxes["ftyp"][1]
    return data[:ftyp] + bytes(moov) + data[ftyp:at]


def noise_video(path: Path, frames: int = 40) -> bytes:
    """An mp4 of noise (every frame its own bytes, so a cut loses frames), returned whole."""
    rng = np.random.default_rng(1)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30, (320, 256))
    for _ in range(frames):
        writer.write((rng.random((256, 320, 3)) * 255).astype(np.uint8))
    writer.release()
    return path.read_bytes()


def walking_block_video(path: Path, frames: int = 8, size=(320, 256), fourcc: str = "mp4v") -> Path:
    """A small video of a bright block walking over a textured background."""
    rng = np.random.default_rng(0)
    background = (rng.random((size[1], size[0])) * 80 + 60).astype(np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 30, size)
    for k in range(frames):
        frame = background.copy()
        cv2.rectangle(frame, (50 + 3 * k, 100), (60 + 3 * k, 130), 255, -1)
        writer.write(cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))
    writer.release()
    return path
