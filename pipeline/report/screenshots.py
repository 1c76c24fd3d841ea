"""Screenshots of the HTML report by headless Chromium (`apt-get install chromium`), for docs and reviews:
the first screen of reports/index.html and the first screen of one family's page (reports/<family>.html).
A report from before the pages existed (one index.md) has its family section rendered alone instead
(`--section`), since Chromium's --screenshot does not scroll to an #anchor.

    python -m pipeline.report.screenshots reports --out docs/report_figures --page <family>
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.report import html

WINDOW = "1400,1000"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise SystemExit("error: no headless Chromium here; install it (apt-get install chromium)")
    return found


def shoot(page: Path, png: Path, window: str = WINDOW) -> None:
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={window}",
                        page.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def section_page(reports: Path, heading: str) -> Path:
    """The `## heading...` section of reports/index.md rendered alone, as a page beside index.html."""
    text = (reports / "index.md").read_text()
    start = text.index("\n" + heading) + 1
    end = text.find("\n## ", start + 1)
    page = reports / "_section.html"
    page.write_text(html.render(text[start:end if end > 0 else None], heading.lstrip("# ")), encoding="utf-8")
    return page


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.report.screenshots", description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", type=Path, help="the reports folder (index.html and the pages)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the PNGs")
    ap.add_argument("--page", required=True, help="the family page to shoot (reports/<page>.html), e.g. the one named in docs/report.md")
    ap.add_argument("--section", default=None, help="instead of a page: this `## heading` of index.md, alone")
    ap.add_argument("--prefix", default="report_html", help="file name prefix")
    args = ap.parse_args(argv)
    shoot(args.reports / "index.html", args.out / f"{args.prefix}_first_screen.png")
    page = section_page(args.reports, args.section) if args.section else args.reports / f"{args.page}.html"
    shoot(page, args.out / f"{args.prefix}_{args.page}.png")
    if args.section:
        page.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
