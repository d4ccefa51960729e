"""``emts serve``: a ground-station page for the tracker (extra ``[serve]``: starlette, uvicorn).

``emts serve SOURCE`` runs ``emts track``'s loop (:func:`emts.apps.track.run_track`, with the same
frame hook the MAVLink component uses) in one background thread and serves, on 127.0.0.1
unless told otherwise:

* ``GET /``            the page: one self-contained HTML file (inline CSS and JS, nothing
  fetched from elsewhere: field laptops are often offline). It shows the annotated video,
  mode, P(human), verified and the per-frame latency live; a click on the video locks the
  person under it, a drag locks on the box drawn, "Unlock" drops the lock.
* ``GET /stream.mjpg`` the annotated video (``multipart/x-mixed-replace`` JPEG frames).
* ``GET /state``       the latest ``emts track`` JSON line (same schema: ``frame``, ``mode``,
  ``target`` {``box``, ``score``, ``p_human``, ``verified``, ``measured_by``}, ``ms``, and
  ``event`` / ``lock_source`` when present); ``null`` before the first frame.
* ``GET /status``      the run: ``waiting`` (for the first viewer) | ``running`` | ``ended`` |
  ``error`` (+ ``error``: why; for ``ended``, what went missing from a source that ended early,
  e.g. a truncated video), the source,
  the input size (W, H), fps, frames processed, whether it loops, and ``tap``: what became
  of the last tap the pipeline applied, ``{"id", "frame", "result"}`` with ``result``
  ``"lock"`` or ``"no_target"`` (nothing detected and nothing standing out from the ground
  under the point, on the tap's frame nor on the few after it that try again: no lock made, a
  lock held kept), or null before any.
* ``POST /lock``       ``{"x": .., "y": ..}``: a tap at that input pixel of the frame last
  shown, or ``{"x", "y", "w", "h"}``: a box (x, y its top-left corner, as ``--lock X,Y,W,H``).
  Answered 202 ``{"queued": {"x", "y", "box", "id"}}``: the tap's outcome is ``/status``'s
  ``tap`` once its ``id`` is this one (the page says "No target there" for ``no_target``).
* ``POST /unlock``     drop the lock (with auto-lock on, EMTS may lock again on its own).

A recorded source (a file or folder) waits for its first viewer by default: the tracking
starts when the page or ``/stream.mjpg`` is first opened, so the person who watches sees the
flight from its first frame (``start="now"``: at once; a camera or stream, or a station with
MAVLink, starts at once by default).

A request body over :data:`MAX_BODY_BYTES` is answered 413 unread. A looped source whose
whole pass gave no usable frame (e.g. a 1x1 image) stops the station with one error line
(``/status``: ``error``) rather than warning about every frame forever; Ctrl-C ends the open
video streams first, so the server closes without cancelling them.

Threads: the pipeline runs only in its own thread. HTTP handlers never touch it: taps and
unlocks are queued and applied by that thread between two frames (``pipeline.lock(...,
on_last_frame=True)``: the tap is carried by the next frame's camera motion), and handlers
read only the latest published line and JPEG, under a lock. A file source plays at its frame
rate (or ``--fps``), loops with ``loop=True`` (the jump back to the first frame is a cut,
tracked as any cut: the lock may go to ``reacquire``) or ends: the page then says "ended" and
``/state`` keeps the last line.

Coordinates: input pixels with pixel ``i``'s centre at ``i`` (edges at -0.5 and W - 0.5), as
everywhere in EMTS; the page converts a click at display offset ``u`` of a ``D``-wide picture
to ``u * W / D - 0.5``, and a drawn box's corners to ``u * W / D`` (box edges).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from emts.apps.track import FrameHook, LockRequest, record, run_track
from emts.errors import BadInputError
from emts.io import FrameSource, UnreadableFrame, open_source

if TYPE_CHECKING:
    from emts.pipeline import Pipeline

log = logging.getLogger("emts")

JPEG_QUALITY = 80  # the stream's JPEG quality (0-100)
STREAM_POLL_S = 0.02  # how often a stream handler looks for a new frame
MAX_PENDING_COMMANDS = 32  # taps beyond this (a stuck pipeline) are refused, not queued
STOP_TIMEOUT_S = 10.0  # how long stop() waits for the frame being processed
# the largest request body read (POST /lock's is ~40 bytes): larger ones are answered 413
# unread, so no client can make the station hold its body in memory
MAX_BODY_BYTES = 64 * 1024


def _require_serve_extra():
    """starlette and uvicorn, or one line saying how to get them."""
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        raise BadInputError(
            "emts serve needs starlette and uvicorn: pip install 'emts[serve]'"
        ) from None
    return uvicorn


class NotNow(BadInputError):
    """A request the station cannot take at the moment (HTTP 409): no frame shown yet, the
    source has ended, or too many requests are waiting for the pipeline."""


def is_live(source: FrameSource) -> bool:
    """A camera or a stream (:class:`emts.live.LiveSource`): it plays at its own pace, watched
    or not."""
    from emts.live import LiveSource

    return isinstance(source, LiveSource)


@dataclass(frozen=True)
class _Command:
    """An operator request queued by an HTTP handler for the pipeline thread."""

    unlock: bool = False
    tap: LockRequest | None = None
    id: int = 0  # a tap's number (POST /lock's answer, /status's ``tap``)


class _LiveFrames(FrameSource):
    """The station's frame source: the user's source, paced to its frame rate (files and
    folders; a camera paces itself), looped if asked, and stopped on request. Before each
    frame it applies the operator's queued commands -- the only place they touch the
    pipeline -- so a tap lands between two frames, on the pipeline's own thread."""

    def __init__(self, station: GroundStation, first: FrameSource) -> None:
        self.station = station
        self.first = first
        self.description = first.description
        self.fps = first.fps
        self.length = None if station.loop else first.length
        self.paced = station.pace and not is_live(first)  # a camera or stream paces itself
        self.on_wait = None  # run_track's: passed on to a live source (its outages)
        self.source_now: FrameSource = first  # the pass being played

    @property
    def incomplete(self) -> str | None:
        """What went missing from the pass played last (a truncated video, a stream gone)."""
        return self.source_now.incomplete

    def __iter__(self) -> Iterator[np.ndarray | UnreadableFrame]:
        station = self.station
        frames: FrameSource | None = self.first
        due = time.monotonic()
        while frames is not None:
            yielded = 0
            shown = station.shown
            if hasattr(frames, "on_wait"):
                frames.on_wait = self.on_wait
            with frames:
                self.source_now = frames
                for frame in frames:
                    if self.paced:
                        wait = due - time.monotonic()
                        if wait > 0 and station.stopping.wait(wait):
                            return
                        due = max(due, time.monotonic() - 1.0 / self.fps) + 1.0 / self.fps
                    if station.stopping.is_set():
                        return
                    station.apply_commands()
                    station.current = frame
                    yielded += 1
                    yield frame
            if not (station.loop and yielded) or station.stopping.is_set():
                return
            if station.shown == shown:  # a whole pass of skipped frames: so would every next
                why = station.skipped or "every frame skipped: see the warning above"
                raise BadInputError(
                    f"{self.description}: no usable frame in a whole pass ({why}); not looping "
                    "over it"
                )
            frames = open_source(
                station.source,
                fps=station.fps,
                placeholders=True,
                reconnect_timeout=station.reconnect_timeout,
            )


class GroundStation:
    """Tracks ``source`` in a background thread and keeps what the page shows.

    Args:
        source: anything :func:`emts.io.open_source` opens (checked here: BadInputError).
        pipeline: the :class:`emts.pipeline.Pipeline` (used only by the station's thread).
        fps: frame rate of an image folder, or a replacement for a video's own.
        loop: play a file source again and again (frame numbers keep counting).
        hooks: more per-frame hooks (see :data:`emts.apps.track.FrameHook`), e.g. a
            :class:`emts.apps.mavlink.MavlinkCamera`; called on the pipeline's thread.
        pace: play files at their frame rate (False: as fast as the pipeline goes; tests).
        start: ``"now"`` (tracking starts with :meth:`start`) or ``"viewer"`` (:meth:`start`
            waits: the tracking starts when the first viewer opens the page or the video,
            :meth:`viewer_arrived`; until then ``/status`` says ``waiting``), so that a
            recorded flight plays from its first frame for the person who watches it.
        reconnect_timeout: a live source's seconds of reconnecting before it gives up (0: for
            ever; None: :data:`emts.live.DEFAULT_RECONNECT_TIMEOUT_S`).

    Example:
        >>> station = GroundStation("flight.mp4", Pipeline.default())  # doctest: +SKIP
        >>> station.start(); station.request_lock(320, 240); station.stop()  # doctest: +SKIP
    """

    def __init__(
        self,
        source: str | int,
        pipeline: Pipeline,
        fps: float | None = None,
        loop: bool = False,
        hooks: Iterable[FrameHook] = (),
        pace: bool = True,
        start: str = "now",
        reconnect_timeout: float | None = None,
    ) -> None:
        if start not in ("now", "viewer"):
            raise BadInputError(f"start must be 'now' or 'viewer', not {start!r}")
        self.start_on = start
        self.source, self.pipeline, self.fps = source, pipeline, fps
        self.loop, self.hooks, self.pace = loop, tuple(hooks), pace
        self.reconnect_timeout = reconnect_timeout
        first = open_source(source, fps=fps, placeholders=True, reconnect_timeout=reconnect_timeout)
        self._frames = _LiveFrames(self, first)
        self.stopping = threading.Event()
        self.current = None  # the frame being processed (pipeline thread only)
        self._guard = threading.Lock()
        self._commands: deque[_Command] = deque()
        self._taps = 0  # taps queued so far (their ids)
        self._applied: int | None = None  # the tap applied, its outcome not seen (pipeline)
        self._tap: dict | None = None  # the outcome of the last tap applied
        self._line: dict | None = None
        self._jpeg: bytes | None = None
        self._version = 0  # +1 per published frame
        self._processed = 0
        self.shown = 0  # frames tracked and published (pipeline thread only)
        self.skipped = ""  # why the last frame was skipped, where known (pipeline thread only)
        self._size: tuple[int, int] | None = None
        self._status = "starting"
        self._error: str | None = None
        self._thread = threading.Thread(target=self._run, name="emts-pipeline", daemon=True)

    # -- the pipeline's thread -------------------------------------------------------------
    def start(self) -> GroundStation:
        """Start tracking now, or (``start="viewer"``) when the first viewer arrives."""
        if self.start_on == "viewer":
            with self._guard:
                if self._status == "starting":
                    self._status = "waiting"
            return self
        return self._begin()

    def viewer_arrived(self) -> None:
        """A viewer opened the page or the video: start a station that waits for one."""
        if self._status == "waiting":
            self._begin()

    def _begin(self) -> GroundStation:
        with self._guard:
            if self._status not in ("starting", "waiting"):
                return self  # started already (or stopped)
            self._status = "running"
        self._thread.start()
        return self

    @property
    def live(self) -> bool:
        """Is the source live (a camera or a stream, which plays whether watched or not)?"""
        return is_live(self._frames.first)

    def _run(self) -> None:
        try:
            run_track(
                self._frames, LockRequest(), None, None, self.pipeline, fps=self.fps, hook=self
            )
        except Exception as error:  # shown on the page; the server stays up
            log.error("the tracking thread stopped: %s", error)
            with self._guard:
                self._status, self._error = "error", str(error) or type(error).__name__
            return
        with self._guard:
            self._status = "stopped" if self.stopping.is_set() else "ended"
            if self._frames.incomplete and not self.stopping.is_set():
                self._error = self._frames.incomplete  # e.g. a truncated video: the page says so

    def __call__(self, result, size: tuple[int, int] | None) -> None:
        """The frame hook: publish this frame's JSON line and annotated JPEG, then run the
        other hooks (MAVLink)."""
        from emts.apps.draw import annotate

        frame, index = self.current, self._processed
        if result is None:
            reason = frame.reason if isinstance(frame, UnreadableFrame) else "see the log"
            line = {"frame": index, "mode": None, "target": None, "skipped": reason}
            jpeg = None
            self.skipped = reason if isinstance(frame, UnreadableFrame) else ""
        else:
            line = record(result, index)
            jpeg = _encode_jpeg(annotate(frame, result, index))
            self.shown += 1
        outcome = None
        final = result is not None and result.tap not in (None, "waiting")
        if final and self._applied is not None:  # ("waiting": tried again on the next frame)
            outcome = {"id": self._applied, "frame": index, "result": result.tap}
            self._applied = None
        with self._guard:
            self._line = line
            if outcome is not None:
                self._tap = outcome
            if jpeg is not None:
                self._jpeg = jpeg
            if size is not None:
                self._size = (int(size[0]), int(size[1]))
            self._processed += 1
            self._version += 1
        for hook in self.hooks:
            hook(result, size)

    def idle(self) -> None:
        """No frame yet (a live source reconnecting): the other hooks' ``idle`` (MAVLink), and
        the operator's commands wait for the next frame."""
        for hook in self.hooks:
            if getattr(hook, "idle", None) is not None:
                hook.idle()

    def apply_commands(self) -> None:
        """Apply the queued taps and unlocks (called by the pipeline thread between frames)."""
        while True:
            with self._guard:
                if not self._commands:
                    return
                command = self._commands.popleft()
            if command.unlock:
                self.pipeline.unlock()  # (a tap applied before it is dropped: no outcome)
                self._applied = None
                log.info("serve: unlock")
            else:
                tap = command.tap
                self.pipeline.lock(tap.x, tap.y, box=tap.box, on_last_frame=True)
                self._applied = command.id  # the last one applied is the one the frame takes
                log.info("serve: lock at %.1f, %.1f (input px), box %s", tap.x, tap.y, tap.box)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop after the frame being processed (idempotent)."""
        self.stopping.set()
        with self._guard:
            if self._status == "waiting":  # never started: no thread to wait for
                self._status = "stopped"
        if self._thread.is_alive():
            self._thread.join(timeout)

    # -- HTTP handlers' side (any thread) --------------------------------------------------
    def state(self) -> dict | None:
        """The latest JSON line (None before the first frame)."""
        with self._guard:
            return self._line

    def status(self) -> dict:
        with self._guard:
            return {
                "status": self._status,
                "error": self._error,
                "source": self._frames.description,
                "size": list(self._size) if self._size else None,
                "fps": round(float(self._frames.fps), 3),
                "loop": self.loop,
                "frames": self._processed,
                "pending": len(self._commands),
                "tap": self._tap,
            }

    def frame(self, after: int = 0) -> tuple[int, bytes] | None:
        """``(version, jpeg)`` of the latest frame if it is newer than version ``after``."""
        with self._guard:
            if self._jpeg is None or self._version <= after:
                return None
            return self._version, self._jpeg

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def request_lock(self, x: float, y: float, box=None) -> tuple[LockRequest, int]:
        """Queue a tap at input pixel (x, y) of the frame last shown, or a lock on ``box``
        ``(x, y, w, h)`` (input px, top-left corner and size); return it and its id (what
        :meth:`status`'s ``tap`` names once a frame has taken it). BadInputError: not a point
        of the image, no frame shown yet, or the source has ended."""
        values = (x, y) if box is None else tuple(box)
        if not all(math.isfinite(v) for v in values):
            raise BadInputError("x, y (and w, h) must be finite numbers")
        with self._guard:
            size, pending = self._size, len(self._commands)
        if size is None and self._status == "error":
            raise NotNow(f"the tracking stopped ({self._error}); there is nothing to lock on")
        if size is None and self._status in ("ended", "stopped"):
            raise NotNow(f"the source has {self._status} without a frame to lock on")
        if size is None and self._status == "waiting":
            raise NotNow("the video starts when the page or /stream.mjpg is opened")
        if size is None:
            raise NotNow("no frame has been shown yet; try again in a moment")
        if not self.running:
            raise NotNow(f"the source has {self._status}; there is nothing to lock on")
        width, height = size
        if box is None:
            tap = LockRequest(False, float(x), float(y))
        else:
            bx, by, bw, bh = (float(v) for v in box)
            if bw <= 0 or bh <= 0:
                raise BadInputError("the box needs w, h > 0")
            tap = LockRequest(False, bx + bw / 2, by + bh / 2, 0, (bx, by, bw, bh))
        if not tap.inside(size):
            raise BadInputError(f"({tap.x:g}, {tap.y:g}) is outside the {width}x{height} image")
        if pending >= MAX_PENDING_COMMANDS:
            raise NotNow("too many requests waiting for the pipeline; try again")
        with self._guard:
            self._taps += 1
            self._commands.append(_Command(tap=tap, id=self._taps))
            return tap, self._taps

    def request_unlock(self) -> None:
        """Queue an unlock (applied before the next frame)."""
        if not self.running:
            raise NotNow(f"the source has {self._status}; there is no lock to drop")
        with self._guard:
            if len(self._commands) >= MAX_PENDING_COMMANDS:
                raise NotNow("too many requests waiting for the pipeline; try again")
            self._commands.append(_Command(unlock=True))


def _encode_jpeg(image: np.ndarray) -> bytes:
    import cv2

    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:  # pragma: no cover - OpenCV encodes any uint8 BGR picture
        raise BadInputError("cannot encode the annotated frame as JPEG")
    return data.tobytes()


def page_html() -> str:
    """The ground-station page (``emts/apps/serve_page.html``, packaged beside this module)."""
    return (resources.files("emts.apps") / "serve_page.html").read_text(encoding="utf-8")


def create_app(station: GroundStation):
    """The starlette application serving ``station`` (see the module for the routes)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    page = page_html()

    async def index(request: Request):
        station.viewer_arrived()
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def state(request: Request):
        return JSONResponse(station.state(), headers={"Cache-Control": "no-store"})

    async def status(request: Request):
        return JSONResponse(station.status(), headers={"Cache-Control": "no-store"})

    async def stream(request: Request):
        station.viewer_arrived()
        boundary = "emtsframe"

        async def parts():
            version = 0
            while not station.stopping.is_set():  # (Ctrl-C: end, so the server can close)
                latest = station.frame(version)
                if latest is not None:
                    version, jpeg = latest
                    yield (
                        (
                            f"--{boundary}\r\nContent-Type: image/jpeg\r\n"
                            f"Content-Length: {len(jpeg)}\r\n\r\n"
                        ).encode()
                        + jpeg
                        + b"\r\n"
                    )
                elif station.running or station.status()["status"] in ("starting", "waiting"):
                    await asyncio.sleep(STREAM_POLL_S)
                else:  # ended, the last frame sent: the page keeps showing it
                    return

        return StreamingResponse(
            parts(),
            media_type=f"multipart/x-mixed-replace; boundary={boundary}",
            headers={"Cache-Control": "no-store"},
        )

    async def _json_body(request: Request) -> dict:
        try:
            body = json.loads(await request.body() or b"null")
        # RecursionError: nesting deeper than Python's stack (e.g. 100,000 '[')
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise BadInputError('the body must be JSON, e.g. {"x": 320, "y": 240}') from None
        if not isinstance(body, dict):
            raise BadInputError('expected a JSON object, e.g. {"x": 320, "y": 240}')
        return body

    def _number(body: dict, key: str) -> float:
        value = body.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadInputError(f"{key!r} must be a number (input pixels)")
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits
            raise BadInputError("x, y (and w, h) must be finite numbers") from None

    async def lock(request: Request):
        try:
            body = await _json_body(request)
            x, y = _number(body, "x"), _number(body, "y")
            box = None
            if "w" in body or "h" in body:
                box = (x, y, _number(body, "w"), _number(body, "h"))
            tap, number = station.request_lock(x, y, box)
        except NotNow as error:
            return JSONResponse({"error": str(error)}, status_code=409)
        except BadInputError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        except ClientDisconnect:  # gone mid-body: nobody to answer, nothing to log
            return Response(status_code=400)
        queued = {"x": round(tap.x, 2), "y": round(tap.y, 2), "box": tap.box, "id": number}
        return JSONResponse({"queued": queued}, status_code=202)

    async def unlock(request: Request):
        try:
            station.request_unlock()
        except NotNow as error:
            return JSONResponse({"error": str(error)}, status_code=409)
        return JSONResponse({"queued": "unlock"}, status_code=202)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/state", state),
            Route("/status", status),
            Route("/stream.mjpg", stream),
            Route("/lock", lock, methods=["POST"]),
            Route("/unlock", unlock, methods=["POST"]),
        ],
        middleware=[Middleware(_BodyLimit, limit=MAX_BODY_BYTES)],
    )


class _BodyTooLarge(Exception):
    """A request body passed :data:`MAX_BODY_BYTES` while it was being read."""


class _BodyLimit:
    """ASGI middleware: a request whose body is (or says it is) larger than ``limit`` bytes
    is answered 413 without reading the rest."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await _too_large(send, self.limit)
            return
        read, started = 0, False

        async def limited():
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.limit:  # a chunked body (no Content-Length) grown too large
                    raise _BodyTooLarge
            return message

        async def watched(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except _BodyTooLarge:
            if not started:
                await _too_large(send, self.limit)


async def _too_large(send, limit: int) -> None:
    body = json.dumps({"error": f"the request body is over {limit} bytes"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port) (port 0: any free one), or one BadInputError
    line: a host that does not resolve, a port in use or not allowed."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as error:
        raise BadInputError(f"--host {host}: {error}; try 127.0.0.1") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(64)
    except OSError as error:
        sock.close()
        why = error.strerror or str(error)
        raise BadInputError(
            f"cannot listen on {host}:{port}: {why}; choose another --port"
        ) from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    source,
    pipeline,
    host: str = "127.0.0.1",
    port: int = 8080,
    fps: float | None = None,
    loop: bool = False,
    mavlink: str | None = None,
    follow=None,
    start: str = "auto",
    reconnect_timeout: float | None = None,
) -> int:
    """Run the ground station until Ctrl-C / SIGTERM (the CLI's ``emts serve``).

    ``start``: ``"now"``, ``"viewer"`` (the video starts when the page is first opened), or
    ``"auto"``: ``"viewer"`` for a recorded source (file, folder) without MAVLink, ``"now"``
    for a live one (camera, stream) or with MAVLink (a ground station may command it with no
    page open).

    Bad input -- a missing source, a host or port it cannot listen on, a bad MAVLink
    connection, no ``[serve]`` extra -- raises BadInputError before anything starts.
    """
    uvicorn = _require_serve_extra()
    if start not in ("auto", "now", "viewer"):
        raise BadInputError(f"--start must be auto, now or viewer, not {start!r}")
    station = GroundStation(
        source, pipeline, fps=fps, loop=loop, reconnect_timeout=reconnect_timeout
    )
    if start == "auto":
        start = "now" if station.live or mavlink else "viewer"
    station.start_on = start
    sock = bind(host, port)
    with contextlib.ExitStack() as stack:
        stack.callback(sock.close)
        if mavlink:
            from emts.apps.mavlink import MavlinkCamera

            camera = stack.enter_context(MavlinkCamera(mavlink, pipeline, follow))
            station.hooks = (camera,)  # called on the pipeline's thread, as in emts track
        stack.callback(station.stop)
        config = uvicorn.Config(
            create_app(station),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )

        class Server(uvicorn.Server):
            def handle_exit(self, sig, frame) -> None:
                station.stopping.set()  # the streams end, and the shutdown need cancel none
                super().handle_exit(sig, frame)

        server = Server(config)
        station.start()
        waits = " (the video starts when the page is opened)" if start == "viewer" else ""
        print(f"emts serve: {url_of(sock)}{waits} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        server.run(sockets=[sock])
    return 0
