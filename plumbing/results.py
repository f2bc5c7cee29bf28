"""bench/RESULTS.md is assembled, not edited: each claim or measurement is one markdown fragment owned by the command
that produces it, and its tables are rendered from that command's JSON, so a rerun replaces its numbers in one place
and a superseded number cannot stay beside the new one.

    experiments/results/NNNN-slug.md    the claims (learning, quality), in file-name order
    bench/results/NNNN-slug.md          speed and memory, after them
    experiments/results/data/NAME.json  a table's source: an experiment's results file, as it wrote it

A fragment starts with its heading (`## ` a section, `### ` one of its parts). A table rendered from JSON stands
between two markers; the first names the JSON and the function that renders it:

    <!-- table: NAME module:function -->
    ...the function's markdown for data/NAME.json...
    <!-- /table -->

    python -m plumbing.results                                  # re-render every table, rewrite bench/RESULTS.md
    python -m plumbing.results --check                          # exit 1 naming what is out of date
    python -m plumbing.results --publish runs/x/results.json NAME   # a run's JSON becomes table NAME's source

A benchmark with `--write-results` calls `write_section` (its fragment, then the assembly). The rendering functions
are found by name (importlib), so this module imports no package above plumbing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from plumbing import atomic

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "experiments" / "results", ROOT / "bench" / "results")
RESULTS = ROOT / "bench" / "RESULTS.md"
TABLE = re.compile(r"^<!-- table: (?P<name>[\w.-]+) (?P<render>[\w.]+:\w+) -->\n(?P<body>.*?)^<!-- /table -->$",
                   re.MULTILINE | re.DOTALL)


def fragments(folders: Sequence[Path] = FOLDERS) -> list[Path]:
    """Every fragment, claims first, each folder in file-name order."""
    return [p for folder in folders for p in sorted(folder.glob("*.md"))]


def heading(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("\n", 1)[0]


def renderer(spec: str) -> Callable[[object], str]:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def render_tables(text: str, data: Path) -> str:
    """`text` with each table block re-rendered from `data/NAME.json` (a missing JSON is an error naming it)."""
    def one(match: re.Match) -> str:
        source = data / f"{match['name']}.json"
        if not source.is_file():
            raise FileNotFoundError(f"table {match['name']!r}: no {source}")
        body = renderer(match["render"])(json.loads(source.read_text(encoding="utf-8"))).strip("\n")
        return f"<!-- table: {match['name']} {match['render']} -->\n{body}\n<!-- /table -->"
    return TABLE.sub(one, text)


def rendered(folders: Sequence[Path] = FOLDERS) -> dict[Path, str]:
    """Every fragment's text with its tables rendered from their JSON."""
    return {p: render_tables(p.read_text(encoding="utf-8"), folders[0] / "data") for p in fragments(folders)}


def assemble(texts: dict[Path, str]) -> str:
    """The fragments one after another, one blank line between."""
    return "\n".join(text.strip("\n") + "\n" for text in texts.values())


def stale(folders: Sequence[Path] = FOLDERS, results: Path = RESULTS) -> list[str]:
    """What is out of date: a fragment whose table differs from its JSON's rendering, or the assembled file."""
    texts = rendered(folders)
    problems = [f"{p.parent.parent.name}/{p.parent.name}/{p.name}: a table differs from its JSON"
                for p, text in texts.items() if text != p.read_text(encoding="utf-8")]
    if not results.is_file() or results.read_text(encoding="utf-8") != assemble(texts):
        problems.append(f"{results.name} is not the assembly of the fragments: run `python -m plumbing.results`")
    return problems


def rebuild(folders: Sequence[Path] = FOLDERS, results: Path = RESULTS) -> Path:
    """Re-render every table into its fragment and write the assembly (only files that change are written)."""
    texts = rendered(folders)
    for path, text in texts.items():
        if text != path.read_text(encoding="utf-8"):
            atomic.write_text(path, text)
    atomic.write_text(results, assemble(texts))
    return results


def _name_after(folder: Path, after: Path | None) -> str:
    """A file-name prefix that sorts right after `after` (before the next fragment), else after the last one."""
    numbers = sorted(int(p.name[:4]) for p in folder.glob("*.md") if p.name[:4].isdigit())
    if after is None:
        return f"{(numbers[-1] if numbers else 0) + 100:04d}"
    start = int(after.name[:4])
    following = [n for n in numbers if n > start]
    end = following[0] if following else start + 200
    if end - start < 2:
        raise ValueError(f"no file name left between {after.name} and the next fragment: renumber {folder}")
    return f"{(start + end) // 2:04d}"


def write_section(section: str, text: str, after: str | None = None, folders: Sequence[Path] = FOLDERS,
                  results: Path = RESULTS) -> Path:
    """Replace the fragment whose heading is `section` with `text` (which starts with that heading); a new one goes
    right after the fragment headed `after` (else last among the measurements). Then the assembly is rewritten."""
    if text.split("\n", 1)[0] != section:
        raise ValueError(f"the text must start with its heading {section!r}")
    by_heading = {heading(p): p for p in fragments(folders)}
    path = by_heading.get(section)
    if path is None:
        anchor = by_heading.get(after) if after else None
        folder = anchor.parent if anchor else folders[-1]
        slug = re.sub(r"[^a-z0-9]+", "-", section.lstrip("#").lower()).strip("-")[:60].rstrip("-")
        path = folder / f"{_name_after(folder, anchor)}-{slug}.md"
    atomic.write_text(path, text.strip("\n") + "\n")
    return rebuild(folders, results)


def publish(source: Path, name: str, folders: Sequence[Path] = FOLDERS, results: Path = RESULTS) -> Path:
    """Copy a run's JSON as table `name`'s source (a fragment must already hold the table's markers), then rebuild."""
    if not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"table name {name!r}: letters, digits, '.', '_' and '-' only")
    data = json.loads(Path(source).read_text(encoding="utf-8"))
    if not any(m["name"] == name for p in fragments(folders) for m in TABLE.finditer(p.read_text(encoding="utf-8"))):
        raise ValueError(f"no fragment holds the markers of table {name!r}; add "
                         f"'<!-- table: {name} module:function -->' and '<!-- /table -->' where it goes")
    atomic.write_json(folders[0] / "data" / f"{name}.json", data, indent=1)
    return rebuild(folders, results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Assemble bench/RESULTS.md from its fragments and their JSON.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming what is out of date")
    parser.add_argument("--publish", nargs=2, metavar=("JSON", "NAME"), help="make a run's JSON table NAME's source")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        print("\n".join(problems) or f"{RESULTS.relative_to(ROOT)} is up to date")
        return 1 if problems else 0
    path = publish(Path(args.publish[0]), args.publish[1]) if args.publish else rebuild()
    print(f"wrote {path.relative_to(ROOT)} from {len(fragments())} fragments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
