"""Memory Markdown as inert HTML: agents wrote it, so nothing in it may run or load.

markdown-it (CommonMark) with raw HTML off, so `<script>` and `<img onerror>` are text;
images off, so `![x](http://…)` is a link, never a request; links only to http(s) and
mailto (with `rel=noreferrer`), or to another document of the same scope, which opens
in the page. The page's Content-Security-Policy (`server.py`) is the second wall.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from collections.abc import Sequence
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from amux.memory.frontmatter import front_matter

EXTERNAL = ("http://", "https://", "mailto:")
"""The schemes a link may leave the page for."""


@cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("js-default", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = _allowed  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


def _allowed(url: str) -> bool:
    """A link target the page may follow: http(s), mailto, or a path with no scheme."""
    lowered = url.strip().lower()
    if lowered.startswith(EXTERNAL):
        return True
    scheme = urllib.parse.urlsplit(lowered).scheme
    return not scheme and not lowered.startswith("//")


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], index: int,
               options: OptionsDict, env: EnvType) -> str:
    token = tokens[index]
    href = str(token.attrGet("href") or "")
    if href.lower().startswith(EXTERNAL):
        token.attrSet("rel", "noopener noreferrer nofollow")
        token.attrSet("target", "_blank")
        token.attrSet("class", "external")
    elif href.startswith("#"):
        pass  # a heading of this document: the page ignores it, harmlessly
    else:
        target = _document_link(href, env.get("path", ""))
        if target is None:
            token.attrs.pop("href", None)
        else:
            token.attrSet("href", "?" + urllib.parse.urlencode(
                {"view": "doc", "scope": env.get("scope", ""), "path": target}))
            token.attrSet("data-doc", target)
    return renderer.renderToken(tokens, index, options, env)


def _document_link(href: str, base: str) -> str | None:
    """The scope path a relative link names from the document at `base`, or None when it
    climbs out of the scope."""
    target = urllib.parse.unquote(urllib.parse.urlsplit(href).path)
    if not target:
        return None
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(
        posixpath.dirname(base), target)
    normal = posixpath.normpath(joined)
    if normal in (".", "") or normal.startswith("../") or normal == "..":
        return None
    return normal


def document(text: str, path: str, scope: str) -> dict[str, Any]:
    """A document for the page: its front matter as fields (escaped by the page), its
    body as inert HTML."""
    fields, body_line = front_matter(text)
    body = "\n".join(text.split("\n")[body_line:]) if fields is not None else text
    rendered = _markdown().render(body, {"path": path, "scope": scope})
    return {"front_matter": fields, "html": rendered}

