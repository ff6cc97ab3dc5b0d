"""`campaigns.images.checked_image`: an uploaded picture is what Pillow reads in its own bytes,
within the limits, decoded whole and written anew without its metadata; the name and type a
browser sends are never believed."""

import io

import PIL.Image
import pytest
from PIL import ImageCms, PngImagePlugin

from campaigns.images import MAX_BYTES, MAX_SIDE, checked_image
from core.errors import InvalidInput
from tests.images import picture, png, png_declaring

NOT_AN_IMAGE = r"That file is not a PNG, JPEG or WebP image\."


def reopened(data: bytes) -> PIL.Image.Image:
    image = PIL.Image.open(io.BytesIO(data))
    image.load()
    return image


@pytest.mark.parametrize(
    ("format", "content_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp")],
)
def test_png_jpeg_and_webp_are_taken_with_their_sides_and_written_anew(format, content_type):
    checked = checked_image(picture(format, 7, 3))
    assert (checked.content_type, checked.width, checked.height) == (content_type, 7, 3)
    stored = reopened(checked.data)
    assert (stored.format, stored.size) == (format, (7, 3))
    red, green, blue = stored.convert("RGB").getpixel((3, 1))
    assert abs(red - 40) + abs(green - 90) + abs(blue - 160) < 12  # the picture is the same


@pytest.mark.parametrize(
    "data",
    [
        b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        b"<html><script>alert(1)</script></html>",
        picture("GIF"),
        picture("BMP"),
        b"",
        b"\x89PNG\r\n\x1a\n",  # a signature and nothing else
        png_declaring(0, 10),  # a side of no pixels
    ],
)
def test_anything_else_is_refused_in_words(data: bytes):
    with pytest.raises(InvalidInput, match=NOT_AN_IMAGE):
        checked_image(data)


def test_a_file_over_the_size_limit_is_refused_with_its_size():
    with pytest.raises(InvalidInput, match=r"is 2\.0 MB; the limit is 2 MB"):
        checked_image(png() + b"\x00" * (MAX_BYTES + 1 - len(png())))
    padded = checked_image(png() + b"\x00" * (MAX_BYTES - len(png())))
    assert padded.content_type == "image/png" and len(padded.data) < 1024  # the padding is gone


@pytest.mark.parametrize("sides", [(MAX_SIDE + 1, 10), (10, MAX_SIDE + 1)])
def test_sides_beyond_the_limit_are_refused(sides: tuple[int, int]):
    with pytest.raises(InvalidInput, match=rf"is {sides[0]}×{sides[1]} pixels; each side must"):
        checked_image(picture("PNG", *sides))


@pytest.mark.parametrize("sides", [(5000, 5000), (100_000, 100_000)])
def test_a_decompression_bomb_is_refused_before_it_is_decoded(sides: tuple[int, int]):
    """A few bytes that declare 25 million pixels (Pillow's warning) or ten billion (its
    error): refused when opened, in words."""
    with pytest.raises(InvalidInput, match=rf"declares more than {MAX_SIDE}×{MAX_SIDE} pixels"):
        checked_image(png_declaring(*sides))


@pytest.mark.parametrize("format", ["PNG", "JPEG", "WEBP"])
def test_a_file_cut_short_is_refused(format: str):
    whole = picture(format, 512, 512)
    with pytest.raises(InvalidInput, match="damaged or cut short"):
        checked_image(whole[: len(whole) // 2])  # its header whole, half of its pixels


def test_a_damaged_file_is_refused():
    whole = bytearray(png(64, 64))
    whole[45] ^= 0xFF  # a byte of the compressed pixels
    with pytest.raises(InvalidInput, match="damaged or cut short"):
        checked_image(bytes(whole))


def test_the_metadata_is_left_behind_and_the_colour_profile_kept():
    exif = PIL.Image.Exif()
    exif[0x010E] = "secret: the GM's home address"  # ImageDescription
    text = PngImagePlugin.PngInfo()
    text.add_text("Comment", "secret: the GM's home address")
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    uploads = [
        picture("PNG", exif=exif, pnginfo=text, icc_profile=srgb),
        picture("JPEG", exif=exif, comment=b"secret", icc_profile=srgb),
        picture("WEBP", exif=exif, xmp=b"<x>secret</x>", icc_profile=srgb),
    ]
    for upload in uploads:
        assert b"secret" in upload
        stored = checked_image(upload).data
        assert b"secret" not in stored
        image = reopened(stored)
        assert not image.getexif() and "exif" not in image.info and "Comment" not in image.info
        assert "comment" not in image.info and "xmp" not in image.info
        assert image.info["icc_profile"] == srgb


def test_a_photos_exif_turn_is_applied_to_its_pixels():
    exif = PIL.Image.Exif()
    exif[0x0112] = 6  # Orientation: shown turned 90° clockwise
    checked = checked_image(picture("JPEG", 8, 4, exif=exif))
    assert (checked.width, checked.height) == (4, 8)
    assert reopened(checked.data).size == (4, 8)
