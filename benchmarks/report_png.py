"""Check an `eval --report` page and draw one of its figures as a PNG, with no browser.

No headless browser is installed on the machines these reports were made on, so this script
stands in for a screenshot: it parses the page, checks that every inline SVG is well-formed
XML whose elements are the few the report draws (and that nothing in the page loads from
elsewhere), then rasterises one figure with Pillow (lines, polylines, circles, text) into a
PNG for a quick look.

    python benchmarks/report_png.py report.html figure.png [--figure N]
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

SVG_NS = "{http://www.w3.org/2000/svg}"
ALLOWED = {"svg", "rect", "line", "polyline", "circle", "text", "title"}


class _Page(HTMLParser):
    """The tags of the page and anything that would load or run."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.loads: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in ("script", "link", "iframe", "img", "object", "embed"):
            self.loads.append(tag)
        self.loads += [f"{tag}[{name}]" for name, _ in attrs if name in ("src", "href")]
        self.loads += [f"{tag}[{name}]" for name, _ in attrs if name.startswith("on")]


def check(page: str) -> list[ET.Element]:
    """Every SVG of the page parsed; raises SystemExit naming the first problem."""
    parser = _Page()
    parser.feed(page)
    if parser.loads:
        raise SystemExit(f"the page loads or runs something: {', '.join(parser.loads)}")
    figures = []
    for text in re.findall(r"<svg\b.*?</svg>", page, flags=re.S):
        root = ET.fromstring(text)
        for element in root.iter():
            name = element.tag.removeprefix(SVG_NS)
            if name not in ALLOWED:
                raise SystemExit(f"unexpected SVG element {name!r}")
        figures.append(root)
    return figures


def draw(root: ET.Element, out: Path, scale: int = 2) -> None:
    from PIL import Image, ImageDraw

    width, height = int(root.get("width", "560")), int(root.get("height", "300"))
    image = Image.new("RGB", (width * scale, height * scale), "white")
    pen = ImageDraw.Draw(image)

    def xy(x: str | None, y: str | None) -> tuple[float, float]:
        return float(x or 0) * scale, float(y or 0) * scale

    for element in root.iter():
        name = element.tag.removeprefix(SVG_NS)
        stroke = element.get("stroke", "#000")
        if name == "rect":
            x, y = xy(element.get("x"), element.get("y"))
            w, h = xy(element.get("width"), element.get("height"))
            pen.rectangle((x, y, x + w, y + h), outline=stroke)
        elif name == "line":
            pen.line(
                (
                    *xy(element.get("x1"), element.get("y1")),
                    *xy(element.get("x2"), element.get("y2")),
                ),
                fill=stroke,
                width=scale * int(float(element.get("stroke-width", "1"))),
            )
        elif name == "polyline":
            points = [xy(*p.split(",")) for p in (element.get("points") or "").split()]
            if len(points) > 1:
                pen.line(points, fill=stroke, width=2 * scale)
        elif name == "circle":
            x, y = xy(element.get("cx"), element.get("cy"))
            r = float(element.get("r", "3")) * scale
            pen.ellipse((x - r, y - r, x + r, y + r), fill=element.get("fill", "#000"))
        elif name == "text" and element.text:
            x, y = xy(element.get("x"), element.get("y"))
            anchor = {"end": "rs", "middle": "ms"}.get(element.get("text-anchor", ""), "ls")
            pen.text((x, y), element.text, fill="#222", anchor=anchor, font_size=11 * scale)
    image.save(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--figure", type=int, default=0)
    args = parser.parse_args()
    figures = check(args.page.read_text(encoding="utf-8"))
    print(f"{args.page}: {len(figures)} SVG figures, well-formed; nothing loads or runs")
    if not figures:
        return 1
    draw(figures[min(args.figure, len(figures) - 1)], args.png)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
