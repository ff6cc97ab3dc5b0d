"""`campaigns.images.sniff`: a map background is what its own header says, within the limits;
the name and type a browser sends are never believed."""

import pytest

from campaigns.images import MAX_BYTES, MAX_SIDE, Image, sniff
from core.errors import InvalidInput
from tests.images import jpeg_header, png, webp_header


def test_png_jpeg_and_webp_are_read_with_their_sides():
    assert sniff(png(7, 3)) == Image("image/png", 7, 3)
    assert sniff(jpeg_header(640, 480)) == Image("image/jpeg", 640, 480)
    assert sniff(webp_header(800, 600)) == Image("image/webp", 800, 600)


@pytest.mark.parametrize(
    "data",
    [
        b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        b"<html><script>alert(1)</script></html>",
        b"GIF89a\x01\x00\x01\x00",
        b"",
        b"\x89PNG\r\n\x1a\n",  # a signature and nothing else
        b"\xff\xd8\xff\xda\x00\x08",  # scan data before any frame
    ],
)
def test_anything_else_is_refused_in_words(data: bytes):
    with pytest.raises(InvalidInput, match=r"not an image this map takes \(PNG, JPEG or WebP\)"):
        sniff(data)


def test_a_file_over_the_size_limit_is_refused_with_its_size():
    with pytest.raises(InvalidInput, match=r"is 2\.0 MB; the limit is 2 MB"):
        sniff(png() + b"\x00" * (MAX_BYTES + 1 - len(png())))
    assert sniff(png() + b"\x00" * (MAX_BYTES - len(png()))).content_type == "image/png"


@pytest.mark.parametrize("sides", [(MAX_SIDE + 1, 10), (10, MAX_SIDE + 1), (0, 10)])
def test_sides_beyond_the_limit_are_refused(sides: tuple[int, int]):
    with pytest.raises(InvalidInput, match=rf"each side must be 1 to {MAX_SIDE}"):
        sniff(jpeg_header(*sides))
