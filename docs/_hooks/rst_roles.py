"""MkDocs hook: Sphinx cross-reference roles in the package's docstrings, made links.

The docstrings under src/ name other objects the Sphinx way (:class:`~emts.pipeline.Pipeline`,
:mod:`emts.stages.acquisition`, :meth:`reset`), which Markdown renders as the literal role
followed by code. On the rendered API pages the role is dropped; a full ``emts.`` path becomes
an optional autorefs link (resolved by mkdocstrings' autorefs plugin when that object is
documented on the site, plain code otherwise), shortened to its last part after ``~`` as
Sphinx does. Relative names (``.tracker``, ``reset``) stay code.
"""

from __future__ import annotations

import html
import re

_ROLE = re.compile(r":(?:class|mod|func|meth|attr|data|exc|obj|const):<code>(~?)([^<]+)</code>")


def _link(match: re.Match) -> str:
    tilde, target = match.groups()
    target = html.unescape(target).strip()
    shown = target.rsplit(".", 1)[-1] if tilde else target
    if not target.startswith("emts."):
        return f"<code>{html.escape(shown)}</code>"
    return (
        f'<autoref identifier="{html.escape(target)}" optional>'
        f"<code>{html.escape(shown)}</code></autoref>"
    )


def on_page_content(html_text, page, config, files):
    if not page.file.src_uri.startswith("api/"):
        return html_text
    return _ROLE.sub(_link, html_text)
