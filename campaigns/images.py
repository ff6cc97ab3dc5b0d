"""What an uploaded map background is, read from its own bytes: PNG, JPEG or WebP, its width
and height, or a refusal in people's words. The name and the content type a browser sends are
not believed; the file's header is (docs/architecture.md#the-battle-map). No SVG: it is a
document that may carry script. Served back only with the type proven here and `nosniff`.
"""

import struct
from dataclasses import dataclass

from core.errors import InvalidInput

MAX_BYTES = 2 * 1024 * 1024
MAX_SIDE = 4096
TYPES = "PNG, JPEG or WebP"

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
JPEG_FRAMES = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


@dataclass(frozen=True)
class Image:
    content_type: str
    width: int
    height: int


def sniff(data: bytes) -> Image:
    """The image `data` is, checked: at most MAX_BYTES, one of TYPES by its header, each side
    between 1 and MAX_SIDE pixels. InvalidInput (400) says which rule it breaks."""
    if len(data) > MAX_BYTES:
        raise InvalidInput(
            f"The image is {len(data) / 1024 / 1024:.1f} MB; the limit is "
            f"{MAX_BYTES // 1024 // 1024} MB."
        )
    image = _png(data) or _jpeg(data) or _webp(data)
    if image is None:
        raise InvalidInput(f"That file is not an image this map takes ({TYPES}).")
    if not (1 <= image.width <= MAX_SIDE and 1 <= image.height <= MAX_SIDE):
        raise InvalidInput(
            f"The image is {image.width}×{image.height} pixels; each side must be 1 to {MAX_SIDE}."
        )
    return image


def _png(data: bytes) -> Image | None:
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    width, height = struct.unpack(">II", data[16:24])
    return Image("image/png", width, height)


def _jpeg(data: bytes) -> Image | None:
    if not data.startswith(b"\xff\xd8"):
        return None
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if length < 2:
            return None
        if marker in JPEG_FRAMES:
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return Image("image/jpeg", width, height)
        if marker == 0xDA:  # scan data before any frame header
            return None
        at += 2 + length
    return None


def _webp(data: bytes) -> Image | None:
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
    elif chunk == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            return None
        width, height = (v & 0x3FFF for v in struct.unpack("<HH", data[26:30]))
    elif chunk == b"VP8L":
        if data[20] != 0x2F:
            return None
        bits = int.from_bytes(data[21:25], "little")
        width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    else:
        return None
    return Image("image/webp", width, height)
