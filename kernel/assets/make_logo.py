#!/usr/bin/env python3
"""Draw the devarray kernel logo: a 3x3 grid of array cells, one of them in
the accent colour (an element living on a device). Writes logo-32x32.png,
logo-64x64.png and logo-svg.svg next to this script using only the standard
library. Run it again after changing the design; the kernel embeds the files."""
import struct
import zlib
from pathlib import Path

BACKGROUND = (24, 32, 48)
CELL = (120, 170, 255)
ACCENT = (118, 185, 0)
HERE = Path(__file__).resolve().parent


def pixel(x: float, y: float) -> tuple:
    """Colour at (x, y) in a unit square."""
    margin, gap = 0.14, 0.06
    cell = (1 - 2 * margin - 2 * gap) / 3
    for row in range(3):
        for col in range(3):
            x0 = margin + col * (cell + gap)
            y0 = margin + row * (cell + gap)
            if x0 <= x < x0 + cell and y0 <= y < y0 + cell:
                return ACCENT if (row, col) == (0, 2) else CELL
    return BACKGROUND


def png(size: int) -> bytes:
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel((x + 0.5) / size, (y + 0.5) / size)) for x in range(size))
        for y in range(size)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def svg() -> str:
    margin, gap = 14, 6
    cell = (100 - 2 * margin - 2 * gap) / 3
    rects = []
    for row in range(3):
        for col in range(3):
            colour = ACCENT if (row, col) == (0, 2) else CELL
            rects.append(
                f'<rect x="{margin + col * (cell + gap):.2f}" y="{margin + row * (cell + gap):.2f}" '
                f'width="{cell:.2f}" height="{cell:.2f}" rx="3" fill="rgb{colour}"/>'
            )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100" width="64" height="64">\n'
        f'<rect width="100" height="100" rx="14" fill="rgb{BACKGROUND}"/>\n' + "\n".join(rects) + "\n</svg>\n"
    )


if __name__ == "__main__":
    for size in (32, 64):
        (HERE / f"logo-{size}x{size}.png").write_bytes(png(size))
    (HERE / "logo-svg.svg").write_text(svg())
