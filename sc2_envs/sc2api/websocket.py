"""A minimal server side of the WebSocket protocol (RFC 6455), enough for the StarCraft II API.

The game serves ``ws://<host>:<port>/sc2api``; clients (pysc2's ``RemoteController`` with
``websocket-client``, python-sc2, ...) send one serialized ``Request`` per message and expect one
``Response`` per message. pysc2 sends its binary protobuf payloads in **text** frames
(``WebSocket.send(bytes)`` defaults to opcode 1), so the payload is never checked as UTF-8 here;
replies go out as binary frames (opcode 2), which clients decode as bytes.

Supported: the HTTP/1.1 upgrade handshake (``Sec-WebSocket-Key`` -> ``Sec-WebSocket-Accept``), masked
client frames, fragmented messages (continuation frames), ping -> pong, close -> close. Anything
else (a bad handshake, an unmasked client frame, an unknown opcode) closes the connection.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import struct

__all__ = ["WebSocketClosed", "WebSocketConnection", "accept_websocket"]

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
_OP_CONT, _OP_TEXT, _OP_BINARY, _OP_CLOSE, _OP_PING, _OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Largest accepted message (a map's bytes travel inside ``RequestCreateGame``)."""


class WebSocketClosed(ConnectionError):
    """The peer closed the connection (cleanly or not)."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise WebSocketClosed("connection closed by the client")
        buf += chunk
    return bytes(buf)


class WebSocketConnection:
    """One accepted WebSocket connection.

    Args:
        sock: the connected socket, after a successful :func:`accept_websocket` handshake.
        path: the request path of the handshake (``/sc2api`` for the game).
    """

    def __init__(self, sock: socket.socket, path: str):
        self.sock = sock
        self.path = path

    def recv_message(self) -> bytes:
        """Block until one whole message arrives; answer pings on the way.

        Returns:
            The message payload (text or binary frames alike, as bytes).

        Raises:
            WebSocketClosed: the client closed or dropped the connection, or broke the protocol.
        """
        parts: list[bytes] = []
        size = 0
        while True:
            b0, b1 = _recv_exact(self.sock, 2)
            fin, opcode = b0 & 0x80, b0 & 0x0F
            if not b1 & 0x80:
                self._fail(1002, "client frames must be masked")
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", _recv_exact(self.sock, 2))[0]
            elif n == 127:
                n = struct.unpack("!Q", _recv_exact(self.sock, 8))[0]
            if size + n > MAX_MESSAGE_BYTES:
                self._fail(1009, f"message larger than {MAX_MESSAGE_BYTES} bytes")
            mask = _recv_exact(self.sock, 4)
            data = _unmask(_recv_exact(self.sock, n), mask)
            if opcode == _OP_CLOSE:
                try:
                    self._send_frame(_OP_CLOSE, data[:2])
                finally:
                    raise WebSocketClosed("client sent close")
            if opcode == _OP_PING:
                self._send_frame(_OP_PONG, data)
                continue
            if opcode == _OP_PONG:
                continue
            if opcode not in (_OP_CONT, _OP_TEXT, _OP_BINARY):
                self._fail(1002, f"unknown opcode {opcode}")
            parts.append(data)
            size += n
            if fin:
                return b"".join(parts)

    def send_message(self, payload: bytes) -> None:
        """Send one binary message."""
        self._send_frame(_OP_BINARY, payload)

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
        try:
            self.sock.sendall(head + payload)
        except OSError as e:
            raise WebSocketClosed(f"send failed: {e}") from e

    def _fail(self, code: int, reason: str) -> None:
        try:
            self._send_frame(_OP_CLOSE, struct.pack("!H", code) + reason.encode()[:120])
        finally:
            raise WebSocketClosed(reason)

    def close(self) -> None:
        """Close the socket (no close handshake)."""
        try:
            self.sock.close()
        except OSError:
            pass


def _unmask(data: bytes, mask: bytes) -> bytes:
    if not data:
        return data
    n = len(data)
    m = int.from_bytes((mask * (n // 4 + 1))[:n], "little")
    return (int.from_bytes(data, "little") ^ m).to_bytes(n, "little")


def accept_websocket(sock: socket.socket, timeout: float = 10.0) -> WebSocketConnection | None:
    """Do the server side of the opening handshake on a freshly accepted socket.

    Returns:
        The connection, or ``None`` after answering a non-WebSocket request (404 for another path,
        400 for a bad upgrade); the socket is then closed. pysc2 retries on 404 while the game starts.
    """
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk or len(data) > 65536:
                sock.close()
                return None
            data += chunk
    except OSError:
        sock.close()
        return None
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    parts = head[0].split()
    headers = {}
    for line in head[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    path = parts[1] if len(parts) >= 2 else ""
    key = headers.get("sec-websocket-key")
    if len(parts) < 3 or parts[0] != "GET" or "websocket" not in headers.get("upgrade", "").lower() or not key:
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        sock.close()
        return None
    if path.split("?")[0] != "/sc2api":
        sock.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        sock.close()
        return None
    accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
    sock.sendall(
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
        ).encode()
    )
    sock.settimeout(None)
    return WebSocketConnection(sock, path)
