"""bench/RESULTS.md's sections: a benchmark run with `--write-results` replaces its own `## ` section and leaves
every other one as it was. Imported by the scripts in bench/; it runs nothing itself.

    write_section(RESULTS, "## Retrieval: bm25s vs Lucene", text)                    # replace, else append
    write_section(RESULTS, PAIRS_SECTION, text, after="## Training: ...")           # a new one goes after that
"""

from __future__ import annotations

import re
from pathlib import Path

from plumbing import atomic

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def heading_at(text: str, heading: str) -> int:
    """Offset of the line that is exactly `heading` in `text`, or -1."""
    found = re.search(rf"^{re.escape(heading)}$", text, re.MULTILINE)
    return found.start() if found else -1


def write_section(results: Path, section: str, text: str, after: str | None = None) -> None:
    """Replace `section` (its heading line to the next `## `) with `text`; a new one goes right after section
    `after` (else at the end). One blank line separates sections."""
    old = results.read_text(encoding="utf-8")
    start = heading_at(old, section)
    anchor = start if start >= 0 else heading_at(old, after) if after else -1
    if anchor < 0:
        atomic.write_text(results, old.rstrip() + "\n\n" + text.rstrip() + "\n")
        return
    cut = old.find("\n## ", anchor + 1)
    end = len(old) if cut < 0 else cut + 1
    head = old[:start] if start >= 0 else old[:end]
    tail = old[end:].lstrip("\n")
    body = (head.rstrip() + "\n\n" if head.strip() else "") + text.rstrip() + "\n"
    atomic.write_text(results, body + ("\n" + tail if tail else ""))
