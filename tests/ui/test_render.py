"""Memory Markdown rendered for the page: whatever an agent wrote, only inert HTML comes out."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from amux.ui.render import document

ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "a", "em",
                "strong", "code", "pre", "blockquote", "hr", "br", "table", "thead",
                "tbody", "tr", "th", "td", "s"}
ALLOWED_ATTRIBUTES = {"href", "rel", "target", "class", "data-doc", "start", "style",
                      "title"}
SAFE_HREF = ("http://", "https://", "mailto:", "?view=doc&", "#")

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<iframe src=https://evil.example></iframe>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click]( javascript:alert(1) )",
    "<javascript:alert(1)>",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](//evil.example/x)",
    "[x][ref]\n\n[ref]: javascript:alert(1)",
    "![pixel](https://evil.example/track.png)",
    "![pixel](data:image/png;base64,iVBORw0KGgo=)",
    '[x](https://e.example "title" onmouseover=alert(1))',
    "<a href=javascript:alert(1)>x</a>",
    "<svg onload=alert(1)>",
    "<style>body{display:none}</style>",
    "`<script>` in code and ```\n<script>alert(1)</script>\n```",
]


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def assert_inert(html: str) -> None:
    parser = _Collect()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS, (tag, html)
        for name, value in attrs:
            assert name in ALLOWED_ATTRIBUTES, (name, html)
            assert not name.startswith("on")
            if name == "href":
                assert value is not None and value.startswith(SAFE_HREF), (value, html)
            if name == "style":  # table alignment only
                assert value in ("text-align:left", "text-align:right",
                                 "text-align:center"), html


def test_hostile_documents_render_inert() -> None:
    for text in HOSTILE:
        rendered = document(text, "notes/x.md", "global")["html"]
        assert_inert(rendered)
        assert "<script" not in rendered and "<img" not in rendered and "<svg" not in rendered


def test_links_that_stay_are_safe_and_documents_open_in_the_page() -> None:
    html = document("[a](other.md) [b](https://example.com/p) [c](mailto:x@example.com) "
                    "[d](../../up.md)", "projects/p/notes.md", "global")["html"]
    assert 'href="?view=doc&amp;scope=global&amp;path=projects%2Fp%2Fother.md"' in html
    assert 'data-doc="projects/p/other.md"' in html
    assert 'href="https://example.com/p" rel="noopener noreferrer nofollow"' in html
    assert 'href="mailto:x@example.com"' in html
    assert 'data-doc="up.md"' in html  # climbing stays inside the scope


def test_front_matter_is_fields_not_markdown() -> None:
    rendered = document("---\nname: Tabs\ndescription: <b>bold</b>\n---\n# Body\n",
                        "a.md", "global")
    assert rendered["front_matter"] == {"name": "Tabs", "description": "<b>bold</b>"}
    assert rendered["html"] == "<h1>Body</h1>\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "<", ">", "[", "]", "(", ")", "!", "`", "*", "_", "#", "\n", " ", "\t", "'", '"', "=",
    ":", "/", "&", ";", "javascript", "JaVa", "script", "data", "onerror", "img", "a",
    "href", "http", "https", "mailto", "vbscript", "&#106;", "%6A", "|", "-", "---",
    "<script>", "](", "<svg", "alert(1)", "\\", "\x00", "ü", "中文",
]), max_size=40).map("".join))
def test_any_text_renders_inert(text: str) -> None:
    assert_inert(document(text, "a/b.md", "global")["html"])
