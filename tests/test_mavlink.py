"""MAVLink camera component against a real pymavlink peer on loopback UDP (127.0.0.1 only),
and the gimbal follow control law."""

from __future__ import annotations

import json
import math
import os
import socket
import time
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from pymavlink import mavutil
from pymavlink.dialects.v20 import common as m

from emts.apps.mavlink import GimbalFollow, MavlinkCamera, check_connection, follow_config
from emts.cli import main
from emts.config import GimbalFollowConfig
from emts.errors import BadInputError
from emts.pipeline import Pipeline

TIMEOUT = 2.0  # s, per awaited message


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Peer:
    """A ground station: listens on 127.0.0.1, answers to whoever sent last."""

    def __init__(self) -> None:
        self.port = _free_port()
        os.environ["MAVLINK20"] = "1"  # pymavlink reads it when it loads the dialect
        self.link = mavutil.mavlink_connection(
            f"udpin:127.0.0.1:{self.port}",
            source_system=255,
            source_component=190,
            dialect="common",
        )
        assert mavutil.mavlink.WIRE_PROTOCOL_VERSION == "2.0"

    def wait(self, kind: str, camera: MavlinkCamera | None = None, condition=None):
        """The next ``kind`` message (polling ``camera`` meanwhile), or fail after TIMEOUT."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if camera is not None:
                camera.poll()
            message = self.link.recv_match(type=kind, blocking=False)
            if message is not None and (condition is None or condition(message)):
                return message
            if message is None:
                time.sleep(0.002)
        raise AssertionError(f"no {kind} within {TIMEOUT} s")

    def drain(self, kind: str, seconds: float = 0.2) -> list:
        found, deadline = [], time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.link.recv_match(type=kind, blocking=False)
            if message is None:
                time.sleep(0.002)
            else:
                found.append(message)
        return found

    def command(self, camera, command: int, *params: float, target=(1, 100)):
        self.send(command, *params, target=target)
        return self.ack(camera, command)

    def send(self, command: int, *params: float, target=(1, 100)) -> None:
        params = list(params) + [0.0] * (7 - len(params))
        self.link.mav.command_long_send(*target, command, 0, *params)

    def ack(self, camera, command: int):
        return self.wait(
            "COMMAND_ACK", camera, lambda ack: ack.command == command and ack.target_system == 255
        )

    def close(self) -> None:
        self.link.close()


class RecordingPipeline:
    def __init__(self) -> None:
        self.locks: list = []
        self.unlocks = 0

    def lock(self, x, y, box=None, on_last_frame=False):
        self.locks.append((x, y, box, on_last_frame))

    def unlock(self):
        self.unlocks += 1


def _result(mode: str, box=None, tap=None):
    """A stand-in FrameResult: what MavlinkCamera reads of one."""
    target = None if box is None else SimpleNamespace(box=np.array(box, float))
    return SimpleNamespace(mode=mode, target=target, tap=tap)


def _received(peer, camera, pipeline, count: int) -> None:
    """Poll ``camera`` until ``pipeline`` (a RecordingPipeline) has ``count`` locks."""
    _until(lambda: camera.poll() or len(pipeline.locks) >= count, "the command received")


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {TIMEOUT} s"
        time.sleep(0.002)


@pytest.fixture
def link():
    peer = Peer()
    pipeline = RecordingPipeline()
    camera = MavlinkCamera(f"udpout:127.0.0.1:{peer.port}", pipeline)
    yield peer, camera, pipeline
    camera.close()
    peer.close()


def test_heartbeat_says_camera_and_repeats_at_1_hz(link):
    peer, camera, _ = link
    beat = peer.wait("HEARTBEAT", camera)
    assert beat.type == m.MAV_TYPE_CAMERA
    assert beat.get_srcSystem() == 1 and beat.get_srcComponent() == m.MAV_COMP_ID_CAMERA
    assert beat.autopilot == m.MAV_AUTOPILOT_INVALID
    camera.poll()  # not due again yet
    assert peer.drain("HEARTBEAT", 0.05) == []
    camera._last_heartbeat -= 1.0  # one second later
    camera.poll()
    assert peer.wait("HEARTBEAT").type == m.MAV_TYPE_CAMERA


@pytest.mark.parametrize("how", ["request_message", "request_camera_information"])
def test_camera_information_on_request_offers_tracking(link, how):
    peer, camera, _ = link
    peer.wait("HEARTBEAT", camera)
    camera(_result("search"), (640, 480))
    if how == "request_message":
        ack = peer.command(camera, m.MAV_CMD_REQUEST_MESSAGE, m.MAVLINK_MSG_ID_CAMERA_INFORMATION)
    else:
        ack = peer.command(camera, m.MAV_CMD_REQUEST_CAMERA_INFORMATION, 1)
    assert ack.result == m.MAV_RESULT_ACCEPTED
    info = peer.wait("CAMERA_INFORMATION", camera)
    assert info.flags & m.CAMERA_CAP_FLAGS_HAS_TRACKING_POINT
    assert info.flags & m.CAMERA_CAP_FLAGS_HAS_TRACKING_RECTANGLE
    assert (info.resolution_h, info.resolution_v) == (640, 480)
    assert bytes(info.vendor_name).rstrip(b"\0") == b"EMTS"


def test_tracking_status_per_frame_with_normalized_rectangle(link):
    peer, camera, _ = link
    peer.wait("HEARTBEAT", camera)
    camera(_result("locked", [160, 120, 64, 96]), (640, 480))
    status = peer.wait("CAMERA_TRACKING_IMAGE_STATUS", camera)
    assert status.tracking_status == m.CAMERA_TRACKING_STATUS_FLAGS_ACTIVE
    assert status.tracking_mode == m.CAMERA_TRACKING_MODE_RECTANGLE
    assert status.target_data == m.CAMERA_TRACKING_TARGET_DATA_IN_STATUS
    rect = (status.rec_top_x, status.rec_top_y, status.rec_bottom_x, status.rec_bottom_y)
    assert rect == pytest.approx((0.25, 0.25, 0.35, 0.45), abs=1e-6)
    assert math.isnan(status.point_x) and math.isnan(status.radius)

    camera(_result("reacquire", [0, 0, 64, 48]), (640, 480))
    status = peer.wait("CAMERA_TRACKING_IMAGE_STATUS", camera)
    assert status.tracking_status == (
        m.CAMERA_TRACKING_STATUS_FLAGS_ACTIVE | m.CAMERA_TRACKING_STATUS_FLAGS_COASTING
    )
    camera(_result("search"), (640, 480))
    status = peer.wait("CAMERA_TRACKING_IMAGE_STATUS", camera)
    assert status.tracking_status == m.CAMERA_TRACKING_STATUS_FLAGS_IDLE
    assert status.tracking_mode == m.CAMERA_TRACKING_MODE_NONE
    assert math.isnan(status.rec_top_x)
    camera(None, None)  # a frame that could not be processed
    status = peer.wait("CAMERA_TRACKING_IMAGE_STATUS", camera)
    assert status.tracking_status == m.CAMERA_TRACKING_STATUS_FLAGS_ERROR

    for _ in range(5):
        camera(_result("search"), (640, 480))
    # IDLE after ERROR is news and goes out; IDLE again, once a second (IDLE_INTERVAL)
    assert len(peer.drain("CAMERA_TRACKING_IMAGE_STATUS")) == 1
    for _ in range(3):
        camera(_result("locked", [160, 120, 64, 96]), (640, 480))
    assert len(peer.drain("CAMERA_TRACKING_IMAGE_STATUS")) == 3  # tracking: every frame


def test_idle_status_is_repeated_once_a_second_at_the_default_rate():
    peer, now = Peer(), [0.0]
    camera = MavlinkCamera(
        f"udpout:127.0.0.1:{peer.port}", RecordingPipeline(), clock=lambda: now[0]
    )
    peer.wait("HEARTBEAT", camera)
    for frame in range(90):  # 3 s at 30 fps, nobody locked
        now[0] = frame / 30
        camera(_result("search"), (640, 480))
    assert len(peer.drain("CAMERA_TRACKING_IMAGE_STATUS", 0.3)) == 3  # at 0, 1 and 2 s
    camera.close()
    peer.close()


def test_set_message_interval_changes_the_status_rate(link):
    peer, camera, _ = link
    peer.wait("HEARTBEAT", camera)
    status_id = m.MAVLINK_MSG_ID_CAMERA_TRACKING_IMAGE_STATUS
    ack = peer.command(camera, m.MAV_CMD_SET_MESSAGE_INTERVAL, status_id, -1)
    assert ack.result == m.MAV_RESULT_ACCEPTED
    for _ in range(3):
        camera(_result("search"), (640, 480))
    assert peer.drain("CAMERA_TRACKING_IMAGE_STATUS") == []
    ack = peer.command(camera, m.MAV_CMD_SET_MESSAGE_INTERVAL, status_id, 10e6)  # every 10 s
    assert ack.result == m.MAV_RESULT_ACCEPTED
    for _ in range(3):
        camera(_result("search"), (640, 480))
    assert len(peer.drain("CAMERA_TRACKING_IMAGE_STATUS")) == 1
    assert peer.command(camera, m.MAV_CMD_SET_MESSAGE_INTERVAL, status_id, 0).result == 0
    for _ in range(3):
        camera(_result("locked", [160, 120, 64, 96]), (640, 480))
    assert len(peer.drain("CAMERA_TRACKING_IMAGE_STATUS")) == 3  # the default: every frame
    ack = peer.command(camera, m.MAV_CMD_SET_MESSAGE_INTERVAL, m.MAVLINK_MSG_ID_HEARTBEAT, 1e5)
    assert ack.result == m.MAV_RESULT_UNSUPPORTED


def test_track_commands_reach_the_pipeline_in_input_pixels(link):
    peer, camera, pipeline = link
    peer.wait("HEARTBEAT", camera)
    ack = peer.command(camera, m.MAV_CMD_CAMERA_TRACK_POINT, 0.5, 0.5, 0.0)
    assert ack.result == m.MAV_RESULT_TEMPORARILY_REJECTED  # no frame yet: nothing to tap on
    camera(_result("search"), (640, 480))
    peer.send(m.MAV_CMD_CAMERA_TRACK_POINT, 0.25, 0.75, 0.0)
    _received(peer, camera, pipeline, 1)
    assert pipeline.locks[-1] == (159.5, 359.5, None, True)
    assert peer.drain("COMMAND_ACK", 0.05) == []  # answered by the frame that takes the tap
    camera(_result("locked", [150, 340, 20, 40], tap="lock"), (640, 480))
    assert peer.ack(camera, m.MAV_CMD_CAMERA_TRACK_POINT).result == m.MAV_RESULT_ACCEPTED
    ack = peer.command(camera, m.MAV_CMD_CAMERA_TRACK_RECTANGLE, 0.25, 0.25, 0.35, 0.45)
    assert ack.result == m.MAV_RESULT_ACCEPTED
    x, y, box, _ = pipeline.locks[-1]
    assert box == pytest.approx((160, 120, 64, 96))
    assert (x, y) == pytest.approx((191.5, 167.5))
    bad = peer.command(camera, m.MAV_CMD_CAMERA_TRACK_POINT, 1.5, 0.5, 0.0)
    assert bad.result == m.MAV_RESULT_DENIED and len(pipeline.locks) == 2
    ack = peer.command(camera, m.MAV_CMD_CAMERA_STOP_TRACKING)
    assert ack.result == m.MAV_RESULT_ACCEPTED and pipeline.unlocks == 1
    # commands for another component are not ours; unknown ones are refused, not ignored
    peer.link.mav.command_long_send(1, 42, m.MAV_CMD_CAMERA_STOP_TRACKING, 0, 0, 0, 0, 0, 0, 0, 0)
    ack = peer.command(camera, m.MAV_CMD_DO_SET_MODE, 1)
    assert ack.result == m.MAV_RESULT_UNSUPPORTED and pipeline.unlocks == 1


def _scene_with_person(rng) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A textured gray field with one dark 14x40 'person'; returns the frame and its box."""
    noise = cv2.GaussianBlur(rng.normal(0, 1, (512, 640)).astype(np.float32), (0, 0), 3)
    frame = np.clip(150 + noise / noise.std() * 20, 0, 255).astype(np.uint8)
    box = (400, 300, 14, 40)
    frame[box[1] : box[1] + box[3], box[0] : box[0] + box[2]] = 40
    return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR), box


def test_track_point_locks_the_real_pipeline_and_stop_unlocks():
    frame, box = _scene_with_person(np.random.default_rng(3))
    pipeline = Pipeline(None, None, auto_lock=False)
    peer = Peer()
    with MavlinkCamera(f"udpout:127.0.0.1:{peer.port}", pipeline) as camera:
        peer.wait("HEARTBEAT", camera)
        result = pipeline.step(frame)
        camera(result, (640, 512))
        assert result.mode == "search"
        nx, ny = (box[0] + box[2] / 2) / 640, (box[1] + box[3] / 2) / 512
        peer.send(m.MAV_CMD_CAMERA_TRACK_POINT, nx, ny)
        _until(lambda: camera.poll() or pipeline.acquisition.pending, "the tap received")
        result = pipeline.step(frame)
        camera(result, (640, 512))
        assert result.mode == "locked" and result.target is not None
        assert peer.ack(camera, m.MAV_CMD_CAMERA_TRACK_POINT).result == m.MAV_RESULT_ACCEPTED
        x, y, w, h = result.target.box
        cx, cy = box[0] + box[2] / 2 - 0.5, box[1] + box[3] / 2 - 0.5
        assert x <= cx <= x + w and y <= cy <= y + h
        status = peer.wait("CAMERA_TRACKING_IMAGE_STATUS", camera, lambda s: s.tracking_status != 0)
        assert status.rec_top_x <= nx <= status.rec_bottom_x
        assert status.rec_top_y <= ny <= status.rec_bottom_y
        assert peer.command(camera, m.MAV_CMD_CAMERA_STOP_TRACKING).result == 0
        result = pipeline.step(frame)
        assert result.mode == "search" and result.target is None
    peer.close()


def test_a_track_point_on_nothing_fails_says_why_and_keeps_the_lock():
    frame, box = _scene_with_person(np.random.default_rng(3))
    frame[40:200, 40:200] = 150  # flat ground: nothing detected, nothing stands out
    pipeline = Pipeline(None, None, auto_lock=False)
    peer = Peer()
    with MavlinkCamera(f"udpout:127.0.0.1:{peer.port}", pipeline) as camera:
        peer.wait("HEARTBEAT", camera)
        pipeline.lock(box[0] + box[2] / 2 - 0.5, box[1] + box[3] / 2 - 0.5)
        locked = pipeline.step(frame)
        camera(locked, (640, 512))
        assert locked.mode == "locked"
        peer.send(m.MAV_CMD_CAMERA_TRACK_POINT, 120 / 640, 120 / 512)
        _until(lambda: camera.poll() or pipeline.acquisition.pending, "the tap received")
        assert peer.drain("COMMAND_ACK", 0.05) == []
        for _ in range(pipeline.acquisition.config.tap_retry_frames):  # tried again: no answer
            result = pipeline.step(frame)
            camera(result, (640, 512))
            assert (result.tap, result.event) == ("waiting", None)
        assert peer.drain("COMMAND_ACK", 0.05) == []
        result = pipeline.step(frame)
        camera(result, (640, 512))
        assert (result.tap, result.event, result.mode) == ("no_target", "no_target", "locked")
        assert peer.ack(camera, m.MAV_CMD_CAMERA_TRACK_POINT).result == m.MAV_RESULT_FAILED
        text = peer.wait("STATUSTEXT", camera)
        assert text.severity == m.MAV_SEVERITY_WARNING and text.text == "EMTS: no target there"
        np.testing.assert_allclose(result.target.box, locked.target.box, atol=1.0)
        status = peer.wait("CAMERA_TRACKING_IMAGE_STATUS", camera)
        assert status.tracking_status == m.CAMERA_TRACKING_STATUS_FLAGS_ACTIVE  # still tracking
    peer.close()


def _a_track_point_sent():
    """(peer, a RecordingPipeline, its MavlinkCamera) after a TRACK_POINT the camera took."""
    peer, pipeline = Peer(), RecordingPipeline()
    camera = MavlinkCamera(f"udpout:127.0.0.1:{peer.port}", pipeline)
    peer.wait("HEARTBEAT", camera)
    camera(_result("search"), (640, 480))
    peer.send(m.MAV_CMD_CAMERA_TRACK_POINT, 0.5, 0.5)
    _received(peer, camera, pipeline, 1)
    return peer, pipeline, camera


def test_a_track_point_tried_again_is_answered_once_decided():
    peer, _, camera = _a_track_point_sent()
    for _ in range(3):  # nothing under the point yet: tried again on the next frames
        camera(_result("search", tap="waiting"), (640, 480))
    assert peer.drain("COMMAND_ACK", 0.05) == []
    camera(_result("locked", box=[300, 200, 20, 40], tap="lock"), (640, 480))
    assert peer.ack(camera, m.MAV_CMD_CAMERA_TRACK_POINT).result == m.MAV_RESULT_ACCEPTED
    camera.close()
    peer.close()


def test_a_waiting_track_point_is_answered_when_replaced_or_at_close():
    peer, pipeline, camera = _a_track_point_sent()
    camera(None, None)  # a frame that could not be processed took no tap: still waiting
    assert peer.drain("COMMAND_ACK", 0.05) == []
    peer.send(m.MAV_CMD_CAMERA_TRACK_POINT, 0.25, 0.5)  # a second tap replaces the first
    assert peer.ack(camera, m.MAV_CMD_CAMERA_TRACK_POINT).result == m.MAV_RESULT_ACCEPTED
    assert len(pipeline.locks) == 2
    camera.close()  # no frame took the second one: the ground station is not left waiting
    ack = peer.ack(None, m.MAV_CMD_CAMERA_TRACK_POINT)
    assert ack.result == m.MAV_RESULT_TEMPORARILY_REJECTED
    peer.close()


# -- gimbal follow ---------------------------------------------------------------------------
SIZE = (640, 480)


def _box_at(cx: float, cy: float) -> list[float]:
    return [cx - 10, cy - 20, 20, 40]


def test_pid_signs_follow_mavlink_conventions():
    follow = GimbalFollow()
    pitch, yaw = follow.update(_box_at(500, 240), SIZE, None)  # right of centre
    assert yaw > 0 and pitch == 0
    follow.reset()
    pitch, yaw = follow.update(_box_at(100, 240), SIZE, None)  # left
    assert yaw < 0
    follow.reset()
    pitch, yaw = follow.update(_box_at(320, 400), SIZE, None)  # below centre: tilt down
    assert pitch < 0 and yaw == 0
    follow.reset()
    pitch, yaw = follow.update(_box_at(320, 60), SIZE, None)  # above: tilt up
    assert pitch > 0
    follow.reset()
    assert follow.update(_box_at(324, 243), SIZE, None) == (0.0, 0.0)  # inside the dead band
    assert follow.update(None, SIZE, 0.03) == (0.0, 0.0)  # not locked


def test_pid_saturates_and_does_not_wind_up():
    config = GimbalFollowConfig(kp=5.0, ki=2.0, kd=0.0, max_yaw_rate=0.4, max_pitch_rate=0.3)
    follow = GimbalFollow(config)
    for _ in range(300):  # 10 s hard right and low, at 30 fps
        pitch, yaw = follow.update(_box_at(630, 470), SIZE, 1 / 30)
        assert yaw == pytest.approx(0.4) and pitch == pytest.approx(-0.3)
    # saturated all along: the integral did not grow, so a target that crosses to the left
    # turns the gimbal left at once instead of after seconds of unwinding
    _, yaw = follow.update(_box_at(300, 240), SIZE, 1 / 30)  # just left of centre
    assert yaw < 0
    assert abs(follow.yaw.integral * config.ki) <= config.integral_limit + 1e-9


def test_pid_integral_removes_a_steady_offset_within_its_limit():
    config = GimbalFollowConfig(kp=0.5, ki=1.0, kd=0.0, integral_limit=0.2)
    follow = GimbalFollow(config)
    first = follow.update(_box_at(400, 240), SIZE, 0.1)[1]
    for _ in range(100):
        last = follow.update(_box_at(400, 240), SIZE, 0.1)[1]
    assert last > first  # the I term adds up on a steady offset ...
    error = (400 - 320) / 320 - config.dead_band
    assert last == pytest.approx(config.kp * error + config.integral_limit)  # ... up to its limit


def test_gimbal_rates_go_out_while_locked_and_stop_once_after():
    peer = Peer()
    camera = MavlinkCamera(
        f"udpout:127.0.0.1:{peer.port}", RecordingPipeline(), follow=GimbalFollowConfig()
    )
    try:
        peer.wait("HEARTBEAT", camera)
        camera(_result("search"), SIZE)
        assert peer.drain("GIMBAL_MANAGER_SET_PITCHYAW", 0.05) == []
        camera(_result("locked", _box_at(600, 240)), SIZE)
        configure = peer.wait("COMMAND_LONG")
        assert configure.command == m.MAV_CMD_DO_GIMBAL_MANAGER_CONFIGURE
        assert (configure.param1, configure.param2) == (1, 100)  # us in primary control
        rates = peer.wait("GIMBAL_MANAGER_SET_PITCHYAW")
        assert (rates.target_system, rates.target_component) == (1, 1)
        assert rates.yaw_rate > 0 and math.isnan(rates.yaw) and math.isnan(rates.pitch)
        camera(_result("search"), SIZE)
        camera(_result("search"), SIZE)
        stops = peer.drain("GIMBAL_MANAGER_SET_PITCHYAW")
        assert [(s.pitch_rate, s.yaw_rate) for s in stops] == [(0.0, 0.0)]  # once
    finally:
        camera.close()
        peer.close()


# -- arguments and the command line -----------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["nonsense", "udpout:127.0.0.1", "udpout:127.0.0.1:99999", "udpout:no.such.host.invalid:1"],
)
def test_bad_connection_strings_are_bad_input(text):
    with pytest.raises(BadInputError):
        check_connection(text)


def test_follow_overrides():
    assert follow_config(["kp=0.5", "max-yaw-rate=0.2"]).max_yaw_rate == 0.2
    for bad in ["kq=1", "kp", "kp=-1", "max_yaw_rate=0", "kp=nan"]:
        with pytest.raises(BadInputError):
            follow_config([bad])


def _frames(tmp_path, count: int = 3):
    folder = tmp_path / "frames"
    folder.mkdir()
    frame, _ = _scene_with_person(np.random.default_rng(0))
    for i in range(count):
        cv2.imwrite(str(folder / f"{i:03d}.png"), frame)
    return folder


def test_cli_track_sends_one_status_per_frame(tmp_path):
    folder = _frames(tmp_path)
    peer = Peer()
    jsonl = tmp_path / "track.jsonl"
    code = main(
        [
            "track",
            str(folder),
            "--jsonl",
            str(jsonl),
            "--no-verifier",
            "--threads",
            "1",
            "--lock",
            "407,320@1",
            "--mavlink",
            f"udpout:127.0.0.1:{peer.port}",
            "--follow",
            "gimbal",
        ]
    )
    assert code == 0
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(lines) == 3 and set(lines[0]) == {"frame", "mode", "target", "ms", "detector"}
    statuses = peer.drain("CAMERA_TRACKING_IMAGE_STATUS", 0.3)
    assert len(statuses) == 3
    assert [s.tracking_status != 0 for s in statuses] == [
        line["mode"] == "locked" for line in lines
    ]
    peer.close()


def test_cli_bad_mavlink_is_one_line_exit_2(tmp_path, capsys):
    folder = _frames(tmp_path, 1)
    args = ["track", str(folder), "--jsonl", str(tmp_path / "t.jsonl"), "--no-verifier"]
    assert main([*args, "--mavlink", "udpout:localhost"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("emts: error: --mavlink") and "\n" not in err
    assert main([*args, "--follow", "gimbal"]) == 2
