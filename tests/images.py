"""Small real images for the tests: pictures Pillow writes (a PNG a browser draws, a JPEG, a
WebP), and by hand what Pillow would not write: a PNG whose header declares sides its few bytes
of pixels do not fill."""

import io
import struct
import zlib
from typing import Any

import PIL.Image


def picture(
    format: str = "PNG",
    width: int = 4,
    height: int = 4,
    rgb: tuple[int, int, int] = (40, 90, 160),
    **save: Any,
) -> bytes:
    """A whole image of one colour in `format` (Pillow's name); `save`: Pillow's options for
    writing it, such as metadata to carry (`exif`, `pnginfo`, `comment`)."""
    written = io.BytesIO()
    PIL.Image.new("RGB", (width, height), rgb).save(written, format, **save)
    return written.getvalue()


def png(width: int = 4, height: int = 4, rgb: tuple[int, int, int] = (40, 90, 160)) -> bytes:
    return picture("PNG", width, height, rgb)


def png_declaring(width: int, height: int) -> bytes:
    """A PNG of a few bytes whose header says width × height: a decompression bomb when large."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )
