"""bench/RESULTS.md's sections: a run replaces its own section, puts a new one after the one it names, and leaves
every other section byte for byte."""

from __future__ import annotations

from bench.results import heading_at, write_section

DOC = "# Results\n\n## A\n\nold a\n\n## B\n\nold b\n\n### B.1\n\nsub\n\n## C\n\nold c\n"


def write(tmp_path, section, text, after=None):
    path = tmp_path / "RESULTS.md"
    path.write_text(DOC, encoding="utf-8")
    write_section(path, section, text, after)
    return path.read_text(encoding="utf-8")


def test_a_section_is_replaced_with_its_subsections_and_the_others_kept(tmp_path):
    expected = "# Results\n\n## A\n\nold a\n\n## B\n\nnew b\n\n## C\n\nold c\n"
    assert write(tmp_path, "## B", "## B\n\nnew b\n") == expected


def test_the_last_section_is_replaced_to_the_end(tmp_path):
    assert write(tmp_path, "## C", "## C\n\nnew c\n\n\n") == DOC.replace("old c\n", "new c\n")


def test_a_new_section_goes_after_the_named_one_else_at_the_end(tmp_path):
    assert write(tmp_path, "## N", "## N\n\nn\n", after="## A") == DOC.replace("old a\n\n", "old a\n\n## N\n\nn\n\n")
    assert write(tmp_path, "## N", "## N\n\nn\n", after="## missing") == DOC + "\n## N\n\nn\n"
    assert write(tmp_path, "## N", "## N\n\nn\n") == DOC + "\n## N\n\nn\n"


def test_a_heading_matches_only_a_whole_line():
    assert heading_at(DOC, "## B") == DOC.index("## B")
    assert heading_at("## Bee\n## B\n", "## B") == len("## Bee\n")
    assert heading_at(DOC, "## Retrieval") == -1
