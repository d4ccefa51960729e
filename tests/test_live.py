"""Live stream sources against a real MJPEG-over-HTTP server on loopback."""

from __future__ import annotations

import json
import socket
import socketserver
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

import cv2
import numpy as np
import pytest

from emts import live
from emts.apps.track import LockRequest, run_track
from emts.errors import BadInputError
from emts.io import open_source
from emts.pipeline import Pipeline

BOUNDARY = b"frame"


def no_detections(channels):
    """A stand-in Stage C (no model file needed): nobody there."""
    return []


class MjpegServer:
    """A multipart/x-mixed-replace JPEG stream at /stream.mjpg: ``per_connection`` frames at
    ``fps`` per client, and the whole server stops by itself after ``lifetime`` seconds."""

    def __init__(
        self, port: int = 0, fps: float = 20.0, per_connection: int = 400, lifetime: float = 20.0
    ) -> None:
        stopping = self.stopping = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header(
                    "Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY.decode()}"
                )
                self.end_headers()
                rng = np.random.default_rng(0)
                for i in range(per_connection):
                    if stopping.is_set():
                        return
                    image = np.full((96, 128, 3), 40, np.uint8)
                    image[30:70, (i * 3) % 100 : (i * 3) % 100 + 12] = 220  # a moving bar
                    image += rng.integers(0, 8, image.shape, dtype=np.uint8)
                    jpeg = cv2.imencode(".jpg", image)[1].tobytes()
                    head = b"--%s\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                    try:
                        self.wfile.write(head % (BOUNDARY, len(jpeg)) + jpeg + b"\r\n")
                    except OSError:
                        return
                    time.sleep(1.0 / fps)

            def log_message(self, *args: object) -> None:
                pass

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server(("127.0.0.1", port), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/stream.mjpg"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            self._timer.cancel()
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def server():
    running = MjpegServer()
    yield running
    running.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rtsp://cam/live", True),
        ("RTSPS://cam/live", True),
        ("rtmp://h/a", True),
        ("http://h/stream.mjpg", True),
        ("https://h/s", True),
        ("udp://@:5000", True),
        ("tcp://h:9", True),
        ("file://x.mp4", False),
        ("clip.mp4", False),
        ("camera:0", False),
    ],
)
def test_recognises_stream_url_schemes(text, expected):
    assert live.is_stream_url(text) is expected


def test_recognises_a_gstreamer_pipeline_only_when_it_ends_in_appsink():
    assert live.is_gstreamer_pipeline("videotestsrc ! videoconvert ! appsink")
    assert live.is_gstreamer_pipeline("udpsrc port=5000 ! decodebin ! appsink drop=true")
    assert not live.is_gstreamer_pipeline("videotestsrc ! autovideosink")
    assert not live.is_gstreamer_pipeline("my ! file.mp4")


@pytest.mark.skipif(live.gstreamer_available(), reason="this OpenCV has GStreamer")
def test_a_gstreamer_pipeline_without_gstreamer_is_one_clear_line():
    with pytest.raises(BadInputError, match="no GStreamer"):
        open_source("videotestsrc ! videoconvert ! appsink")


def first_frames(source: str, count: int) -> list[np.ndarray]:
    """The first ``count`` frames of a live ``source`` (checked to be a LiveSource, no length)."""
    got = []
    with open_source(source) as frames:
        assert isinstance(frames, live.LiveSource) and frames.length is None
        for frame in frames:
            got.append(frame)
            if len(got) == count:
                break
    return got


def test_http_mjpeg_stream_yields_frames_without_a_length(server):
    got = first_frames(server.url, 5)
    assert all(f.shape == (96, 128, 3) and f.dtype == np.uint8 for f in got)


def test_a_consumer_slower_than_the_stream_gets_the_newest_frame_and_counts_the_rest(server):
    dropped = 0
    with live.LiveSource(server.url, "test stream") as frames:
        for count, _frame in enumerate(frames, 1):
            time.sleep(0.25)  # ~4 fps against a 20 fps stream
            dropped += frames.news()[0]
            if count == 6:
                break
    assert dropped > 10


def test_an_unreachable_url_fails_in_one_line_within_seconds():
    started = time.monotonic()
    with pytest.raises(BadInputError, match="could not be opened"):
        open_source(f"http://127.0.0.1:{_free_port()}/stream.mjpg")
    assert time.monotonic() - started < 6


def test_cli_says_an_unreachable_stream_in_one_line(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/stream.mjpg"
    done = subprocess.run(
        [sys.executable, "-m", "emts.cli", "track", url, "--jsonl", str(tmp_path / "t.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if "could not be opened" in line]
    assert len(lines) == 1, done.stderr


def track_through_a_restart(running, url: str, restart, jsonl) -> tuple[list[dict], object]:
    """``run_track`` on a live ``url`` whose server (``running``) is stopped after frame 5 and
    brought back on the same port 1 s later (``restart()``: the new server); the source gives
    up 3 s after the stream is gone for good. Returns (JSON lines, summary), and checks the
    reconnect: a ``reconnected`` line after frame 5, frames after it, the end by timeout, and
    ``idle()`` (MAVLink's poll) called while no frame came."""
    restarted, idle = [], []

    def hook(result, size) -> None:
        if hook.frames == 5:  # stop the server mid-run; bring it back on the same port
            running.stop()
            threading.Thread(
                target=lambda: (time.sleep(1.0), restarted.append(restart())), daemon=True
            ).start()
        hook.frames += 1

    hook.frames = 0
    hook.idle = lambda: idle.append(hook.frames)
    source = open_source(url, reconnect_timeout=3.0)
    try:
        summary = run_track(
            source,
            LockRequest(),
            None,
            str(jsonl),
            Pipeline(no_detections, verifier=None),
            hook=hook,
        )
    finally:
        for again in restarted:
            again.stop()
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    marked = [i for i, line in enumerate(lines) if line.get("stream") == "reconnected"]
    assert marked and marked[0] >= 5, "no reconnected line after the restart"
    assert len(lines) - marked[0] >= 5, "frames did not flow again after the reconnect"
    assert source.ended == "timeout" and "ended by timeout" in summary.text()
    assert len([f for f in idle if f >= 6]) >= 2, "no idle() calls while the stream was gone"
    return lines, summary


def test_track_survives_the_server_restarting_and_says_so_in_the_json(server, tmp_path):
    def restart():
        return MjpegServer(server.port, per_connection=30, lifetime=4.0)

    track_through_a_restart(server, server.url, restart, tmp_path / "live.jsonl")


class _FakeCamera:
    """A stand-in for ``cv2.VideoCapture(index)``: ``frames`` frames, then unplugged (every
    read fails and the camera cannot be opened again)."""

    plugged = True
    opened: list[int] = []

    def __init__(self, index, *args) -> None:
        self.index = index
        self.left = 8 if _FakeCamera.plugged else 0
        _FakeCamera.opened.append(index)

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return _FakeCamera.plugged

    def get(self, prop) -> float:
        return 25.0

    def read(self):
        time.sleep(0.01)
        if self.left <= 0:
            _FakeCamera.plugged = False  # unplugged after its frames
            return False, None
        self.left -= 1
        return True, np.full((48, 64, 3), self.left, np.uint8)

    def release(self) -> None:
        pass


def test_a_camera_is_a_live_source_that_is_reconnected_when_unplugged(monkeypatch, caplog):
    monkeypatch.setattr(live.cv2, "VideoCapture", _FakeCamera)
    _FakeCamera.plugged, _FakeCamera.opened = True, []
    waited = []
    with open_source("camera:3", reconnect_timeout=0.6) as frames:
        assert isinstance(frames, live.LiveSource) and frames.fps == 25.0
        frames.on_wait = lambda: waited.append(time.monotonic())
        got = list(frames)
    assert _FakeCamera.opened[0] == 3 and len(_FakeCamera.opened) >= 2  # reconnect tried
    assert 1 <= len(got) <= 8  # the newest frames, stale ones dropped
    assert frames.ended == "timeout" and "did not come back" in frames.incomplete
    assert waited, "on_wait was not called while the camera was gone"
    assert any("unplugged" in r.getMessage() for r in caplog.records)


def test_a_camera_that_cannot_be_opened_is_one_line(monkeypatch):
    monkeypatch.setattr(live.cv2, "VideoCapture", _FakeCamera)
    _FakeCamera.plugged = False
    with pytest.raises(BadInputError, match="camera 5 could not be opened .no camera there"):
        open_source("camera:5")


def test_a_udp_mpeg_ts_stream_on_loopback_yields_frames(tmp_path):
    """A real ``udp://`` stream: MPEG-2 in MPEG-TS (written by OpenCV's FFmpeg), sent in
    1316-byte datagrams (7 TS packets, as streaming tools send them) over loopback."""
    from loopback_rtsp import mpeg_ts_clip

    data = mpeg_ts_clip(tmp_path / "clip.ts")
    if data is None:
        pytest.skip("this OpenCV cannot write MPEG-TS")
    port = _free_port()
    stop = threading.Event()

    def send() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            while not stop.is_set():  # loop: the receiver binds the port when it opens
                for i in range(0, len(data), 1316):
                    sender.sendto(data[i : i + 1316], ("127.0.0.1", port))
                    time.sleep(0.002)

    threading.Thread(target=send, daemon=True).start()
    try:
        got = first_frames(f"udp://127.0.0.1:{port}", 8)
    finally:
        stop.set()
    assert all(f.shape == (96, 128, 3) for f in got)


@pytest.fixture
def rtsp(tmp_path):
    """An RTSP server on loopback (tests/loopback_rtsp.py) serving a looped MPEG-TS clip."""
    from loopback_rtsp import RtspServer, mpeg_ts_clip

    ts = mpeg_ts_clip(tmp_path / "clip.ts")
    if ts is None:
        pytest.skip("this OpenCV cannot write MPEG-TS")
    running = RtspServer(ts)
    yield running
    running.stop()


@pytest.mark.parametrize("suffix", ["", "?tcp"])
def test_an_rtsp_stream_on_loopback_yields_frames(rtsp, suffix):
    got = first_frames(rtsp.url + suffix, 8)  # plain: UDP refused (461), then TCP
    assert all(f.shape == (96, 128, 3) and f.dtype == np.uint8 for f in got)


def test_emts_track_follows_an_rtsp_stream_through_a_restart_and_counts_dropped_frames(
    rtsp, tmp_path
):
    from loopback_rtsp import RtspServer

    def restart():
        return RtspServer(rtsp.ts, port=rtsp.port, lifetime=3.0)

    lines, _ = track_through_a_restart(rtsp, rtsp.url, restart, tmp_path / "rtsp.jsonl")
    assert sum(line.get("dropped", 0) for line in lines) > 0  # faster than the tracker: dropped


def test_the_cli_tracks_an_rtsp_stream_and_ends_with_exit_3_when_it_is_gone(tmp_path):
    from loopback_rtsp import RtspServer, mpeg_ts_clip

    ts = mpeg_ts_clip(tmp_path / "clip.ts")
    if ts is None:
        pytest.skip("this OpenCV cannot write MPEG-TS")
    running = RtspServer(ts, lifetime=6.0)
    jsonl = tmp_path / "cli.jsonl"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "emts.cli", "track", running.url, "--jsonl", str(jsonl)]
            + ["--reconnect-timeout", "1", "--no-verifier"],
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        running.stop()
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert done.returncode == 3, done.stderr  # the stream ended: incomplete input
    assert len(lines) >= 5 and all(line["mode"] for line in lines)
    assert "did not come back within 1 s" in done.stderr and "Traceback" not in done.stderr


class _FakePicamera2:
    """A stand-in for ``picamera2.Picamera2``: 1280x720 BGR frames from ``capture_array``, the
    configuration it was given kept; camera 9 does not exist."""

    made: list = []

    def __init__(self, index: int = 0) -> None:
        if index == 9:
            raise RuntimeError("no camera 9")
        self.index, self.frames, self.config, self.started = index, 0, None, False
        _FakePicamera2.made.append(self)

    def create_video_configuration(self, main, controls):
        return {"main": main, "controls": controls}

    def configure(self, config) -> None:
        self.config = config

    def start(self) -> None:
        self.started = True

    def capture_array(self, name: str = "main"):
        time.sleep(0.01)
        self.frames += 1
        width, height = self.config["main"]["size"]
        return np.full((height, width, 3), self.frames % 256, np.uint8)

    def stop(self) -> None:
        self.started = False

    def close(self) -> None:
        pass


def test_a_raspberry_pi_camera_is_read_through_picamera2(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "picamera2", types.SimpleNamespace(Picamera2=_FakePicamera2))
    _FakePicamera2.made = []
    with open_source("picamera:1", fps=15) as frames:
        assert isinstance(frames, live.LiveSource) and frames.fps == 15
        got = []
        for frame in frames:
            got.append(frame)
            if len(got) == 3:
                break
    camera = _FakePicamera2.made[0]
    assert camera.index == 1 and camera.config["main"]["format"] == "RGB888"
    assert camera.config["controls"] == {"FrameRate": 15.0} and not camera.started  # released
    assert all(f.shape == (720, 1280, 3) and f.dtype == np.uint8 for f in got)
    with pytest.raises(BadInputError, match="Pi camera 9 could not be opened"):
        open_source("picamera:9")
    with pytest.raises(BadInputError, match="picamera:N"):
        open_source("picamera:front")


def test_a_pi_camera_without_picamera2_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "picamera2", None)  # import picamera2 -> ImportError
    with pytest.raises(BadInputError, match="needs picamera2"):
        open_source("picamera")
