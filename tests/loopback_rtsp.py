"""A minimal RTSP server for tests, on loopback: one stream of MPEG-TS over RTP (payload type 33,
RFC 2250), the RTP packets interleaved on the RTSP TCP connection (RFC 2326 section 10.12). A
SETUP asking for UDP is answered ``461 Unsupported Transport``, as TCP-only servers do, so that a
client given a plain ``rtsp://`` URL falls back to TCP (FFmpeg does), and ``?tcp`` asks for TCP
at once. Enough of the protocol for OpenCV's FFmpeg client: OPTIONS, DESCRIBE (SDP), SETUP,
PLAY, and any other request (GET_PARAMETER keep-alives, TEARDOWN) answered 200."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

import cv2
import numpy as np

TS_PACKETS_PER_RTP = 7  # 7 x 188 = 1316 bytes a packet, as streaming tools send MPEG-TS
_SDP = (
    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=emts test\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\n"
    "m=video 0 RTP/AVP 33\r\na=rtpmap:33 MP2T/90000\r\na=control:track0\r\n"
)


def mpeg_ts_clip(path, frames: int = 40, size=(128, 96), fps: float = 20.0) -> bytes | None:
    """A short MPEG-2 clip in MPEG-TS (a bar moving across a gray ground), written by OpenCV's
    FFmpeg; None where this OpenCV cannot write one."""
    writer = cv2.VideoWriter(str(path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"mpg2"), fps, size)
    if not writer.isOpened():
        return None
    for i in range(frames):
        image = np.full((size[1], size[0], 3), 40, np.uint8)
        image[30:70, (i * 3) % 100 : (i * 3) % 100 + 12] = 220
        writer.write(image)
    writer.release()
    return path.read_bytes()


class RtspServer:
    """Serves ``ts`` (MPEG-TS bytes, looped) at ``rtsp://127.0.0.1:PORT/live`` until
    :meth:`stop` or ``lifetime`` seconds; ``port`` 0: a free one."""

    def __init__(self, ts: bytes, port: int = 0, lifetime: float = 20.0) -> None:
        self.ts = ts
        self.stopped = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self._sock.listen(4)
        self.port = self._sock.getsockname()[1]
        self.url = f"rtsp://127.0.0.1:{self.port}/live"
        self._clients: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        if self.stopped.is_set():
            return
        self.stopped.set()
        self._timer.cancel()
        for conn in [self._sock, *self._clients]:  # (shutdown wakes a thread in accept/recv)
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._clients.append(conn)
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        """Answer one client's requests; PLAY starts the RTP packets."""
        buffer, send_lock, playing = b"", threading.Lock(), threading.Event()

        def reply(cseq: str, status: str = "200 OK", headers=(), body: bytes = b"") -> None:
            head = f"RTSP/1.0 {status}\r\nCSeq: {cseq}\r\n" + "".join(h + "\r\n" for h in headers)
            if body:
                head += f"Content-Length: {len(body)}\r\n"
            with send_lock:
                conn.sendall(head.encode() + b"\r\n" + body)

        try:
            while not self.stopped.is_set():
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                while buffer:
                    if buffer[:1] == b"$":  # the client's own interleaved packets (RTCP)
                        if len(buffer) < 4:
                            break
                        length = struct.unpack(">H", buffer[2:4])[0]
                        if len(buffer) < 4 + length:
                            break
                        buffer = buffer[4 + length :]
                        continue
                    end = buffer.find(b"\r\n\r\n")
                    if end < 0:
                        break
                    head, buffer = buffer[:end].decode(errors="replace"), buffer[end + 4 :]
                    lines = head.split("\r\n")
                    method = lines[0].split(" ")[0]
                    fields = {
                        k.strip().lower(): v.strip()
                        for k, _, v in (line.partition(":") for line in lines[1:])
                    }
                    cseq = fields.get("cseq", "0")
                    if method == "OPTIONS":
                        reply(cseq, headers=["Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN"])
                    elif method == "DESCRIBE":
                        headers = [f"Content-Base: {self.url}/", "Content-Type: application/sdp"]
                        reply(cseq, headers=headers, body=_SDP.encode())
                    elif method == "SETUP" and "TCP" not in fields.get("transport", ""):
                        reply(cseq, "461 Unsupported Transport")
                    elif method == "SETUP":
                        transport = "Transport: RTP/AVP/TCP;unicast;interleaved=0-1"
                        reply(cseq, headers=["Session: 12345678", transport])
                    elif method == "PLAY":
                        reply(cseq, headers=["Session: 12345678", "Range: npt=0.000-"])
                        if not playing.is_set():
                            playing.set()
                            play = threading.Thread(
                                target=self._play, args=(conn, send_lock), daemon=True
                            )
                            play.start()
                    else:
                        reply(cseq, headers=["Session: 12345678"])
        except OSError:
            return

    def _play(self, conn: socket.socket, send_lock: threading.Lock) -> None:
        """RTP packets of the looped MPEG-TS on interleaved channel 0, faster than real time
        (the client decodes what comes; a slow consumer drops frames)."""
        chunk, sequence, start = TS_PACKETS_PER_RTP * 188, 0, time.monotonic()
        try:
            while not self.stopped.is_set():
                for i in range(0, len(self.ts), chunk):
                    if self.stopped.is_set():
                        return
                    stamp = int((time.monotonic() - start) * 90000) & 0xFFFFFFFF
                    header = struct.pack(">BBHII", 0x80, 33, sequence & 0xFFFF, stamp, 0x454D5453)
                    packet = header + self.ts[i : i + chunk]
                    with send_lock:
                        conn.sendall(b"$\x00" + struct.pack(">H", len(packet)) + packet)
                    sequence += 1
                    time.sleep(0.002)
        except OSError:
            return
