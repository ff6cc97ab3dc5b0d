"""Small real images for the tests, made by hand (no imaging library is installed): a PNG a
browser draws, and the headers of a JPEG and WebP of given sides."""

import struct
import zlib


def png(width: int = 4, height: int = 4, rgb: tuple[int, int, int] = (40, 90, 160)) -> bytes:
    """A whole PNG of one colour (8-bit RGB), valid for any decoder."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def jpeg_header(width: int, height: int) -> bytes:
    """SOI, an APP0 (JFIF) segment, then a baseline frame header (SOF0) of the given sides."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def webp_header(width: int, height: int) -> bytes:
    """A RIFF/WEBP file whose first chunk is VP8X, which carries the canvas's sides."""
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body
