"""``locimem bench report``: the docs' benchmark tables in one file, with when, where and at
which commit they were measured."""

from __future__ import annotations

import contextlib
import io
import re

from locimem.bench.report import SECTIONS, write_report
from locimem.cli import build_parser, main


def test_the_report_names_date_machine_and_commit_and_holds_each_suite(tmp_path) -> None:
    out = tmp_path / "benchmarks.md"
    text = write_report(out, quick=True, only=["Map frames", "Crowds"], progress=None)
    assert out.read_text(encoding="utf-8") == text
    assert re.search(r"^- date: \d{4}-\d\d-\d\d \d\d:\d\d UTC$", text, flags=re.M)
    assert re.search(r"^- machine: .+, \d+ cores", text, flags=re.M)
    assert re.search(r"^- locimem \S+, commit ([0-9a-f]{12}|unknown)", text, flags=re.M)
    assert "These figures say nothing" in text  # a quick run says so
    titles = re.findall(r"^## (.+)$", text, flags=re.M)
    assert titles == ["Map frames", "Crowds"]  # only those, in the report's order
    assert "`locimem bench frames`:" in text and "`locimem bench crowd`:" in text
    assert "\n# " not in text.split("\n", 1)[1]  # the suites' own titles are demoted
    assert not list(tmp_path.glob(".*partial"))  # no scratch file left


def test_every_section_names_a_bench_command_that_exists() -> None:
    parser = build_parser()
    for section in SECTIONS:
        words = section.command.split()
        assert words[:2] == ["locimem", "bench"]
        args = parser.parse_args(words[1:])  # an unknown suite or flag exits here
        assert args.suite == words[2] != "report"


def test_the_cli_writes_the_report(tmp_path) -> None:
    out = io.StringIO()
    target = tmp_path / "b.md"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["bench", "report", "--quick", "-o", str(target), "--quiet"])
    assert code == 0 and out.getvalue() == f"wrote {target}\n"
    assert re.findall(r"^## (.+)$", target.read_text(encoding="utf-8"), flags=re.M) == [
        s.title for s in SECTIONS]
