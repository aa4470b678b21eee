"""Media the tests make themselves: a real PNG (zlib + struct, no imaging library) and a
synthesized WAV, so no binary fixture is checked in."""

from __future__ import annotations

import base64
import io
import math
import struct
import wave
import zlib


def a_png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real PNG: IHDR, one zlib-compressed IDAT of solid colour, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def a_recording(seconds: float = 0.5, hz: int = 440) -> bytes:
    """A synthesized mono 16 kHz WAV: a tone, as a stand-in for speech."""
    rate = 16000
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        frames = (
            int(8000 * math.sin(2 * math.pi * hz * i / rate)) for i in range(int(rate * seconds))
        )
        out.writeframes(b"".join(struct.pack("<h", f) for f in frames))
    return buffer.getvalue()
