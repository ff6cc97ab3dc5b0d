"""What an uploaded picture is, as Pillow reads it from its own bytes: a PNG, JPEG or WebP with
sides of 1 to MAX_SIDE pixels, decoded to its last pixel and written anew, or a refusal in
people's words. The name and the content type a browser sends are not believed; the content is
(docs/architecture.md#the-battle-map). No SVG: it is a document that may carry script. What is
kept and served is Pillow's encoding of the pixels, never the uploaded bytes, so nothing else
the upload carried (EXIF, text chunks, comments, trailing data) goes further. The map background
is checked here, and so should be any picture people upload.
"""

import io
import warnings
from dataclasses import dataclass

import PIL.Image
from PIL import ImageOps, UnidentifiedImageError

from core.errors import InvalidInput

MAX_BYTES = 2 * 1024 * 1024
MAX_SIDE = 4096
TYPES = "PNG, JPEG or WebP"

# Each format taken, by Pillow's name, and its content type. Pillow names a JPEG holding more
# than one picture (some cameras write them) MPO; it is written again as a JPEG of its first.
CONTENT_TYPES = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "MPO": "image/jpeg",
    "WEBP": "image/webp",
}
# How each is written again: a JPEG with its own quantisation, so re-encoding loses next to
# nothing; a WebP lossy at a quality that keeps a painted map as it was; no comment carried over.
ENCODINGS = {
    "image/png": {"format": "PNG"},
    "image/jpeg": {"format": "JPEG", "quality": "keep", "subsampling": "keep", "comment": b""},
    "image/webp": {"format": "WEBP", "quality": 90},
}

# Pillow's decompression-bomb guard: a file of a few bytes may declare a canvas of billions of
# pixels. More pixels than a MAX_SIDE square is refused when the file is opened, before any is
# decoded (Pillow raises above twice this and warns above it; `_opened` turns the warning into a
# refusal too).
PIL.Image.MAX_IMAGE_PIXELS = MAX_SIDE * MAX_SIDE


@dataclass(frozen=True)
class Image:
    """A picture that passed the checks: what to store and serve (`data`, Pillow's encoding)
    and the type to serve it as."""

    content_type: str
    width: int
    height: int
    data: bytes


def checked_image(data: bytes) -> Image:
    """The picture `data` holds, checked (at most MAX_BYTES; one of TYPES by its content; each
    side 1 to MAX_SIDE; whole) and written anew with only its pixels, its transparency and its
    colour profile. A photo's EXIF turn is applied to the pixels first, so it stands as the
    browser showed it. InvalidInput says which rule the upload breaks."""
    if len(data) > MAX_BYTES:
        raise InvalidInput(
            f"The image is {len(data) / 1024 / 1024:.1f} MB; the limit is "
            f"{MAX_BYTES // 1024 // 1024} MB."
        )
    picture = _opened(data)
    content_type = CONTENT_TYPES[picture.format]
    ImageOps.exif_transpose(picture, in_place=True)
    written = io.BytesIO()
    icc_profile = picture.info.get("icc_profile")
    picture.save(written, icc_profile=icc_profile, **ENCODINGS[content_type])
    return Image(content_type, picture.width, picture.height, written.getvalue())


def _opened(data: bytes) -> PIL.Image.Image:
    """`data` opened as one of TYPES, its sides checked from its header, then decoded whole: a
    file cut short or damaged fails here, not in a browser."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PIL.Image.DecompressionBombWarning)
            picture = PIL.Image.open(io.BytesIO(data), formats=["PNG", "JPEG", "WEBP"])
        width, height = picture.size
        if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
            raise InvalidInput(
                f"The image is {width}×{height} pixels; each side must be 1 to {MAX_SIDE}."
            )
        picture.load()
    except UnidentifiedImageError:
        raise InvalidInput(f"That file is not a {TYPES} image.") from None
    except (PIL.Image.DecompressionBombError, PIL.Image.DecompressionBombWarning):
        raise InvalidInput(
            f"The image declares more than {MAX_SIDE}×{MAX_SIDE} pixels; "
            f"each side must be 1 to {MAX_SIDE}."
        ) from None
    except (OSError, SyntaxError, ValueError):
        raise InvalidInput("The image is damaged or cut short; it cannot be read.") from None
    return picture
