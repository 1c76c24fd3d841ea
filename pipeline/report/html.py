"""The report as HTML pages a person opens in a browser: reports/index.html (and each family's page,
reports/<family>.html), rendered from the same Markdown as the .md files (which stay for diffs), with a
table of contents of the sections, readable tables and the figures inline; links between the Markdown
pages point at their HTML twins. Deterministic: the same Markdown gives the same bytes."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; margin: 0; }
nav { position: fixed; top: 0; left: 0; bottom: 0; width: 230px; overflow-y: auto; background: #f4f5f7;
      border-right: 1px solid #dde; padding: 16px 12px; box-sizing: border-box; font-size: 14px; }
nav a { display: block; color: #1d4f91; text-decoration: none; padding: 3px 4px; border-radius: 4px; }
nav a:hover { background: #e3e8f0; }
nav .sub { padding-left: 16px; font-size: 13px; color: #456; }
main { margin-left: 250px; max-width: 1100px; min-width: 0; padding: 8px 24px 64px; }
h1 { font-size: 26px; margin-top: 16px; }
h2 { font-size: 21px; border-bottom: 2px solid #1d4f91; padding-bottom: 4px; margin-top: 40px; }
h3 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d5d9e0; padding: 4px 9px; text-align: left; vertical-align: top; }
th { background: #e9edf3; position: sticky; top: 0; }
tr:nth-child(even) td { background: #f8f9fb; }
td { overflow-wrap: break-word; }
.table-scroll { overflow-x: auto; max-width: 100%; margin: 12px 0; }
.table-scroll table { margin: 0; }
img { max-width: 100%; height: auto; border: 1px solid #e3e3e3; margin: 8px 0; }
code { background: #f0f1f3; padding: 1px 4px; border-radius: 3px; font-size: 90%; }
p, li { max-width: 900px; }
"""


def slug(text: str, seen: dict[str, int]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base}-{seen[base]}"


PAGE_LINK = re.compile(r"^([A-Za-z0-9_.-]+)\.md(#.*)?$")  # a link to another page of the report


def render(markdown: str, title: str = "Benchmark report") -> str:
    """The whole page: a fixed table of contents (h2, with their h3 under them) and the rendered Markdown."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(markdown)
    seen: dict[str, int] = {}
    toc = []
    for token in tokens:
        for child in token.children or ():
            href = child.attrGet("href") if child.type == "link_open" else None
            if href and PAGE_LINK.match(href):
                child.attrSet("href", PAGE_LINK.sub(lambda m: f"{m[1]}.html{m[2] or ''}", href))
        for a, b in zip(token.children or (), (token.children or ())[1:]):  # a link text naming the .md page too
            href = a.attrGet("href") if a.type == "link_open" else None
            if href and b.type == "text" and PAGE_LINK.match(b.content) and href.startswith(b.content[:-3] + ".html"):
                b.content = PAGE_LINK.sub(lambda m: f"{m[1]}.html{m[2] or ''}", b.content)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag in ("h2", "h3"):
            text = tokens[i + 1].content
            anchor = slug(text, seen)
            token.attrSet("id", anchor)
            toc.append((token.tag, text, anchor))
    # a wide table scrolls sideways in its own box instead of running past the page's edge
    body = md.renderer.render(tokens, md.options, {}).replace("<table>", '<div class="table-scroll"><table>') \
        .replace("</table>", "</table></div>")
    sub = ' class="sub"'
    nav = "\n".join(f'<a href="#{a}"{sub if tag == "h3" else ""}>{html.escape(t)}</a>' for tag, t, a in toc)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{html.escape(title)}</title>\n"
            f"<style>{CSS}</style>\n</head>\n<body>\n<nav>\n<strong>Contents</strong>\n{nav}\n</nav>\n"
            f"<main>\n{body}</main>\n</body>\n</html>\n")
