"""EMTS as a MAVLink camera component (``emts track --mavlink CONNECTION``; extra ``[mavlink]``).

What goes out:

* ``HEARTBEAT`` at 1 Hz as ``MAV_TYPE_CAMERA`` from component ``MAV_COMP_ID_CAMERA`` (100)
  of system 1 (the autopilot's system id on most vehicles; both are arguments).
* ``CAMERA_INFORMATION`` on ``MAV_CMD_REQUEST_MESSAGE`` (or the older
  ``MAV_CMD_REQUEST_CAMERA_INFORMATION``), with ``CAMERA_CAP_FLAGS_HAS_TRACKING_POINT`` and
  ``..._HAS_TRACKING_RECTANGLE`` so ground stations offer tracking.
* ``CAMERA_TRACKING_IMAGE_STATUS`` once per processed frame (``MAV_CMD_SET_MESSAGE_INTERVAL``
  sets an interval instead, at most one per frame; -1 stops it, 0 restores once per frame):
  status ``ACTIVE`` while locked, ``ACTIVE | COASTING`` while reacquiring (the box is the
  prediction), ``IDLE`` in search, ``ERROR`` for a frame that could not be processed; mode
  ``RECTANGLE`` with the target's box normalized to 0-1 of the image (``NONE`` when idle).
* With ``--follow gimbal``: ``GIMBAL_MANAGER_SET_PITCHYAW`` with pitch and yaw *rates* (angles
  NaN) from :class:`GimbalFollow` every locked frame, zero rates once when the lock ends, and
  ``MAV_CMD_DO_GIMBAL_MANAGER_CONFIGURE`` asking for primary control on the first lock.

What comes in (each ``COMMAND_LONG`` / ``COMMAND_INT`` addressed to this component or to all
is answered with ``COMMAND_ACK``): ``MAV_CMD_CAMERA_TRACK_POINT`` (normalized x, y ->
``pipeline.lock`` at that input pixel, on the frame last processed; answered once the next
frame has taken the tap: ``MAV_RESULT_ACCEPTED`` if it locked, ``MAV_RESULT_FAILED`` plus a
``STATUSTEXT`` (WARNING) "EMTS: no target there" if nothing was detected and nothing stood
out from the ground under the point -- no lock made, a lock held kept; a tap replaced by a
later track or stop command before any frame took it is answered ``ACCEPTED`` then, one
still waiting when the link closes ``TEMPORARILY_REJECTED``),
``MAV_CMD_CAMERA_TRACK_RECTANGLE`` (-> ``pipeline.lock`` with that box; a box always locks,
answered at once),
``MAV_CMD_CAMERA_STOP_TRACKING`` (-> ``pipeline.unlock()``), the two requests and the interval
command above. Anything else addressed to us is answered ``MAV_RESULT_UNSUPPORTED``.

Nothing runs in the background: :meth:`MavlinkCamera.poll` reads what has arrived and sends
the heartbeat when due, and :meth:`MavlinkCamera.__call__` (once per frame, from
:func:`emts.apps.track.run_track`) polls too, so commands are answered between frames; while
a live stream reconnects, :func:`emts.apps.track.run_track` calls :meth:`MavlinkCamera.idle`
(a poll) every quarter second, so the component never falls silent.

Normalized image coordinates: 0 is the left/top *edge* of the image, 1 the right/bottom edge;
input pixel ``i`` has its centre at ``i`` (edges at -0.5 and W - 0.5), as everywhere in EMTS,
so x_px = x_norm * W - 0.5 and a box ``[x, y, w, h]`` spans x / W to (x + w) / W.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from emts.config import GimbalFollowConfig
from emts.errors import BadInputError

if TYPE_CHECKING:
    from emts.pipeline import Pipeline

log = logging.getLogger("emts")

COMPONENT_CAMERA = 100  # MAV_COMP_ID_CAMERA
COMPONENT_AUTOPILOT = 1  # MAV_COMP_ID_AUTOPILOT1: where PX4 and ArduPilot run the gimbal manager
HEARTBEAT_PERIOD = 1.0  # s
# s: IDLE tracking status repeated this often at the default rate (every frame it took 23 % of
# a 57,600-baud telemetry link); a change of status and every tracking frame go out at once
IDLE_INTERVAL = 1.0
MAX_MESSAGES_PER_POLL = 200  # a flood of messages cannot stall the frame loop
_NETWORK_SCHEMES = ("udp", "udpin", "udpout", "udpbcast", "tcp", "tcpin", "mcast")
_CONNECTION_HELP = (
    "expected udpin:HOST:PORT, udpout:HOST:PORT, tcp:HOST:PORT, tcpin:HOST:PORT or a serial "
    "device such as /dev/ttyUSB0,57600"
)


def _pymavlink():
    """The MAVLink 2 ``common`` dialect (CAMERA_TRACKING_IMAGE_STATUS has id 275: MAVLink 2
    only). pymavlink picks the wire protocol from the ``MAVLINK20`` environment variable."""
    os.environ["MAVLINK20"] = "1"
    try:
        from pymavlink import mavutil
        from pymavlink.dialects.v20 import common
    except ImportError:
        raise BadInputError("--mavlink needs pymavlink: pip install 'emts[mavlink]'") from None
    return mavutil, common


def check_connection(text: str, name: str = "MAVLink connection") -> str:
    """A pymavlink connection string, checked before anything starts (BadInputError).

    Args:
        text: the connection string.
        name: what an error message calls it (the command line passes its flag).
    """
    scheme, sep, rest = text.partition(":")
    if sep and scheme.lower() in _NETWORK_SCHEMES:
        host, _, port_text = rest.rpartition(":")
        try:
            port = int(port_text)
        except ValueError:
            port = -1
        if not host or not 0 <= port <= 65535:
            raise BadInputError(f"{name} {text!r}: {_CONNECTION_HELP}")
        try:
            socket.getaddrinfo(host, port)
        except OSError as error:
            raise BadInputError(f"{name} {text!r}: unknown host {host!r} ({error})") from None
        return text
    device = text.split(",")[0]
    if not device or not Path(device).exists():
        raise BadInputError(f"{name} {text!r}: no such serial device; {_CONNECTION_HELP}")
    try:
        import serial  # noqa: F401  (pymavlink opens serial ports with pyserial)
    except ImportError:
        raise BadInputError(
            f"{name} {text!r}: a serial port needs pyserial: pip install 'emts[mavlink]'"
        ) from None
    return text


# What each GimbalFollowConfig field may be (the max_* fields > 0): beyond these a gimbal is
# not steered but flung (a gimbal turns at most a few rad/s), and MAVLink's float32 fields
# cannot even carry the numbers (1e308 overflowed pymavlink).
GIMBAL_LIMITS = {
    "kp": (0.0, 100.0),  # rad/s per unit of offset
    "ki": (0.0, 100.0),
    "kd": (0.0, 100.0),
    "max_yaw_rate": (0.0, 10.0),  # rad/s
    "max_pitch_rate": (0.0, 10.0),
    "dead_band": (0.0, 1.0),  # offset units: 1 is the image edge
    "integral_limit": (0.0, 10.0),  # rad/s
    "max_dt": (0.0, 10.0),  # s
}
_FLOAT32_MAX = 3.4028234663852886e38


def _limit_error(key: str, value: float) -> str | None:
    """Why ``value`` cannot be the GimbalFollowConfig field ``key``, or None."""
    low, high = GIMBAL_LIMITS[key]
    positive = key.startswith("max_")
    if math.isfinite(value) and low <= value <= high and not (positive and value == low):
        return None
    bounds = f"({low:g}, {high:g}]" if positive else f"[{low:g}, {high:g}]"
    return f"{key} must be a finite number in {bounds}"


def check_follow_config(config: GimbalFollowConfig) -> GimbalFollowConfig:
    """``config`` if every field is within :data:`GIMBAL_LIMITS`, else BadInputError."""
    for key in GIMBAL_LIMITS:
        error = _limit_error(key, float(getattr(config, key)))
        if error:
            raise BadInputError(f"gimbal follow config: {error}, got {getattr(config, key)!r}")
    return config


def follow_config(
    overrides: list[str] | None = None, name: str = "gimbal override"
) -> GimbalFollowConfig:
    """:class:`GimbalFollowConfig` with ``KEY=VALUE`` overrides (``kp=0.5``), each within
    :data:`GIMBAL_LIMITS`.

    Args:
        overrides: ``KEY=VALUE`` items, KEY a field of :class:`GimbalFollowConfig`.
        name: what an error message calls an item (the command line passes its flag).
    """
    names = [f.name for f in fields(GimbalFollowConfig)]
    values = {}
    for item in overrides or []:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in names:
            raise BadInputError(f"{name} {item!r}: expected KEY=VALUE, KEY one of {names}")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        error = _limit_error(key, value)
        if error:
            raise BadInputError(f"{name} {item!r}: {error}")
        values[key] = value
    return replace(GimbalFollowConfig(), **values)


def _float32(value: float) -> float:
    """``value`` within what a MAVLink float field carries (NaN stays NaN: "not given")."""
    return max(-_FLOAT32_MAX, min(_FLOAT32_MAX, value)) if math.isfinite(value) else value


class _Axis:
    """One PID axis: dead band, derivative on the error, a clamped integral that only grows
    while the output is not saturated in the error's direction (conditional integration)."""

    def __init__(self, config: GimbalFollowConfig, limit: float) -> None:
        self.config = config
        self.limit = limit
        self.reset()

    def reset(self) -> None:
        self.integral = 0.0
        self.previous: float | None = None

    def update(self, offset: float, dt: float | None) -> float:
        c = self.config
        error = 0.0 if abs(offset) <= c.dead_band else offset - math.copysign(c.dead_band, offset)
        dt = None if dt is None or dt <= 0 else min(dt, c.max_dt)
        p = c.kp * error
        d = 0.0
        if dt is not None and self.previous is not None:
            d = c.kd * (error - self.previous) / dt
        self.previous = error
        if dt is not None and c.ki > 0:
            bound = c.integral_limit / c.ki
            candidate = max(-bound, min(bound, self.integral + error * dt))
            raw = p + c.ki * candidate + d
            if abs(raw) <= self.limit or raw * error <= 0:  # growing into saturation: hold
                self.integral = candidate
        return max(-self.limit, min(self.limit, p + c.ki * self.integral + d))


class GimbalFollow:
    """Pitch and yaw rates (rad/s, MAVLink signs) that bring the target to the image centre.

    ``update(box, size, dt)``: ``box`` [x, y, w, h] input px (None when not locked -> zero
    rates and the PID state cleared), ``size`` (W, H), ``dt`` seconds since the last update
    (None: the first one; no derivative or integral). Returns ``(pitch_rate, yaw_rate)``:
    a target right of centre gives yaw rate > 0 (turn right), one below centre pitch rate < 0
    (tilt down), each within its ``max_*_rate``.
    """

    def __init__(self, config: GimbalFollowConfig | None = None) -> None:
        self.config = check_follow_config(config or GimbalFollowConfig())
        self.yaw = _Axis(self.config, self.config.max_yaw_rate)
        self.pitch = _Axis(self.config, self.config.max_pitch_rate)

    def reset(self) -> None:
        self.yaw.reset()
        self.pitch.reset()

    @staticmethod
    def offset(box, size: tuple[int, int]) -> tuple[float, float]:
        """The box centre's offset from the image centre, -1..1 across (x right, y down)."""
        width, height = size
        cx = float(box[0]) + float(box[2]) / 2  # box edges: x - 0.5 .. x + w - 0.5
        cy = float(box[1]) + float(box[3]) / 2
        return (cx - width / 2) / (width / 2), (cy - height / 2) / (height / 2)

    def update(self, box, size: tuple[int, int], dt: float | None) -> tuple[float, float]:
        if box is None:
            self.reset()
            return 0.0, 0.0
        dx, dy = self.offset(box, size)
        yaw_rate = self.yaw.update(dx, dt)
        pitch_rate = -self.pitch.update(dy, dt)  # below centre (dy > 0): tilt down (< 0)
        return pitch_rate, yaw_rate


_LATER = object()  # a command handler's answer: the ACK waits for the next frame


def _text_field(text: str, length: int) -> list[int]:
    return list(text.encode()[:length].ljust(length, b"\0"))


class MavlinkCamera:
    """The frame hook of ``emts track --mavlink``: a MAVLink camera component (see the module).

    Args:
        connection: a pymavlink connection string (``udpout:127.0.0.1:14550``, ...).
        pipeline: what TRACK_POINT / TRACK_RECTANGLE lock and STOP_TRACKING unlocks (anything
            with ``lock(x, y, box=None, on_last_frame=False)`` and ``unlock()``).
        follow: a :class:`GimbalFollowConfig` to steer the gimbal (``--follow gimbal``).
        system: our MAVLink system id.
        component: our MAVLink component id.
        gimbal_target: ``(system, component)`` of the gimbal manager (the autopilot).
        gimbal_device: the gimbal device id (0: all gimbals).
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(
        self,
        connection: str,
        pipeline: Pipeline,
        follow: GimbalFollowConfig | None = None,
        system: int = 1,
        component: int = COMPONENT_CAMERA,
        gimbal_target: tuple[int, int] = (1, COMPONENT_AUTOPILOT),
        gimbal_device: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_connection(connection)
        mavutil, self.m = _pymavlink()
        try:
            self.connection = mavutil.mavlink_connection(
                connection,
                source_system=system,
                source_component=component,
                dialect="common",
                autoreconnect=True,
            )
        except Exception as error:  # pymavlink raises whatever its transport raises
            raise BadInputError(f"--mavlink {connection!r}: {error}") from None
        self.mav = self.connection.mav
        self.pipeline = pipeline
        self.system, self.component = system, component
        self.gimbal_target, self.gimbal_device = gimbal_target, gimbal_device
        self.follow = GimbalFollow(follow) if follow is not None else None
        self.clock = clock
        self.started = clock()
        self.size: tuple[int, int] | None = None  # (W, H) of the last processed frame
        # s; None: the default rate (every frame while tracking, IDLE at IDLE_INTERVAL),
        # < 0: never
        self.status_interval: float | None = None
        self._last_status = -math.inf
        self._last_kind: str | None = None  # what the last status said: idle / active / error
        self._last_heartbeat = -math.inf
        self._last_follow: float | None = None
        self._following = False
        self._gimbal_configured = False
        self.commands = 0  # commands answered (for the summary and tests)
        # a TRACK_POINT given to the pipeline, answered once a frame has taken it:
        # (command, the sender's system, component)
        self._tap_ack: tuple[int, int, int] | None = None
        self.poll()

    # -- per frame -----------------------------------------------------------------------
    def __call__(self, result, size: tuple[int, int] | None) -> None:
        """Once per frame: ``result`` a FrameResult (None: the frame could not be processed),
        ``size`` the frame's (W, H)."""
        # this frame decided the tap queued before it (a skipped one: not; "waiting": nothing
        # under the point yet, tried again on the next frame)
        outcome = None if result is None else getattr(result, "tap", None)
        if result is not None and outcome != "waiting":
            self._answer_tap(outcome)
        self.poll()
        if size is not None:
            self.size = (int(size[0]), int(size[1]))
        now = self.clock()
        kind = self._status_kind(result)
        if self.status_interval is None:  # the default rate: nothing new, said once a second
            repeat = kind == "idle" and self._last_kind == "idle"
            due = not repeat or now - self._last_status >= IDLE_INTERVAL
        else:
            due = self.status_interval >= 0 and now - self._last_status >= self.status_interval
        if due:
            self.send_status(result)
            self._last_status, self._last_kind = now, kind
        if self.follow is not None:
            self._steer(result, now)

    def _status_kind(self, result) -> str:
        if result is None:
            return "error"
        if result.target is None or result.mode == "search" or self.size is None:
            return "idle"
        return "active"

    def send_status(self, result) -> None:
        """CAMERA_TRACKING_IMAGE_STATUS for ``result`` (None: ERROR)."""
        m = self.m
        nan = math.nan
        rect = (nan, nan, nan, nan)
        mode, data = m.CAMERA_TRACKING_MODE_NONE, 0
        if result is None:
            status = m.CAMERA_TRACKING_STATUS_FLAGS_ERROR
        elif result.target is None or result.mode == "search" or self.size is None:
            status = m.CAMERA_TRACKING_STATUS_FLAGS_IDLE
        else:
            status = m.CAMERA_TRACKING_STATUS_FLAGS_ACTIVE
            if result.mode == "reacquire":
                status |= m.CAMERA_TRACKING_STATUS_FLAGS_COASTING
            mode = m.CAMERA_TRACKING_MODE_RECTANGLE
            data = m.CAMERA_TRACKING_TARGET_DATA_IN_STATUS
            x, y, w, h = (float(v) for v in result.target.box)
            width, height = self.size
            rect = (
                min(max(x / width, 0.0), 1.0),
                min(max(y / height, 0.0), 1.0),
                min(max((x + w) / width, 0.0), 1.0),
                min(max((y + h) / height, 0.0), 1.0),
            )
        self.mav.camera_tracking_image_status_send(
            status,
            mode,
            data,
            nan,
            nan,
            nan,
            *rect,
            0,  # camera_device_id 0: we are MAVLink
        )

    def _steer(self, result, now: float) -> None:
        locked = result is not None and result.mode == "locked" and result.target is not None
        if not locked or self.size is None:
            self.follow.reset()
            self._last_follow = None
            if self._following:  # the lock ended: stop the gimbal once, then leave it alone
                self._send_rates(0.0, 0.0)
                self._following = False
            return
        if not self._gimbal_configured:
            self._command(
                self.m.MAV_CMD_DO_GIMBAL_MANAGER_CONFIGURE,
                self.system,
                self.component,
                -1,
                -1,
                0,
                0,
                self.gimbal_device,
            )
            self._gimbal_configured = True
        dt = None if self._last_follow is None else now - self._last_follow
        self._last_follow = now
        pitch_rate, yaw_rate = self.follow.update(result.target.box, self.size, dt)
        self._send_rates(pitch_rate, yaw_rate)
        self._following = True

    def _send_rates(self, pitch_rate: float, yaw_rate: float) -> None:
        self.mav.gimbal_manager_set_pitchyaw_send(
            *self.gimbal_target,
            self.m.GIMBAL_MANAGER_FLAGS_YAW_IN_VEHICLE_FRAME,
            self.gimbal_device,
            math.nan,  # no angle: rate control
            math.nan,
            _float32(pitch_rate),
            _float32(yaw_rate),
        )

    def _command(self, command: int, *params: float) -> None:
        self.mav.command_long_send(*self.gimbal_target, command, 0, *params)

    # -- between frames ------------------------------------------------------------------
    def idle(self) -> None:
        """While no frame comes (a live stream reconnecting): heartbeat and commands go on."""
        self.poll()

    def poll(self) -> None:
        """Send the heartbeat when due and answer everything that has arrived (no waiting)."""
        now = self.clock()
        if now - self._last_heartbeat >= HEARTBEAT_PERIOD:
            self.mav.heartbeat_send(
                self.m.MAV_TYPE_CAMERA,
                self.m.MAV_AUTOPILOT_INVALID,
                0,
                0,
                self.m.MAV_STATE_ACTIVE,
            )
            self._last_heartbeat = now
        for _ in range(MAX_MESSAGES_PER_POLL):
            try:
                message = self.connection.recv_match(
                    type=["COMMAND_LONG", "COMMAND_INT"], blocking=False
                )
            except OSError as error:  # e.g. udpout before the peer listens
                log.debug("mavlink receive: %s", error)
                break
            if message is None:
                break
            self._handle(message)

    def _answer_tap(self, outcome: str | None) -> None:
        """Answer the TRACK_POINT waiting for a frame: ``outcome`` is the frame's
        :attr:`emts.pipeline.FrameResult.tap` (None: no tap taken, e.g. a stand-in pipeline
        or one dropped by an unlock from elsewhere -- accepted, as before)."""
        if self._tap_ack is None:
            return
        m = self.m
        command, system, component = self._tap_ack
        self._tap_ack = None
        result = m.MAV_RESULT_FAILED if outcome == "no_target" else m.MAV_RESULT_ACCEPTED
        self._ack(command, result, system, component)
        if outcome == "no_target":
            self.mav.statustext_send(m.MAV_SEVERITY_WARNING, b"EMTS: no target there")
            log.info("mavlink: track point found no target there; not locked")

    def _ack(self, command: int, result: int, system: int, component: int) -> None:
        self.mav.command_ack_send(command, result, 0, 0, system, component)
        self.commands += 1

    def _handle(self, message) -> None:
        if message.target_system not in (0, self.system) or message.target_component not in (
            0,
            self.component,
        ):
            return
        m = self.m
        params = [message.param1, message.param2, message.param3, message.param4]
        handlers = {
            m.MAV_CMD_CAMERA_TRACK_POINT: self._track_point,
            m.MAV_CMD_CAMERA_TRACK_RECTANGLE: self._track_rectangle,
            m.MAV_CMD_CAMERA_STOP_TRACKING: self._stop_tracking,
            m.MAV_CMD_REQUEST_MESSAGE: self._request_message,
            m.MAV_CMD_REQUEST_CAMERA_INFORMATION: self._request_camera_information,
            m.MAV_CMD_SET_MESSAGE_INTERVAL: self._set_message_interval,
        }
        handler = handlers.get(message.command)
        result = m.MAV_RESULT_UNSUPPORTED if handler is None else handler(params)
        sender = (message.get_srcSystem(), message.get_srcComponent())
        if result is _LATER:  # a tap: answered by the frame that takes it (_answer_tap)
            self._tap_ack = (message.command, *sender)
            return
        after = None
        if isinstance(result, tuple):
            result, after = result
        self._ack(message.command, result, *sender)
        if after is not None:  # a requested message goes out after its ACK
            after()

    def _camera_point(self, nx: float, ny: float) -> tuple[float, float] | None:
        if not (math.isfinite(nx) and math.isfinite(ny) and 0 <= nx <= 1 and 0 <= ny <= 1):
            return None
        width, height = self.size
        return nx * width - 0.5, ny * height - 0.5

    def _track_point(self, params) -> int | object:
        m = self.m
        if self.size is None:  # no frame processed yet: nothing to tap on
            return m.MAV_RESULT_TEMPORARILY_REJECTED
        point = self._camera_point(params[0], params[1])
        if point is None:
            return m.MAV_RESULT_DENIED
        self._answer_tap(None)  # a tap still waiting for a frame is replaced by this one
        self.pipeline.lock(*point, on_last_frame=True)
        log.info("mavlink: track point %.1f, %.1f (input px)", *point)
        return _LATER

    def _track_rectangle(self, params) -> int:
        m = self.m
        if self.size is None:
            return m.MAV_RESULT_TEMPORARILY_REJECTED
        x0, y0, x1, y1 = params
        if self._camera_point(x0, y0) is None or self._camera_point(x1, y1) is None:
            return m.MAV_RESULT_DENIED
        if x1 <= x0 or y1 <= y0:
            return m.MAV_RESULT_DENIED
        width, height = self.size
        box = (x0 * width, y0 * height, (x1 - x0) * width, (y1 - y0) * height)
        centre = (box[0] + box[2] / 2 - 0.5, box[1] + box[3] / 2 - 0.5)
        self._answer_tap(None)  # replaced, likewise
        self.pipeline.lock(*centre, box=box, on_last_frame=True)
        log.info("mavlink: track rectangle %s (input px)", [round(v, 1) for v in box])
        return m.MAV_RESULT_ACCEPTED

    def _stop_tracking(self, params) -> int:
        self._answer_tap(None)  # dropped before a frame took it (what it asked is done)
        self.pipeline.unlock()
        log.info("mavlink: stop tracking")
        return self.m.MAV_RESULT_ACCEPTED

    def _request_camera_information(self, params):
        return self.m.MAV_RESULT_ACCEPTED, self.send_camera_information

    def _request_message(self, params):
        m = self.m
        wanted = int(params[0]) if math.isfinite(params[0]) else -1
        if wanted == m.MAVLINK_MSG_ID_CAMERA_INFORMATION:
            return m.MAV_RESULT_ACCEPTED, self.send_camera_information
        if wanted == m.MAVLINK_MSG_ID_HEARTBEAT:
            self._last_heartbeat = -math.inf
            return m.MAV_RESULT_ACCEPTED, self.poll
        return m.MAV_RESULT_UNSUPPORTED

    def _set_message_interval(self, params) -> int:
        m = self.m
        wanted, interval_us = params[0], params[1]
        if not (math.isfinite(wanted) and math.isfinite(interval_us)):
            return m.MAV_RESULT_DENIED
        if int(wanted) != m.MAVLINK_MSG_ID_CAMERA_TRACKING_IMAGE_STATUS:
            return m.MAV_RESULT_UNSUPPORTED
        if interval_us == 0:
            self.status_interval = None  # the default: every processed frame
        elif interval_us < 0:
            self.status_interval = -1.0  # stop
        else:
            self.status_interval = interval_us / 1e6
        return m.MAV_RESULT_ACCEPTED

    def send_camera_information(self) -> None:
        m = self.m
        width, height = self.size or (0, 0)
        self.mav.camera_information_send(
            int((self.clock() - self.started) * 1000) & 0xFFFFFFFF,
            _text_field("EMTS", 32),
            _text_field("EMTS person tracker", 32),
            0,  # firmware version
            math.nan,  # focal length, sensor size: unknown
            math.nan,
            math.nan,
            width,
            height,
            0,  # lens id
            m.CAMERA_CAP_FLAGS_HAS_TRACKING_POINT | m.CAMERA_CAP_FLAGS_HAS_TRACKING_RECTANGLE,
            0,  # no camera definition file
            b"",
            0,  # gimbal_device_id: unknown
            0,  # camera_device_id 0: a MAVLink camera with its own component id
        )

    def close(self) -> None:
        """Answer what has arrived since the last frame (a tap no frame took:
        ``TEMPORARILY_REJECTED``), stop the gimbal if we were steering it, and close the link."""
        try:
            self.poll()
            if self._tap_ack is not None:
                command, system, component = self._tap_ack
                self._tap_ack = None
                self._ack(command, self.m.MAV_RESULT_TEMPORARILY_REJECTED, system, component)
            if self._following:
                self._send_rates(0.0, 0.0)
                self._following = False
        finally:
            self.connection.close()

    def __enter__(self) -> MavlinkCamera:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
