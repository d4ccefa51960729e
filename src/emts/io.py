"""Frame sources (video file, image folder, glob, camera, numpy arrays) and result writers.

:func:`open_source` turns what a user names on the command line, or any iterable of numpy
arrays, into a :class:`FrameSource`. Sources yield frames as they are (uint8 or uint16, gray
or BGR); :class:`emts.preprocess.Preprocessor` validates and normalizes them.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import logging
import math
import os
import signal
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import cv2
import numpy as np

from emts.errors import BadInputError

log = logging.getLogger("emts")

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pgm", ".ppm"})
VIDEO_SUFFIXES = frozenset({".mp4", ".m4v", ".mov", ".avi", ".mkv"})  # what VideoWriter writes
DEFAULT_FPS = 30.0
MIN_FPS, MAX_FPS = 1.0, 1000.0  # a frame rate given for a source or a video (--fps)
MAX_VIDEO_SIDE = 8191  # px: the mpeg4 codec codes a frame's width and height in 13 bits
# A video's disk must keep room for what the writer holds and what closing the file writes:
# twice the larger of its write chunk (OpenCV's FFmpeg writer grows the file 256 KB at a time)
# and the largest step the file has grown by, plus the index (16 bytes a frame) and a margin.
# With less, the video is closed at once, playable, rather than left unplayable (no index) by
# a full disk.
VIDEO_WRITE_CHUNK = 256 * 1024
VIDEO_CLOSING_ROOM = 64 * 1024
CAMERA_PREFIX = "camera:"
_GLOB_CHARACTERS = frozenset("*?[")


class UnreadableFrame:
    """Stands in for an image that could not be decoded, so later frames keep their numbers.

    Yielded by image folders and globs opened with ``placeholders=True`` (the command line
    does); consumers write ``{"frame": i, "skipped": reason}`` and go on.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"UnreadableFrame({self.reason!r})"


_ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP until the block ends.

    Wrap the writes of one frame's outputs (its JSON line and its video frame) so that an
    interrupt lands between frames, never between the two: both files then hold the same
    frames. A signal that arrives meanwhile is raised again when the block ends.

    The handlers are swapped for ones that only note the signal (masking it would not do: a
    signal masked in the main thread is delivered to another of the process's threads --
    onnxruntime's, OpenCV's -- and Python runs its handler in the main thread at the next
    bytecode, inside the block). Outside the main thread the block holds nothing.
    """
    caught: list[int] = []
    previous = {}
    try:
        for number in _ENDING_SIGNALS:
            previous[number] = signal.signal(number, lambda n, _frame: caught.append(n))
    except ValueError:  # not the main thread: signals are the main thread's business
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():  # (None: set outside Python; the default)
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)


def check_fps(fps: float) -> float:
    """``fps`` as a float if it is a usable frame rate (:data:`MIN_FPS` to :data:`MAX_FPS`: what
    a video file can carry), else BadInputError."""
    try:
        value = float(fps)
    except (TypeError, ValueError):
        raise BadInputError(f"fps {fps!r} is not a number") from None
    if not math.isfinite(value) or not MIN_FPS <= value <= MAX_FPS:
        raise BadInputError(f"fps must be between {MIN_FPS:g} and {MAX_FPS:g}, got {fps!r}")
    return value


def write_image(path: str | Path, image: np.ndarray) -> None:
    """Write ``image`` to ``path`` in the format of its suffix: encoded in memory and written
    here, so that a full or failing disk is an OSError naming the file (no codec's message on
    the console), and no partial file is left."""
    path = Path(path)
    ok, data = cv2.imencode(path.suffix or ".png", image)
    if not ok:
        raise BadInputError(f"cannot encode {path} as {path.suffix or '.png'}")
    existed = path.exists()
    try:
        path.write_bytes(data.tobytes())
    except OSError as error:
        if not existed and path.is_file():  # our partial file (never a device's node)
            path.unlink(missing_ok=True)
        raise OSError(error.errno, f"cannot write it: {error.strerror}", str(path)) from None


class FrameSource:
    """An iterable of frames with what is known about them.

    Attributes:
        description: human-readable name of the source (for messages).
        fps: frames per second if known, else :data:`DEFAULT_FPS`.
        length: number of frames if known in advance, else None (cameras, generators).
        incomplete: once the frames are read, what went missing if the source ended before
            ``length`` (a truncated or damaged video), else None.
        read_ahead: whether its frames may be read by another thread, ahead of their use
            (:class:`emts.background.ReadAhead`): a file's or a folder's, each frame a new
            array; not a camera's, a stream's (which drop stale frames themselves) or the
            caller's own iterable.
    """

    description: str = "frames"
    fps: float = DEFAULT_FPS
    length: int | None = None
    incomplete: str | None = None
    read_ahead: bool = False

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

    def __init__(
        self,
        frames: Iterable[np.ndarray],
        description: str = "arrays",
        fps: float = DEFAULT_FPS,
    ) -> None:
        self._frames = frames
        self.description = description
        self.fps = fps
        self.length = len(frames) if hasattr(frames, "__len__") else None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[np.ndarray]:
        yield from self._frames


class ImageSequenceSource(FrameSource):
    """Still images read in the given order.

    An unreadable file is skipped with a warning; with ``placeholders=True`` an
    :class:`UnreadableFrame` is yielded in its place instead, so frame ``i`` stays the
    ``i``-th file.
    """

    read_ahead = True

    def __init__(
        self,
        paths: list[Path],
        description: str,
        fps: float = DEFAULT_FPS,
        placeholders: bool = False,
    ) -> None:
        if not paths:
            raise BadInputError(f"{description}: no images found")
        self.paths = paths
        self.description = description
        self.length = len(paths)
        self.fps = check_fps(fps)
        self.placeholders = placeholders
        self._first: np.ndarray | None = None
        if len(paths) == 1:  # one image: a source of no usable frame fails now, in one line
            self._first = _usable_image(paths[0], description)

    def __iter__(self) -> Iterator[np.ndarray | UnreadableFrame]:
        for path in self.paths:
            image, self._first = self._first, None
            why = f"unreadable image {path.name}"
            if image is None and path.is_file():  # a FIFO put there since: never opened
                image, why = read_image(path)
            if image is None:
                if self.placeholders:  # the consumer reports it with its frame number
                    yield UnreadableFrame(why)
                else:
                    log.warning("skipping %s", why)
                continue
            yield image


def _frame_count_slack(length: int) -> int:
    """Frames a whole video may fall short of its declared count: the count is exact in mp4,
    mov and avi, but an estimate from the duration in some containers (mkv)."""
    return max(1, length // 100)


def no_usable_frames(description: str, skipped: int, reason: str | None) -> BadInputError:
    """The error of a source none of whose frames could be used (every one skipped)."""
    first = f"; {reason}" if reason else ""
    return BadInputError(f"{description}: no usable frames ({skipped} skipped{first})")


def read_image(path: Path) -> tuple[np.ndarray | None, str]:
    """The image at ``path`` (as ``cv2.IMREAD_UNCHANGED`` reads it), or None and why not. A
    JPEG cut short (no end-of-image marker: a copy or an upload interrupted) is refused before
    libjpeg decodes it, which would print its own line and return the part it got."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return None, f"unreadable image {path.name} ({error.strerror or error})"
    if data[:2] == b"\xff\xd8" and data.rstrip(b"\0")[-2:] != b"\xff\xd9":
        return None, f"truncated JPEG {path.name} (no end-of-image marker)"
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED) if data else None
    return image, "" if image is not None else f"unreadable image {path.name}"


def _usable_image(path: Path, description: str) -> np.ndarray:
    """The image at ``path`` if EMTS can use it as a frame, else BadInputError."""
    from emts.geometry import FrameGeometry
    from emts.preprocess import validate_frame

    image, why = read_image(path)
    if image is None:
        detail = "" if why.startswith("unreadable image") else f" ({why})"
        raise BadInputError(f"{description} is not a readable image{detail}")
    try:
        FrameGeometry((validate_frame(image).shape[1], image.shape[0]))  # at least 16x16
    except BadInputError as error:
        raise BadInputError(f"{description}: {error}") from None
    return image


class VideoSource(FrameSource):
    """A video file or a camera, read with OpenCV.

    The first frame is read when the source is opened, so an unreadable or empty video fails
    at once with a clear message instead of producing nothing.
    """

    def __init__(self, target: str | int, description: str, fps: float | None = None) -> None:
        self.description = description
        self._is_camera = isinstance(target, int)
        self.read_ahead = not self._is_camera
        self._capture = cv2.VideoCapture(target)
        if not self._capture.isOpened():
            what = "could not be opened" if self._is_camera else "is not a readable video"
            raise BadInputError(f"{description} {what}")
        ok, first = self._capture.read()
        if not ok or first is None:
            self.close()
            raise BadInputError(f"{description} has no readable frames")
        self._first: np.ndarray | None = first
        if fps is not None:
            self.fps = check_fps(fps)
        else:
            own = self._capture.get(cv2.CAP_PROP_FPS)
            self.fps = own if math.isfinite(own) and 1.0 <= own <= 1000.0 else DEFAULT_FPS
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
        elif self.length is not None and self.length - delivered > _frame_count_slack(self.length):
            self.incomplete = (
                f"{self.description} ended after {delivered} of its {self.length} frames "
                "(truncated or damaged)"
            )
            log.warning("%s", self.incomplete)
        self.close()

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()


def _image_files(paths: Iterable[Path]) -> list[Path]:
    """``paths`` sorted, without what is not a regular file (a FIFO or a device: reading it
    may block for ever), each of those said in a warning."""
    files = []
    for path in sorted(paths):
        if path.is_file():
            files.append(path)
        elif not path.is_dir():
            log.warning("skipping %s: not a regular file", path)
    return files


def _camera_index(text: str) -> int:
    number = text[len(CAMERA_PREFIX) :].strip()
    if not number.isdigit():
        raise BadInputError(f"{text!r}: expected camera:N with N a camera index, e.g. camera:0")
    return int(number)


def source_files(source: str | int | Path) -> list[Path]:
    """The files a command-line ``source`` reads (none for a camera), for output checks."""
    if isinstance(source, int) or str(source).startswith(CAMERA_PREFIX) or not str(source).strip():
        return []
    path = Path(str(source))
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file())
    if path.exists():
        return [path]
    if _GLOB_CHARACTERS & set(str(source)):
        return sorted(Path(p) for p in glob.glob(str(source)))
    return []


def open_source(
    source: str | int | Path | Iterable[np.ndarray],
    fps: float | None = None,
    placeholders: bool = False,
    reconnect_timeout: float | None = None,
) -> FrameSource:
    """Open a frame source.

    Args:
        source: a video file, a folder of images (read in sorted-name order), a glob pattern
            such as ``"flight/*.png"``, a camera (an int, ``"camera:N"``, or a string of
            digits that names no file or folder), a live stream (an ``rtsp``, ``rtsps``,
            ``rtmp``, ``http(s)``, ``udp`` or ``tcp`` URL; ``rtsp://...?tcp`` for RTSP over
            TCP; a GStreamer pipeline ending in ``appsink`` where OpenCV has GStreamer; a
            Raspberry Pi camera, ``picamera`` or ``picamera:N``, through picamera2: an
            :class:`emts.live.LiveSource`), or any iterable of numpy arrays.
        fps: frame rate of an image folder, a glob or an iterable of arrays (default 30);
            for a video or camera it replaces the rate the container reports.
        placeholders: image folders and globs yield an :class:`UnreadableFrame` in place of
            an unreadable image instead of skipping it (frame numbers stay the files').
        reconnect_timeout: a live source's (stream, camera) seconds of reconnecting before
            it gives up; 0 = for ever (None: :data:`emts.live.DEFAULT_RECONNECT_TIMEOUT_S`).

    Raises:
        BadInputError: the source does not exist, cannot be read, or holds no frames; ``fps``
            is not a finite number > 0.
    """
    if fps is not None:
        fps = check_fps(fps)
    if isinstance(source, FrameSource):
        return source
    from emts import live  # here: live imports this module

    timeout = live.DEFAULT_RECONNECT_TIMEOUT_S if reconnect_timeout is None else reconnect_timeout
    if isinstance(source, int) and not isinstance(source, bool):
        return live.open_live(source, fps, timeout)
    if isinstance(source, str | Path):
        text = str(source)
        if not text.strip():  # Path("") is the current folder
            raise BadInputError("the source is an empty name; name a video, folder or camera")
        if live.is_stream_url(text) or live.is_gstreamer_pipeline(text):
            return live.open_live(text, fps, timeout)
        if live.picamera_index(text) is not None and not Path(text).exists():
            return live.open_live(text, fps, timeout)
        if text.startswith(CAMERA_PREFIX):
            return live.open_live(_camera_index(text), fps, timeout)
        path = Path(text)
        sequence_fps = DEFAULT_FPS if fps is None else fps
        if path.is_dir():  # a folder named "2024" beats camera 2024
            images = _image_files(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            return ImageSequenceSource(images, f"folder {text}", sequence_fps, placeholders)
        if path.is_file():
            if path.suffix.lower() in IMAGE_SUFFIXES:
                return ImageSequenceSource([path], f"image {text}", sequence_fps, placeholders)
            return VideoSource(text, f"video {text}", fps)
        if isinstance(source, str) and text.isdigit() and not path.exists():
            return live.open_live(int(text), fps, timeout)
        if path.exists():  # a FIFO, a device, a socket: reading may never return
            raise BadInputError(f"{text} is not a regular file or folder")
        if _GLOB_CHARACTERS & set(text):
            matches = (Path(p) for p in glob.glob(text))
            images = _image_files(p for p in matches if p.suffix.lower() in IMAGE_SUFFIXES)
            return ImageSequenceSource(images, f"pattern {text}", sequence_fps, placeholders)
        raise BadInputError(f"{text}: no such file or folder")
    if isinstance(source, np.ndarray) and source.ndim in (2, 3) and source.dtype != object:
        raise BadInputError("pass a sequence of frames, not a single frame array")
    if isinstance(source, Iterable):
        return ArraySource(source, fps=DEFAULT_FPS if fps is None else fps)
    raise BadInputError(f"cannot read frames from {type(source).__name__}")


class JsonlWriter:
    """Writes one JSON object per line and flushes each line, so nothing computed is lost.

    Args:
        path: output file, or ``"-"`` for standard output.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._failed = False
        if self.path == "-":
            self._stream: IO[str] = sys.stdout
        else:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                self._stream = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
            except OSError as error:
                raise BadInputError(f"cannot write {self.path}: {error.strerror}") from None

    def write(self, record: dict[str, Any]) -> None:
        self.write_line(json.dumps(record, separators=(", ", ": ")))

    def write_line(self, text: str) -> None:
        """One line of text (no newline in it), flushed."""
        try:
            self._stream.write(text + "\n")
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:  # a full or failing disk: say which file
            self._failed = True
            raise OSError(error.errno, error.strerror, self.path) from None

    def close(self) -> None:
        if self._stream is sys.stdout:
            return
        try:
            self._stream.close()
        except OSError as error:  # the last flush; said once (by write) is enough
            if not self._failed:
                raise OSError(error.errno, error.strerror, self.path) from None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class VideoWriter:
    """MP4 writer (OpenCV, ``mp4v``) that opens lazily on the first frame's size.

    A video has one frame size: a later frame of another size is letterboxed into the first
    size (aspect kept, black bars), and that is said once in a warning. (OpenCV's writer
    would silently drop it.) Gray frames are written as BGR.

    OpenCV's writer reports no failure, so this one checks for itself: a first frame larger
    than the codec takes, or a writer that will not open, is a BadInputError that says why; a
    disk about to fill (too little room left to write what the writer holds and close the
    file: :data:`VIDEO_WRITE_CHUNK`) closes the video at once -- playable, with the frames so
    far -- and raises an
    OSError (ENOSPC) that says so; and :meth:`close` checks that the file plays
    (:attr:`problem` says what is wrong if it does not; :meth:`finish` raises it).
    """

    def __init__(self, path: str | Path, fps: float = DEFAULT_FPS) -> None:
        self.path = str(path)
        self.fps = check_fps(fps)
        self._writer: cv2.VideoWriter | None = None
        self.size: tuple[int, int] | None = None  # (w, h) of the video
        self.frames = 0
        self.letterboxed = 0  # frames that had another size
        self.problem: str | None = None  # after close: why the file does not play, if it does not
        self._bytes = 0  # the file's size after the last frame
        self._largest = 0  # the most one frame has added to it
        self._closed = False

    def write(self, image: np.ndarray) -> None:
        if image.ndim == 2:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
        if self._writer is None:
            self._open((image.shape[1], image.shape[0]))
        if (image.shape[1], image.shape[0]) != self.size:
            image = self._letterbox(image)
        self._make_room()
        self._writer.write(image)
        self.frames += 1

    def _open(self, size: tuple[int, int]) -> None:
        if self._closed:
            raise BadInputError(f"video {self.path} is closed; it stopped at frame {self.frames}")
        if max(size) > MAX_VIDEO_SIDE:
            raise BadInputError(
                f"cannot write video {self.path}: frame {size[0]}x{size[1]} is too large for the "
                f"mpeg4 codec (at most {MAX_VIDEO_SIDE} px a side)"
            )
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BadInputError(f"cannot write video {self.path}: {error.strerror}") from None
        self.size = size
        level = cv2.utils.logging.getLogLevel()
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)  # we say why
        try:
            fourcc = cv2.VideoWriter_fourcc(*"mp4v")
            self._writer = cv2.VideoWriter(self.path, fourcc, self.fps, size)
        finally:
            cv2.utils.logging.setLogLevel(level)
        if not self._writer.isOpened():
            self._writer = None
            raise BadInputError(
                f"cannot write video {self.path}: OpenCV's mpeg4 writer would not open it at "
                f"{size[0]}x{size[1]}, {self.fps:g} fps"
            )

    def _make_room(self) -> None:
        """Close the video, playable, before a frame the disk may not hold (OSError)."""
        try:
            grown = os.stat(self.path).st_size
            disk = os.statvfs(Path(self.path).parent)
        except (OSError, AttributeError):  # no file yet (buffered), or no statvfs (Windows)
            return
        self._largest = max(self._largest, grown - self._bytes)
        self._bytes = grown
        free = disk.f_bavail * disk.f_frsize
        held = max(VIDEO_WRITE_CHUNK, self._largest)
        if free >= 2 * held + VIDEO_CLOSING_ROOM + 16 * self.frames:
            return
        self.close()
        if self.frames:
            stops = f"the video stops at frame {self.frames}, playable"
        else:
            stops = "no video written"
            with contextlib.suppress(OSError):
                os.remove(self.path)
        raise OSError(
            errno.ENOSPC,
            f"its disk is nearly full ({free // 1024} KB left): {stops}, and the run ends "
            "here; free some space",
            self.path,
        )

    def _letterbox(self, image: np.ndarray) -> np.ndarray:
        from emts.geometry import Letterbox

        assert self.size is not None
        if not self.letterboxed:
            log.warning(
                "video %s: frames of another size (first %dx%d) are letterboxed into %dx%d",
                self.path,
                image.shape[1],
                image.shape[0],
                *self.size,
            )
        self.letterboxed += 1
        box = Letterbox.fit((image.shape[1], image.shape[0]), self.size)
        shrinking = box.content[0] < image.shape[1]
        resized = cv2.resize(
            image, box.content, interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
        )
        left, top = box.pad
        right = self.size[0] - box.content[0] - left
        bottom = self.size[1] - box.content[1] - top
        return cv2.copyMakeBorder(resized, top, bottom, left, right, cv2.BORDER_CONSTANT, value=0)

    def close(self) -> None:
        """Finish the file (idempotent) and check that it plays: :attr:`problem` says what is
        wrong if it does not."""
        if self._writer is None:
            return
        self._writer.release()
        self._writer, self._closed = None, True
        if not self.frames:
            return
        capture = cv2.VideoCapture(self.path)
        try:
            if not capture.isOpened() or not capture.read()[0]:
                self.problem = (
                    f"the video is incomplete and does not play ({self.frames} frames were "
                    "written): its disk filled up or failed"
                )
        finally:
            capture.release()

    def finish(self) -> None:
        """:meth:`close`, and an OSError if the file does not play."""
        self.close()
        if self.problem:
            raise OSError(errno.EIO, self.problem, self.path)

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type, *exc: object) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.close()


def check_writable(name: str, path: Path, folder: bool = False) -> None:
    """Refuse an output path that cannot be created, before any work is done.

    Args:
        name: what the path is called in the message (the command line passes its flag).
        path: the file (or, with ``folder``, the folder) to be written.
    """
    if folder:
        if path.exists() and not path.is_dir():
            raise BadInputError(f"{name} {path} is a file; name a folder")
    elif path.is_dir():
        raise BadInputError(f"{name} {path} is a folder; name a file in it")
    ancestor = (path if folder else path.parent).absolute()
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise BadInputError(f"{name} {path}: {ancestor} is not a folder; choose another path")
    try:  # a probe, removed at once: permissions alone miss read-only and virtual file systems
        os.rmdir(tempfile.mkdtemp(prefix=".emts-probe-", dir=ancestor))
    except OSError as error:
        raise BadInputError(
            f"{name} {path}: cannot write in {ancestor} ({error.strerror}); choose another folder"
        ) from None
    if not folder and path.exists() and not os.access(path, os.W_OK):
        raise BadInputError(f"{name} {path} is read-only; choose another file")


def check_outputs(
    source: str | int | None,
    outputs: dict[str, str | None],
    inputs: dict[str, str | Path | Iterable[str | Path] | None] | None = None,
) -> None:
    """Refuse outputs that would overwrite an input or another output, or cannot be written.

    An output is an input when it is the same file (also through a symlink or a hard link) as
    one of the source's files or as any other file the run reads: a model, a member, a
    calibration file.

    Args:
        source: the job's source (its files are the inputs), or None.
        outputs: name -> path as given (None or '-' for "not written to a file"); the names
            are what the messages call the outputs (the command line passes its flags).
        inputs: the other files the run reads: what a message calls them (e.g. "the --model
            of this run") -> a path or several (None: none).
    """
    named = {name: Path(p) for name, p in outputs.items() if p and p != "-"}
    claimed: dict[Path, str] = {}
    for name, path in named.items():
        resolved = path.resolve()
        if resolved in claimed:
            raise BadInputError(
                f"{claimed[resolved]} and {name} both name {path}; give each output its own file"
            )
        claimed[resolved] = name
    existing = {name: path.stat() for name, path in named.items() if path.is_file()}
    if existing:
        read: dict[tuple[int, int], str] = {}
        if source is not None:
            for stat in (f.stat() for f in source_files(source)):
                read[stat.st_dev, stat.st_ino] = "an input of this run"
        for what, paths in (inputs or {}).items():
            for path in [paths] if isinstance(paths, str | Path) else paths or []:
                with contextlib.suppress(OSError):  # a name that is no file reads nothing
                    stat = Path(path).stat()
                    read.setdefault((stat.st_dev, stat.st_ino), what)
        for name, stat in existing.items():
            what = read.get((stat.st_dev, stat.st_ino))
            if what is not None:
                raise BadInputError(f"{name} {named[name]} is {what}; choose another file")
    for name, path in named.items():
        check_writable(name, path)


def check_video_suffix(name: str, path: str | None) -> None:
    """Refuse a video path that :class:`VideoWriter` cannot write (``name``: as in
    :func:`check_writable`)."""
    if path and Path(path).suffix.lower() not in VIDEO_SUFFIXES:
        kinds = ", ".join(sorted(VIDEO_SUFFIXES))
        raise BadInputError(f"{name} {path}: a video must end in one of {kinds}")


def check_png(name: str, path: str | None) -> None:
    """Refuse an image path that is not a .png (``name``: as in :func:`check_writable`)."""
    if path and Path(path).suffix.lower() != ".png":
        raise BadInputError(f"{name} {path}: must be a .png file")
