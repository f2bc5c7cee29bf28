"""bench/RESULTS.md is the assembly of its fragments: claims before measurements, each folder in file-name order; a
benchmark replaces its own fragment and leaves every other byte for byte; a table between markers is rendered from
its JSON, and a hand-edited table or a hand-edited RESULTS.md is reported as out of date."""

from __future__ import annotations

import json

import pytest

from plumbing import results

TABLE = "<!-- table: t json:dumps -->\nstale\n<!-- /table -->"


@pytest.fixture
def tree(tmp_path):
    claims, speed = tmp_path / "experiments" / "results", tmp_path / "bench" / "results"
    claims.mkdir(parents=True)
    speed.mkdir(parents=True)
    (claims / "0000-results.md").write_text("# Results\n\nintro\n")
    (claims / "0100-a.md").write_text("## A\n\nclaim a\n")
    (claims / "0101-a1.md").write_text(f"### A.1\n\n{TABLE}\n\nafter\n")
    (speed / "0100-b.md").write_text("## B\n\nspeed b\n")
    (speed / "0300-c.md").write_text("## C\n\nspeed c\n")
    (claims / "data").mkdir()
    (claims / "data" / "t.json").write_text(json.dumps({"x": 1}))
    return (claims, speed), tmp_path / "RESULTS.md"


def test_the_assembly_puts_claims_first_in_file_name_order_with_tables_rendered(tree):
    folders, out = tree
    results.rebuild(folders, out)
    assert out.read_text() == ('# Results\n\nintro\n\n## A\n\nclaim a\n\n### A.1\n\n'
                               '<!-- table: t json:dumps -->\n{"x": 1}\n<!-- /table -->\n\nafter\n\n'
                               '## B\n\nspeed b\n\n## C\n\nspeed c\n')
    assert results.stale(folders, out) == []


def test_a_hand_edited_results_file_or_table_is_out_of_date(tree):
    folders, out = tree
    assert any("not the assembly" in p for p in results.stale(folders, out))  # never built
    assert any("a table differs from its JSON" in p for p in results.stale(folders, out))
    results.rebuild(folders, out)
    out.write_text(out.read_text().replace("speed c", "speed c, edited"))
    assert results.stale(folders, out) == [f"{out.name} is not the assembly of the fragments: run "
                                           f"`python -m plumbing.results`"]
    results.rebuild(folders, out)
    (folders[1] / "0300-c.md").write_text("## C\n\nspeed c, measured again\n")
    assert results.stale(folders, out)  # a fragment changed, the assembly not rebuilt
    results.rebuild(folders, out)
    (folders[0] / "data" / "t.json").write_text(json.dumps({"x": 2}))
    assert results.stale(folders, out)[0].endswith("0101-a1.md: a table differs from its JSON")


def test_a_section_is_replaced_and_every_other_fragment_kept(tree):
    folders, out = tree
    before = {p: p.read_bytes() for p in results.fragments(folders) if p.name != "0300-c.md"}
    results.write_section("## C", "## C\n\nnew c\n", folders=folders, results=out)
    assert (folders[1] / "0300-c.md").read_text() == "## C\n\nnew c\n"
    assert out.read_text().endswith("## B\n\nspeed b\n\n## C\n\nnew c\n")
    assert all(p.read_bytes() == b for p, b in before.items() if p.name != "0101-a1.md")  # only its table rendered


def test_a_new_section_goes_right_after_the_named_one_else_last(tree):
    folders, out = tree
    results.write_section("## N", "## N\n\nn\n", after="## B", folders=folders, results=out)
    assert (folders[1] / "0200-n.md").is_file()
    results.write_section("## M: last", "## M: last\n\nm\n", folders=folders, results=out)
    assert (folders[1] / "0400-m-last.md").is_file()
    assert out.read_text().index("## N") < out.read_text().index("## C") < out.read_text().index("## M")
    with pytest.raises(ValueError, match="must start with its heading"):
        results.write_section("## X", "## Y\n", folders=folders, results=out)


def test_no_name_left_between_two_fragments_is_a_clear_error(tree):
    folders, out = tree
    (folders[1] / "0101-b2.md").write_text("## B2\n")
    with pytest.raises(ValueError, match="renumber"):
        results.write_section("## N", "## N\n", after="## B", folders=folders, results=out)


def test_publish_copies_the_json_and_renders_its_table(tree, tmp_path):
    folders, out = tree
    run = tmp_path / "run" / "results.json"
    run.parent.mkdir()
    run.write_text(json.dumps({"y": [1, 2]}))
    results.publish(run, "t", folders, out)
    assert json.loads((folders[0] / "data" / "t.json").read_text()) == {"y": [1, 2]}
    assert '{"y": [1, 2]}' in (folders[0] / "0101-a1.md").read_text() and results.stale(folders, out) == []
    with pytest.raises(ValueError, match="no fragment holds the markers of table 'u'"):
        results.publish(run, "u", folders, out)
    with pytest.raises(ValueError, match="letters, digits"):
        results.publish(run, "../t", folders, out)


def test_a_table_without_its_json_names_the_missing_file(tree):
    folders, out = tree
    (folders[0] / "data" / "t.json").unlink()
    with pytest.raises(FileNotFoundError, match="table 't'"):
        results.rebuild(folders, out)


def test_this_repository_results_file_is_the_assembly_of_its_fragments():
    assert results.stale() == []


def test_every_table_renderer_here_is_a_library_function():
    """A renderer named in a fragment is imported to rebuild RESULTS.md, so it must not live in an entry point."""
    import importlib.util

    specs = {m["render"] for p in results.fragments() for m in results.TABLE.finditer(p.read_text(encoding="utf-8"))}
    assert specs, "no table in the fragments rendered from JSON"
    for spec in specs:
        source = importlib.util.find_spec(spec.partition(":")[0]).origin
        with open(source, encoding="utf-8") as f:
            assert 'if __name__ == "__main__"' not in f.read(), spec
