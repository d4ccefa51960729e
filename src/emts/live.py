"""Live sources: rtsp / http MJPEG / udp / tcp / rtmp URLs, GStreamer pipelines, cameras and a
Raspberry Pi camera (``picamera[:N]``, through picamera2 where it is installed).

A grabber thread reads the stream continuously and keeps only the newest frame, so a tracker
slower than the stream always works on the present, never on a queue of stale frames; the
frames it never saw are counted as ``dropped``. When the stream drops (or a camera is
unplugged), the grabber reconnects with backoff and says so; after ``reconnect_timeout``
seconds without a frame it gives up and the iteration ends. While the consumer waits for a
frame, :attr:`LiveSource.on_wait` is called every quarter second (the MAVLink component's
heartbeat and commands go on during a reconnect).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator

import cv2
import numpy as np

from emts.errors import BadInputError
from emts.io import DEFAULT_FPS, FrameSource, check_fps

log = logging.getLogger("emts")

URL_SCHEMES = ("rtsp", "rtsps", "rtmp", "http", "https", "udp", "tcp")
TCP_OPTION = "?tcp"  # appended to an rtsp:// URL: RTP over the RTSP TCP connection
_FFMPEG_OPTIONS = "OPENCV_FFMPEG_CAPTURE_OPTIONS"
_OPEN_TIMEOUT_MS = 5000  # a dead host or socket fails an open or a read after this long
_READ_TIMEOUT_MS = 5000
_BACKOFF_FIRST_S = 0.5  # reconnect tries wait 0.5, 1, 2, 4, 8, 8, ... s
_BACKOFF_MAX_S = 8.0
DEFAULT_RECONNECT_TIMEOUT_S = 30.0
_WAIT_SLICE_S = 0.25  # the consumer wakes this often, so Ctrl-C is never held up


PICAMERA_PREFIX = "picamera"  # picamera or picamera:N -- a Raspberry Pi camera, via picamera2
PICAMERA_SIZE = (1280, 720)  # the frames a Pi camera is asked for (BGR, 8 bits)


def picamera_index(text: str) -> int | None:
    """N of ``picamera`` (0) or ``picamera:N``; None for any other text (BadInputError for a
    malformed ``picamera:...``)."""
    if text == PICAMERA_PREFIX:
        return 0
    if not text.startswith(PICAMERA_PREFIX + ":"):
        return None
    number = text[len(PICAMERA_PREFIX) + 1 :].strip()
    if not number.isdigit():
        raise BadInputError(f"{text!r}: expected picamera or picamera:N, e.g. picamera:0")
    return int(number)


class _PiCamera:
    """A Raspberry Pi camera through picamera2, behind the ``cv2.VideoCapture`` calls that
    :class:`LiveSource` makes (``read``, ``get``, ``release``): 1280x720 BGR frames (picamera2's
    ``RGB888`` is B, G, R in memory, as OpenCV wants it)."""

    def __init__(self, index: int, fps: float | None) -> None:
        from picamera2 import Picamera2

        self.camera = Picamera2(index)
        controls = {} if fps is None else {"FrameRate": float(fps)}
        config = self.camera.create_video_configuration(
            main={"format": "RGB888", "size": PICAMERA_SIZE}, controls=controls
        )
        self.camera.configure(config)
        self.camera.start()
        self.fps = fps

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return True

    def get(self, prop) -> float:
        return float(self.fps) if self.fps else math.nan

    def read(self):
        try:
            frame = self.camera.capture_array("main")
        except Exception:  # the camera went away (picamera2 raises its own and libcamera's)
            return False, None
        if frame is None or frame.ndim != 3 or frame.shape[2] < 3:
            return False, None
        return True, np.ascontiguousarray(frame[:, :, :3])

    def release(self) -> None:
        try:
            self.camera.stop()
            self.camera.close()
        except Exception:  # closing a camera that is gone: nothing left to release
            pass


def is_stream_url(text: str) -> bool:
    """True for ``scheme://...`` with a scheme of :data:`URL_SCHEMES`."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in URL_SCHEMES


def is_gstreamer_pipeline(text: str) -> bool:
    """True for a GStreamer pipeline string: elements joined by `` ! ``, ending in appsink."""
    return " ! " in text and text.rstrip().split(" ! ")[-1].strip().startswith("appsink")


def gstreamer_available() -> bool:
    """Whether this OpenCV build reports ``GStreamer: YES``."""
    for line in cv2.getBuildInformation().splitlines():
        if line.strip().startswith("GStreamer:"):
            return "YES" in line
    return False


class LiveSource(FrameSource):
    """A live stream read by a grabber thread that keeps only the newest frame.

    Iteration yields the newest frame not yet yielded, waiting for one if needed. After each
    frame, :meth:`news` says how many frames were dropped since the previous frame and whether
    the stream reconnected. ``length`` is None.

    Args:
        target: a URL (see :data:`URL_SCHEMES`; ``rtsp://...?tcp`` forces RTSP over TCP), a
            GStreamer pipeline ending in ``appsink``, or a camera index.
        description: how messages name the stream.
        fps: the stream's frame rate if known better than what it reports.
        reconnect_timeout: seconds to keep trying after the stream drops; 0 = for ever.

    Raises:
        BadInputError: the stream cannot be opened (in one line, within the open timeout).

    Example:
        >>> url = "http://127.0.0.1:8080/stream.mjpg"
        >>> with LiveSource(url, "stream") as frames:  # doctest: +SKIP
        ...     for frame in frames:
        ...         dropped, event = frames.news()
    """

    def __init__(
        self,
        target: str | int,
        description: str,
        fps: float | None = None,
        reconnect_timeout: float = DEFAULT_RECONNECT_TIMEOUT_S,
    ) -> None:
        self.description = description
        self.reconnect_timeout = float(reconnect_timeout)
        if not math.isfinite(self.reconnect_timeout) or self.reconnect_timeout < 0:
            raise BadInputError("the reconnect timeout must be a number of seconds >= 0")
        # called (no arguments) every _WAIT_SLICE_S while the consumer waits for a frame
        self.on_wait: Callable[[], None] | None = None
        self._camera = isinstance(target, int)
        self._picamera = None if self._camera else picamera_index(target)
        self._fps = fps
        self._device = self._camera or self._picamera is not None  # a camera, not a stream
        text = "" if self._device else target
        self._gstreamer = is_gstreamer_pipeline(text)
        self._tcp = text.lower().startswith(("rtsp://", "rtsps://")) and text.endswith(TCP_OPTION)
        self._target = target[: -len(TCP_OPTION)] if self._tcp else target
        self._lock = threading.Condition()
        self._frame: np.ndarray | None = None  # the newest frame not yet yielded
        self._dropped = 0  # frames overwritten before they were yielded, since the last news()
        self._event: str | None = None  # "reconnected" until the next news()
        self._stopped = False
        self.ended: str | None = None  # why the stream ended ("timeout"), else None
        self._capture = self._open()
        if self._capture is None:
            what = "camera" if self._device else "stream"
            raise BadInputError(f"{description} could not be opened (no {what} there?)")
        if fps is not None:
            self.fps = check_fps(fps)
        else:
            own = self._capture.get(cv2.CAP_PROP_FPS)
            self.fps = own if math.isfinite(own) and 1.0 <= own <= 1000.0 else DEFAULT_FPS
        self._thread = threading.Thread(target=self._grab, name="emts-grabber", daemon=True)
        self._thread.start()

    def _open(self) -> cv2.VideoCapture | None:
        """A capture of the stream, or None if it cannot be opened now."""
        if self._picamera is not None:
            try:
                return _PiCamera(self._picamera, self._fps)
            except ImportError:
                raise BadInputError(
                    f"{self.description} needs picamera2 (Raspberry Pi OS: sudo apt install "
                    "python3-picamera2, and a virtual environment made with "
                    "--system-site-packages)"
                ) from None
            except Exception as error:  # no such camera, busy, libcamera's own errors
                log.debug("%s: %s", self.description, error)
                return None
        if self._camera:
            capture = cv2.VideoCapture(self._target)
        elif self._gstreamer:
            capture = cv2.VideoCapture(self._target, cv2.CAP_GSTREAMER)
        else:
            params = [
                cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
                _OPEN_TIMEOUT_MS,
                cv2.CAP_PROP_READ_TIMEOUT_MSEC,
                _READ_TIMEOUT_MS,
            ]
            saved = os.environ.get(_FFMPEG_OPTIONS)
            if self._tcp:
                os.environ[_FFMPEG_OPTIONS] = "rtsp_transport;tcp"
            try:
                capture = cv2.VideoCapture(self._target, cv2.CAP_FFMPEG, params)
            finally:
                if self._tcp:
                    if saved is None:
                        os.environ.pop(_FFMPEG_OPTIONS, None)
                    else:
                        os.environ[_FFMPEG_OPTIONS] = saved
        if capture.isOpened():
            return capture
        capture.release()
        return None

    def _grab(self) -> None:
        """The grabber thread: read, keep the newest frame, reconnect when the stream drops."""
        capture = self._capture
        while not self._stopped:
            ok, frame = capture.read() if capture is not None else (False, None)
            if ok and frame is not None:
                with self._lock:
                    self._dropped += self._frame is not None
                    self._frame = frame
                    self._lock.notify_all()
                continue
            if self._stopped:
                break
            capture.release()
            what = "stopped delivering frames (unplugged?)" if self._device else "dropped"
            log.warning("%s %s; reconnecting", self.description, what)
            capture = self._reconnect()
            with self._lock:
                self._capture = capture
                if capture is None:
                    if not self._stopped:
                        self.ended = "timeout"
                    self._lock.notify_all()
                    return
                self._event = "reconnected"
        if capture is not None:
            capture.release()

    def _reconnect(self) -> cv2.VideoCapture | None:
        """Try to open the stream with backoff; None on giving up (or on close)."""
        started = time.monotonic()
        wait = _BACKOFF_FIRST_S
        while not self._stopped:
            elapsed = time.monotonic() - started
            if self.reconnect_timeout and elapsed >= self.reconnect_timeout:
                log.error(
                    "%s: no reconnect within %g s; giving up",
                    self.description,
                    self.reconnect_timeout,
                )
                self.incomplete = (
                    f"{self.description} dropped and did not come back within "
                    f"{self.reconnect_timeout:g} s (ended by timeout)"
                )
                return None
            capture = self._open()
            if capture is not None:
                log.warning(
                    "%s reconnected after %.1f s",
                    self.description,
                    time.monotonic() - started,
                )
                return capture
            time.sleep(wait)
            wait = min(wait * 2, _BACKOFF_MAX_S)
        return None

    def __iter__(self) -> Iterator[np.ndarray]:
        while True:
            frame = self._next()
            if frame is None:
                return
            yield frame

    def _next(self) -> np.ndarray | None:
        """The newest frame not yet yielded, waiting for one (None: the stream ended), calling
        :attr:`on_wait` every wait slice, outside the lock."""
        while True:
            with self._lock:
                if self._frame is None and self.ended is None and not self._stopped:
                    self._lock.wait(_WAIT_SLICE_S)
                frame, self._frame = self._frame, None
                over = frame is None and (self.ended is not None or self._stopped)
            if frame is not None or over:
                return frame
            if self.on_wait is not None:
                self.on_wait()

    def news(self) -> tuple[int, str | None]:
        """(frames dropped since the last call, ``"reconnected"`` if the stream reconnected
        since the last call, else None)."""
        with self._lock:
            news = self._dropped, self._event
            self._dropped, self._event = 0, None
        return news

    def close(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
            capture = self._capture
        self._thread.join(timeout=_READ_TIMEOUT_MS / 1000 + 1)
        if capture is not None and not self._thread.is_alive():
            capture.release()  # idempotent; a grabber still in a read releases its own


def open_live(
    text: str | int,
    fps: float | None = None,
    reconnect_timeout: float = DEFAULT_RECONNECT_TIMEOUT_S,
) -> LiveSource:
    """A :class:`LiveSource` for a URL, a GStreamer pipeline or a camera index (the caller
    checked which)."""
    if isinstance(text, int):
        return LiveSource(text, f"camera {text}", fps, reconnect_timeout)
    if picamera_index(text) is not None:
        return LiveSource(text, f"Pi camera {picamera_index(text)}", fps, reconnect_timeout)
    if is_gstreamer_pipeline(text):
        if not gstreamer_available():
            raise BadInputError(
                "this OpenCV build has no GStreamer (cv2.getBuildInformation() says "
                "GStreamer: NO); give a URL instead of a pipeline"
            )
        return LiveSource(text, "GStreamer pipeline", fps, reconnect_timeout)
    return LiveSource(text, f"stream {text}", fps, reconnect_timeout)
