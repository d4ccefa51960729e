"""``emts serve``: the ground-station endpoints (starlette's TestClient against a real pipeline
on a short generated clip), the command line's bad input, and the page end to end in headless
Chromium driven by Playwright (Debian's ``chromium``, launched through its executable path)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("starlette", reason="emts serve needs the [serve] extra")
from starlette.testclient import TestClient  # noqa: E402

from emts.apps.serve import GroundStation, create_app  # noqa: E402
from emts.apps.track import LockRequest, run_track  # noqa: E402
from emts.cli import main  # noqa: E402
from emts.pipeline import Pipeline  # noqa: E402
from emts.synth.camera import CameraMotionConfig  # noqa: E402
from emts.synth.still_clip import gusty_clip  # noqa: E402

CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright's own browser download is not used
TIMEOUT = 5.0  # s, per awaited condition


@pytest.fixture(scope="module")
def clip():
    """50 frames (640x512) of a hovering camera following a walking person (seeded)."""
    return gusty_clip(50, seed=3)


@pytest.fixture(scope="module")
def calm_clip():
    """The same scene with a steady camera (no gusts, slow drift): the page's click lands a
    frame or a few after the one shown, as the machine's load has it, and a gust in between
    (up to 29 px a frame in ``clip``) would move the person from under it. Taps through
    gusts are tested on ``clip`` (test_lock_and_unlock_are_applied_between_frames)."""
    return gusty_clip(50, seed=3, camera=CameraMotionConfig(max_drift=0.5, gust_rate=0.0))


def _wait(condition, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"{what} within {timeout} s")


def _station(frames, **kwargs) -> GroundStation:
    kwargs.setdefault("pace", False)
    return GroundStation(list(frames), Pipeline.default(auto_lock=False), **kwargs)


def _schema(value):
    """The shape of a JSON value: dict keys and value types, recursively."""
    if isinstance(value, dict):
        return {key: _schema(item) for key, item in value.items()}
    return type(value).__name__


# -- endpoints -------------------------------------------------------------------------------
def test_state_is_the_emts_track_line_of_the_last_frame(clip, tmp_path):
    frames = clip.frames[:12]
    tap = clip.person_boxes[0][0]
    lock = LockRequest(False, tap[0] + tap[2] / 2, tap[1] + tap[3] / 2, 0)
    pipeline = Pipeline.default(auto_lock=False)
    run_track(list(frames), lock, None, str(tmp_path / "t.jsonl"), pipeline)
    expected = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[-1])

    station = _station(frames)
    client = TestClient(create_app(station))
    assert client.get("/state").json() is None  # nothing processed yet
    station.pipeline.lock(lock.x, lock.y)  # the same tap on frame 0, before the thread starts
    station.start()
    _wait(lambda: client.get("/status").json()["status"] == "ended", "the clip ended")
    state = client.get("/state").json()
    assert _schema(state) == _schema(expected)
    assert set(state) >= {"frame", "mode", "target", "ms"}
    assert set(state["target"]) == {"box", "score", "p_human", "verified", "measured_by"}
    assert set(state["ms"]) == {"A", "B", "C", "D", "E"}
    assert {k: v for k, v in state.items() if k != "ms"} == {
        k: v for k, v in expected.items() if k != "ms"
    }
    status = client.get("/status").json()
    assert status["frames"] == 12 and status["size"] == [640, 512] and status["loop"] is False
    station.stop()


def test_ended_source_keeps_last_state_and_refuses_taps(clip):
    station = _station(clip.frames[:4]).start()
    client = TestClient(create_app(station))
    _wait(lambda: client.get("/status").json()["status"] == "ended", "the clip ended")
    assert client.get("/state").json()["frame"] == 3
    answer = client.post("/lock", json={"x": 100, "y": 100})
    assert answer.status_code == 409 and "ended" in answer.json()["error"]
    assert client.post("/unlock").status_code == 409
    stream = client.get("/stream.mjpg")  # the last frame once, then the stream closes
    assert stream.headers["content-type"].startswith("multipart/x-mixed-replace")
    assert stream.content.startswith(b"--emtsframe\r\nContent-Type: image/jpeg")
    jpeg = stream.content.split(b"\r\n\r\n", 1)[1]
    picture = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (512, 640, 3)


def test_lock_and_unlock_are_applied_between_frames(clip):
    station = _station(clip.frames[:20], loop=True, pace=True, fps=60.0).start()
    client = TestClient(create_app(station))
    try:
        _wait(lambda: client.get("/state").json(), "a first frame")
        assert client.get("/state").json()["mode"] == "search"  # no auto-lock
        # the tap lands a frame or a few after the one read, as the machine's load has it, and
        # a gust in between can move the person from under it (refused: no_target); a user
        # taps again
        for _ in range(5):
            x, y, w, h = clip.person_boxes[int(client.get("/state").json()["frame"]) % 20][0]
            answer = client.post("/lock", json={"x": x + w / 2, "y": y + h / 2})
            assert answer.status_code == 202
            try:
                state = _wait(
                    lambda: (s := client.get("/state").json())["mode"] == "locked" and s,
                    "a lock",
                    timeout=TIMEOUT / 5,
                )
                break
            except AssertionError:
                continue
        else:
            raise AssertionError("no tap of five locked")
        assert state["lock_source"].startswith("tap:")
        assert client.post("/unlock").status_code == 202
        _wait(lambda: client.get("/state").json()["mode"] == "search", "the unlock")
        box = {"x": x - 2, "y": y - 2, "w": w + 4, "h": h + 4}
        queued = client.post("/lock", json=box).json()["queued"]
        assert queued["box"] == [x - 2, y - 2, w + 4, h + 4]
        _wait(lambda: client.get("/state").json()["mode"] == "locked", "a box lock")
        assert client.get("/status").json()["loop"] is True
        _wait(lambda: client.get("/state").json()["frame"] > 25, "the loop going on")
    finally:
        station.stop()
    assert not station.running


def test_a_tap_on_nothing_is_answered_no_target_in_status_and_a_drag_still_locks(calm_clip):
    station = _station(calm_clip.frames[:20], loop=True, pace=True, fps=30.0).start()
    client = TestClient(create_app(station))
    try:
        _wait(lambda: client.get("/state").json(), "a first frame")
        assert client.get("/status").json()["tap"] is None  # no tap yet
        # empty ground above the person (who stays near 338-354 x 97-134): nothing stands out
        answer = client.post("/lock", json={"x": 320, "y": 60})
        assert answer.status_code == 202
        first = answer.json()["queued"]["id"]
        tap = _wait(
            lambda: (t := client.get("/status").json()["tap"]) and t["id"] == first and t,
            "the tap's outcome",
        )
        assert tap["result"] == "no_target" and client.get("/state").json()["mode"] == "search"
        box = {"x": 310, "y": 40, "w": 20, "h": 40}  # a box drawn there is the operator's word
        second = client.post("/lock", json=box).json()["queued"]["id"]
        assert second == first + 1
        tap = _wait(
            lambda: (t := client.get("/status").json()["tap"]) and t["id"] == second and t,
            "the box's outcome",
        )
        assert tap["result"] == "lock"
        _wait(lambda: client.get("/state").json().get("lock_source") == "tap:box", "the box")
    finally:
        station.stop()


@pytest.mark.parametrize(
    "body",
    [
        b"nope",
        b"[1, 2]",
        b'{"x": "a", "y": 1}',
        b'{"x": true, "y": 1}',
        b'{"y": 1}',
        b'{"x": 1e9, "y": 1}',
        b'{"x": 10, "y": 10, "w": -1, "h": 5}',
        b'{"x": 10, "y": 10, "w": 5}',
        b'{"x": NaN, "y": 10}',
    ],
)
def test_bad_lock_requests_are_400(clip, body):
    station = _station(clip.frames[:3], loop=True, pace=True, fps=20.0).start()
    client = TestClient(create_app(station))
    try:
        _wait(lambda: client.get("/state").json(), "a first frame")
        answer = client.post("/lock", content=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]
        assert station.status()["pending"] == 0
    finally:
        station.stop()


def test_lock_before_any_frame_is_409(clip):
    client = TestClient(create_app(_station(clip.frames[:3])))
    assert client.post("/lock", json={"x": 1, "y": 1}).status_code == 409


def test_a_recorded_source_waits_for_its_first_viewer(clip):
    station = _station(clip.frames[:4], start="viewer").start()
    client = TestClient(create_app(station))
    try:
        time.sleep(0.2)  # nothing plays while nobody watches
        status = client.get("/status").json()
        assert status["status"] == "waiting" and status["frames"] == 0
        answer = client.post("/lock", json={"x": 1, "y": 1})
        assert answer.status_code == 409 and "page" in answer.json()["error"]
        assert client.get("/").status_code == 200  # the first viewer
        _wait(lambda: client.get("/status").json()["status"] == "ended", "the clip played")
        assert client.get("/state").json()["frame"] == 3  # from its first frame to its last
    finally:
        station.stop()


def test_a_station_that_never_had_a_viewer_stops_cleanly(clip):
    station = _station(clip.frames[:4], start="viewer").start()
    station.stop()
    assert station.status()["status"] == "stopped" and not station.running


def test_serve_waits_for_a_viewer_on_files_and_starts_live_sources_at_once(clip, monkeypatch):
    import emts.apps.serve as serve_module

    started = {}

    class Stop(Exception):
        pass

    def fake_bind(host, port):  # record the choice made, serve nothing
        raise Stop

    monkeypatch.setattr(serve_module, "bind", fake_bind)
    real = serve_module.GroundStation

    def spy(*args, **kwargs):
        station = real(*args, **kwargs)
        started["station"] = station
        return station

    monkeypatch.setattr(serve_module, "GroundStation", spy)
    pipeline = Pipeline.default(auto_lock=False)
    for start, expected in (("auto", "viewer"), ("now", "now"), ("viewer", "viewer")):
        with pytest.raises(Stop):
            serve_module.serve(list(clip.frames[:2]), pipeline, start=start)
        assert started["station"].start_on == expected, start
    assert not started["station"].live  # frames in memory: recorded


def test_page_is_self_contained():
    page = TestClient(create_app(_station([np.zeros((8, 8), np.uint8)]))).get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'src="/stream.mjpg"' in page.text
    assert not re.search(r"(src|href)=\"(https?:)?//", page.text)  # no CDN, nothing remote
    assert "<script src" not in page.text


def test_hooks_run_once_per_frame_on_the_pipeline_thread(clip):
    calls = []
    station = _station(
        clip.frames[:5], hooks=[lambda r, s: calls.append((threading.current_thread().name, s))]
    ).start()
    _wait(lambda: station.status()["status"] == "ended", "the clip ended")
    assert calls == [("emts-pipeline", (640, 512))] * 5


# -- command line ----------------------------------------------------------------------------
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys):
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2.imwrite(str(folder / "0.png"), np.zeros((64, 64), np.uint8))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [
            ["serve", str(tmp_path / "missing.mp4")],
            ["serve", str(folder), "--port", str(port)],
            ["serve", str(folder), "--host", "no-such-host.invalid"],
            ["serve", str(folder), "--follow", "gimbal"],
        ]
        for argv in cases:
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip()
            assert err.startswith("emts: error:") and "\n" not in err, err
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(folder), "--port", "70000"])
    assert exit_.value.code == 2


# -- the page, end to end, in headless Chromium ------------------------------------------------
def _chromium() -> str | None:
    """Debian's chromium; installed with apt-get where we may (root and CI=true)."""
    if not Path(CHROMIUM).exists() and os.environ.get("CI") == "true" and os.geteuid() == 0:
        apt = shutil.which("apt-get")
        if apt:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}  # no debconf prompts
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
            subprocess.run([apt, "update"], check=False, timeout=600, **quiet)
            install = [apt, "install", "-y", "--no-install-recommends", "chromium"]
            subprocess.run(install, check=False, timeout=900, **quiet)
    return CHROMIUM if Path(CHROMIUM).exists() else None


@pytest.fixture(scope="module")
def chromium() -> str:
    pytest.importorskip("playwright", reason="the page's test needs playwright (dev extra)")
    path = _chromium()
    if path is None:
        pytest.skip(
            f"Debian's chromium is not at {CHROMIUM} and cannot be installed here "
            "(that needs root and CI=true): apt-get install -y --no-install-recommends chromium"
        )
    return path


@pytest.fixture
def ground_station_link():
    """A MAVLink ground station listening on 127.0.0.1 (pymavlink, dev extra)."""
    mavutil = pytest.importorskip("pymavlink.mavutil")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ["MAVLINK20"] = "1"
    link = mavutil.mavlink_connection(f"udpin:127.0.0.1:{port}", dialect="common")
    yield link, port
    link.close()


@pytest.fixture
def server(calm_clip, tmp_path, ground_station_link):
    """``emts serve`` on a free port, on an image folder of the clip (played at 10 fps), also
    a MAVLink camera component talking to ``ground_station_link``."""
    folder = tmp_path / "clip"
    folder.mkdir()
    for i, frame in enumerate(calm_clip.frames):
        cv2.imwrite(str(folder / f"{i:03d}.png"), frame)
    command = [sys.executable, "-m", "emts.cli", "serve", str(folder), "--port", "0"]
    # --start viewer: the clip (5 s) plays from when the page opens, however slow the browser's
    # start (with --mavlink it would start at once)
    command += ["--fps", "10", "--no-auto-lock", "--start", "viewer"]
    command += ["--mavlink", f"udpout:127.0.0.1:{ground_station_link[1]}"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()  # "emts serve: http://127.0.0.1:PORT/ (Ctrl-C ...)"
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, line
        yield process, found.group(0)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stderr.close()


def test_page_streams_and_a_click_locks_the_person(
    chromium, server, calm_clip, ground_station_link
):
    from playwright.sync_api import sync_playwright

    process, url = server
    link = ground_station_link[0]
    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            # A narrow window: the 640 px video is shown scaled down, so the page must
            # convert the click from display to input pixels.
            page = browser.new_page(viewport={"width": 480, "height": 600})
            page.goto(url)
            video = page.locator("#video")
            page.wait_for_function(
                "document.getElementById('video').naturalWidth === 640", timeout=10_000
            )
            first = video.screenshot()
            _wait(lambda: video.screenshot() != first, "a second, different frame")
            page.wait_for_function("document.getElementById('mode').textContent === 'search'")

            rect = video.bounding_box()
            assert rect["width"] < 640  # scaled
            shown = int(page.locator("#frame").text_content())
            x, y, w, h = calm_clip.person_boxes[shown + 1][0]  # the stream is about a frame ahead
            scale = rect["width"] / 640
            tapped = time.monotonic()
            page.mouse.click(rect["x"] + (x + w / 2) * scale, rect["y"] + (y + h / 2) * scale)
            page.wait_for_function(
                "document.getElementById('mode').textContent === 'locked'", timeout=15_000
            )
            locked_after = time.monotonic() - tapped
            # a click on empty ground above the person: "No target there", the lock kept
            page.mouse.click(rect["x"] + 320 * scale, rect["y"] + 60 * scale)
            page.wait_for_function(
                "document.getElementById('notice').textContent.startsWith('No target there')",
                timeout=10_000,
            )
            assert page.locator("#notice").is_visible()
            assert page.locator("#mode").text_content() == "locked"
        finally:
            browser.close()
    import urllib.request

    state = json.loads(urllib.request.urlopen(url + "state", timeout=5).read())
    assert state["mode"] == "locked" and state["lock_source"].startswith("tap:")
    tx, ty, tw, th = state["target"]["box"]
    px, py, pw, ph = calm_clip.person_boxes[state["frame"]][0]
    error = np.hypot(tx + tw / 2 - px - pw / 2, ty + th / 2 - py - ph / 2)
    assert error < 20, (state, (px, py, pw, ph))  # locked on the person clicked
    # --mavlink runs beside the page: the ground station hears the lock too
    active = None
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        message = link.recv_match(type="CAMERA_TRACKING_IMAGE_STATUS", blocking=True, timeout=0.2)
        if message is not None and message.tracking_status & 1:  # ..._FLAGS_ACTIVE
            active = message
            break
    assert active is not None, "no ACTIVE CAMERA_TRACKING_IMAGE_STATUS after the lock"
    print(f"click -> page shows locked: {locked_after * 1000:.0f} ms")
    process.send_signal(signal.SIGINT)
    assert process.wait(10) == 130  # ends like every emts command on Ctrl-C
    assert time.monotonic() - started < 20


# -- hostile clients and sources (the 2026-12 hostile-input review) -------------------------------
def _asgi_post(app, chunks, headers=()):
    """POST /lock straight through the ASGI ``app``: ``chunks`` of body (``None``: the client
    disconnects there); returns (status, body) of the answer, or (None, b"") for none."""
    import anyio

    messages = [
        {"type": "http.request", "body": c, "more_body": True}
        if c is not None
        else {"type": "http.disconnect"}
        for c in chunks
    ]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/lock", "raw_path": b"/lock", "query_string": b"",
        "root_path": "", "headers": [(b"host", b"x"), *headers], "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8080),
    }  # fmt: skip
    anyio.run(app, scope, receive, send)
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return (start["status"] if start else None), body


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"x": 1' + b"0" * 400 + b', "y": 10}', 400),  # an integer too large for a float
        (b"[" * 30_000 + b"]" * 30_000, 400),  # nesting deeper than Python's stack
        (b'{"x":' * 12_000, 400),
        (b'{"x": 10, "y": 10, "pad": "' + b"a" * 70_000 + b'"}', 413),  # over 64 KB
        (b'{"x": 10, "y": 10}', 202),
    ],
    ids=["huge-integer", "deep-list", "deep-object", "64-kb-body", "a-plain-tap"],
)
def test_hostile_lock_bodies_get_an_answer_and_no_traceback(clip, caplog, body, status):
    station = _station(clip.frames[:3], loop=True, pace=True, fps=20.0).start()
    client = TestClient(create_app(station), raise_server_exceptions=True)
    try:
        _wait(lambda: client.get("/state").json(), "a first frame")
        answer = client.post("/lock", content=body)
        assert answer.status_code == status, answer.text
        assert answer.json()["error" if status != 202 else "queued"]
    finally:
        station.stop()
    assert "Traceback" not in caplog.text and "Exception in ASGI" not in caplog.text


def test_a_body_over_the_limit_is_413_unread_and_a_client_gone_mid_body_is_quiet(clip, caplog):
    from emts.apps.serve import MAX_BODY_BYTES

    station = _station(clip.frames[:3], loop=True, pace=True, fps=20.0).start()
    app = create_app(station)
    try:
        _wait(lambda: station.state(), "a first frame")
        said = [(b"content-length", b"10000000000")]  # and 6 bytes sent: refused unread
        assert _asgi_post(app, [b'{"x": '], said)[0] == 413
        chunked = [b"a" * 16_384] * (MAX_BODY_BYTES // 16_384 + 2)  # no Content-Length
        status, text = _asgi_post(app, chunked)
        assert status == 413 and b"over 65536 bytes" in text
        said = [(b"content-length", b"40")]
        assert _asgi_post(app, [b'{"x": ', None], said)[0] == 400  # gone mid-body
    finally:
        station.stop()
    assert "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text


def test_a_loop_with_no_usable_frame_stops_with_one_line(caplog):
    station = _station([np.zeros((1, 1), np.uint8)], loop=True).start()
    client = TestClient(create_app(station))
    _wait(lambda: not station.running, "the station stops")
    status = client.get("/status").json()
    assert status["status"] == "error" and "no usable frame in a whole pass" in status["error"]
    skipped = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(skipped) == 1  # one warning, not thirty a second
    answer = client.post("/lock", json={"x": 0, "y": 0})
    assert answer.status_code == 409 and "the tracking stopped" in answer.json()["error"]
    assert client.get("/stream.mjpg").content == b""  # closed, not hanging open


def test_ctrl_c_with_the_page_open_stops_cleanly(tmp_path):
    folder = tmp_path / "clip"
    folder.mkdir()
    for i in range(4):
        cv2.imwrite(str(folder / f"{i:03d}.png"), np.full((128, 160), 60 * i, np.uint8))
    command = [sys.executable, "-m", "emts.cli", "serve", str(folder), "--loop", "--port", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    clients = []
    try:
        line = process.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))
        for _ in range(2):  # two pages open on the video
            client = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
            client.sendall(b"GET /stream.mjpg HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.recv(64).startswith(b"HTTP/1.1 200")
            clients.append(client)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for client in clients:
            client.close()
    assert process.returncode == 128 + signal.SIGINT
    assert "Traceback" not in err and "CancelledError" not in err and "ERROR" not in err, err
    assert err.strip().splitlines() == [
        "emts: interrupted (SIGINT); results written so far are kept"
    ]
