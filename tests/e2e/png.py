"""Just enough PNG decoding (zlib + the five row filters) to tell a real screenshot from a
blank one, without Pillow."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> channels (8-bit, no palette)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_rows(png: bytes, max_rows: int) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, the first ``max_rows`` rows unfiltered)."""
    if not png.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    pos, idat = len(SIGNATURE), bytearray()
    width = height = bpp = 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data)
            if depth != 8 or colour not in _CHANNELS or interlace:
                raise ValueError(f"unsupported PNG: depth {depth}, colour {colour}")
            bpp = _CHANNELS[colour]
        elif kind == b"IDAT":
            idat += data
        elif kind == b"IEND":
            break
    stride = width * bpp
    raw = zlib.decompressobj().decompress(bytes(idat), (stride + 1) * max_rows)
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(min(height, max_rows, len(raw) // (stride + 1))):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up = prev[i]
            if kind == 1:
                row[i] = (row[i] + left) & 0xFF
            elif kind == 2:
                row[i] = (row[i] + up) & 0xFF
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                up_left = prev[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + _paeth(left, up, up_left)) & 0xFF
        rows.append(bytes(row))
        prev = row
    return width, height, bpp, rows


def distinct_colours(png: bytes, max_rows: int = 240) -> int:
    """How many different pixel values the top ``max_rows`` rows hold."""
    _, _, bpp, rows = decode_rows(png, max_rows)
    return len({row[i : i + bpp] for row in rows for i in range(0, len(row), bpp)})
