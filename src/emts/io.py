"""Frame sources (video file, image folder, glob, camera, numpy arrays) and result writers.

:func:`open_source` turns what a user names on the command line, or any iterable of numpy
arrays, into a :class:`FrameSource`. Sources yield frames as they are (uint8 or uint16, gray
or BGR); :class:`emts.preprocess.Preprocessor` validates and normalizes them.
"""

from __future__ import annotations

import glob
import json
import logging
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import cv2
import numpy as np

from emts.errors import BadInputError

log = logging.getLogger("emts")

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pgm", ".ppm"})
DEFAULT_FPS = 30.0
_GLOB_CHARACTERS = frozenset("*?[")


class FrameSource:
    """An iterable of frames with what is known about them.

    Attributes:
        description: human-readable name of the source (for messages).
        fps: frames per second if known, else :data:`DEFAULT_FPS`.
        length: number of frames if known in advance, else None (cameras, generators).
    """

    description: str = "frames"
    fps: float = DEFAULT_FPS
    length: int | None = None

    def __iter__(self) -> Iterator[np.ndarray]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the underlying device or file (idempotent)."""

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ArraySource(FrameSource):
    """Frames from any iterable of numpy arrays (the Python API's source)."""

    def __init__(self, frames: Iterable[np.ndarray], description: str = "arrays") -> None:
        self._frames = frames
        self.description = description
        self.length = len(frames) if hasattr(frames, "__len__") else None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[np.ndarray]:
        yield from self._frames


class ImageSequenceSource(FrameSource):
    """Still images read in the given order; unreadable files are skipped with a warning."""

    def __init__(self, paths: list[Path], description: str) -> None:
        if not paths:
            raise BadInputError(f"{description}: no images found")
        self.paths = paths
        self.description = description
        self.length = len(paths)

    def __iter__(self) -> Iterator[np.ndarray]:
        for path in self.paths:
            image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if image is None:
                log.warning("skipping unreadable image %s", path)
                continue
            yield image


class VideoSource(FrameSource):
    """A video file or a camera, read with OpenCV.

    The first frame is read when the source is opened, so an unreadable or empty video fails
    at once with a clear message instead of producing nothing.
    """

    def __init__(self, target: str | int, description: str) -> None:
        self.description = description
        self._is_camera = isinstance(target, int)
        self._capture = cv2.VideoCapture(target)
        if not self._capture.isOpened():
            what = "could not be opened" if self._is_camera else "is not a readable video"
            raise BadInputError(f"{description} {what}")
        ok, first = self._capture.read()
        if not ok or first is None:
            self.close()
            raise BadInputError(f"{description} has no readable frames")
        self._first: np.ndarray | None = first
        fps = self._capture.get(cv2.CAP_PROP_FPS)
        self.fps = fps if math.isfinite(fps) and 1.0 <= fps <= 1000.0 else DEFAULT_FPS
        count = int(self._capture.get(cv2.CAP_PROP_FRAME_COUNT))
        self.length = count if count > 0 and not self._is_camera else None

    def __iter__(self) -> Iterator[np.ndarray]:
        if self._first is None:
            raise BadInputError(f"{self.description} can be read only once")
        frame, self._first = self._first, None
        delivered = 0
        while frame is not None:
            yield frame
            delivered += 1
            ok, frame = self._capture.read()
            if not ok:
                frame = None
        if self._is_camera:
            log.warning("%s stopped delivering frames after %d frames", self.description, delivered)
        self.close()

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()


def open_source(source: str | int | Path | Iterable[np.ndarray]) -> FrameSource:
    """Open a frame source.

    Args:
        source: a camera index (int, or a string of digits), a video file, a folder of images
            (read in sorted-name order), a glob pattern such as ``"flight/*.png"``, or any
            iterable of numpy arrays.

    Raises:
        BadInputError: the source does not exist, cannot be read, or holds no frames.
    """
    if isinstance(source, FrameSource):
        return source
    if isinstance(source, int) or (isinstance(source, str) and source.isdigit()):
        index = int(source)
        return VideoSource(index, f"camera {index}")
    if isinstance(source, str | Path):
        text = str(source)
        path = Path(text)
        if path.is_dir():
            images = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            return ImageSequenceSource(images, f"folder {text}")
        if path.is_file():
            if path.suffix.lower() in IMAGE_SUFFIXES:
                return ImageSequenceSource([path], f"image {text}")
            return VideoSource(text, f"video {text}")
        if _GLOB_CHARACTERS & set(text):
            matches = sorted(Path(p) for p in glob.glob(text))
            images = [p for p in matches if p.suffix.lower() in IMAGE_SUFFIXES]
            return ImageSequenceSource(images, f"pattern {text}")
        raise BadInputError(f"{text}: no such file or folder")
    if isinstance(source, np.ndarray) and source.ndim in (2, 3) and source.dtype != object:
        raise BadInputError("pass a sequence of frames, not a single frame array")
    if isinstance(source, Iterable):
        return ArraySource(source)
    raise BadInputError(f"cannot read frames from {type(source).__name__}")


class JsonlWriter:
    """Writes one JSON object per line and flushes each line, so nothing computed is lost.

    Args:
        path: output file, or ``"-"`` for standard output.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path == "-":
            self._stream: IO[str] = sys.stdout
        else:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                self._stream = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
            except OSError as error:
                raise BadInputError(f"cannot write {self.path}: {error.strerror}") from None

    def write(self, record: dict[str, Any]) -> None:
        self._stream.write(json.dumps(record, separators=(", ", ": ")) + "\n")
        self._stream.flush()

    def close(self) -> None:
        if self._stream is not sys.stdout:
            self._stream.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class VideoWriter:
    """MP4 writer (OpenCV, ``mp4v``) that opens lazily on the first frame's size."""

    def __init__(self, path: str | Path, fps: float = DEFAULT_FPS) -> None:
        self.path = str(path)
        self.fps = fps
        self._writer: cv2.VideoWriter | None = None
        self.frames = 0

    def write(self, image: np.ndarray) -> None:
        if self._writer is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            size = (image.shape[1], image.shape[0])
            self._writer = cv2.VideoWriter(
                self.path, cv2.VideoWriter_fourcc(*"mp4v"), self.fps, size
            )
            if not self._writer.isOpened():
                raise BadInputError(f"cannot write video {self.path}")
        self._writer.write(image)
        self.frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
