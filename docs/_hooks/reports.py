"""MkDocs hook: show the generated reports under reports/ as pages of the site.

`emts eval` and the benchmark scripts write their reports with links to every figure they
drew, including contact sheets that are never committed (they hold crops of a labelled
development clip). On a report page, a link or image whose target is not in the repository is
turned into its text, so that `mkdocs build --strict` checks our own pages and not the
reports' missing files.
"""

from __future__ import annotations

import posixpath
import re

_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_uri
    if not src.startswith("reports/") or src == "reports/README.md":
        return markdown
    folder = posixpath.dirname(src)

    def keep_if_present(match: re.Match) -> str:
        bang, text, target = match.groups()
        if "://" in target or target.startswith("#"):
            return match.group(0)
        path = posixpath.normpath(posixpath.join(folder, target.split("#")[0]))
        if files.get_file_from_path(path) is not None:
            return match.group(0)
        return f"{text} (not committed)" if bang else text

    return _LINK.sub(keep_if_present, markdown)
