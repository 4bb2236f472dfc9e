"""The conformance report's table: each kit's counts and failures, whose each one is, and a
run that rewrites its kit's rows only."""

from __future__ import annotations

from pathlib import Path

from conformance import report

JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite>
  <testcase classname="t.card" name="test_schema">
    <failure message="AssertionError: CARD-STRUCT-001 [AgentCard]: bad | member">x</failure>
  </testcase>
  <testcase classname="t.send" name="test_new">
    <failure message="AssertionError: CORE-NEW-001 [something] failed">x</failure>
  </testcase>
  <testcase classname="t.ok" name="test_ok"/>
  <testcase classname="t.skip" name="test_skip"><skipped message="no"/></testcase>
</testsuite></testsuites>
"""
OUTPUT_0_3 = """\
.....F..
=========================== short test summary info ============================
FAILED tests/mandatory/jsonrpc/test_x.py::test_thing - AssertionError: expected 1
7 passed, 1 failed in 2.00s
"""


def test_a_junit_report_names_each_failure_by_its_requirement(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    run = report.from_junit(report.KIT_1_0, path)
    assert run.counts == {"passed": 1, "failed": 2, "skipped": 1}
    assert [failure.test for failure in run.failures] == ["CARD-STRUCT-001", "CORE-NEW-001"]
    assert report.whose(run.failures[0])[0] == "the kit's"
    assert report.whose(run.failures[1]) == (
        "ours", "AssertionError: CORE-NEW-001 [something] failed")


def test_the_table_keeps_the_other_kits_rows(tmp_path: Path) -> None:
    doc = tmp_path / "conformance.md"
    doc.write_text("# Conformance\n\nintro\n")
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    report.update(report.from_junit(report.KIT_1_0, junit), doc)
    report.update(report.from_pytest_output(report.KIT_0_3, [OUTPUT_0_3]), doc)
    text = doc.read_text()
    assert text.startswith("# Conformance\n\nintro\n")
    lines = [line for line in text.splitlines() if line.startswith(("| 0.", "| 1."))]
    assert lines[0] == "| 0.3 | all | 1 failed, 7 passed | 1 ours | |"
    assert lines[1].startswith("| 0.3 | test_thing | failed | ours | AssertionError: expected 1")
    assert lines[2] == "| 1.0 | all | 2 failed, 1 passed, 1 skipped | 1 ours | |"
    assert "bad \\| member" not in text  # a kit's failure shows its evidence, not its message
    # A second run of one kit replaces its rows only.
    report.update(report.from_pytest_output(report.KIT_0_3, ["8 passed in 1.00s\n"]), doc)
    again = doc.read_text()
    assert "| 0.3 | all | 8 passed | 0 ours | |" in again and "test_thing" not in again
    assert again.count("| 1.0 |") == 3
