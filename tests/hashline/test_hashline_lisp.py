"""Lisp-family delimiter checking and repair classification."""

from __future__ import annotations

import pytest

from lich_core.hashline.anchors import line_hash, split_lines
from lich_core.hashline.edit import FileTarget, plan_edits
from lich_core.hashline.lisp import check, dialect_for, is_lisp_path, repair
from lich_core.hashline.patch import parse_patch

CL = dialect_for("x.lisp")


@pytest.mark.parametrize(
    "name", ["a.lisp", "b.asd", "c.cl", "d.lsp", "e.el", "f.scm", "g.clj", "h.edn", "I.LISP"]
)
def test_lisp_family(name):
    assert is_lisp_path(name)


def test_not_lisp():
    assert not is_lisp_path("a.py") and not is_lisp_path("lisp")


@pytest.mark.parametrize(
    "text",
    [
        '(a "str ( ) [" b)',
        "(a ; comment (\n b)",
        "(a #| block ( #| nested ( |# still |# b)",
        '(list #\\( #\\) #\\; #\\")',
        "(|odd(symbol| x)",
        "(a\\(b)",
        "[1 {2 (3)}]",
    ],
)
def test_common_lisp_scanner_ignores_delimiters_in_strings_comments_and_chars(text):
    found, report = check(text, CL)
    assert not found.problems and report.balanced


def test_dialect_specific_character_syntax():
    assert check("(list ?( ?\\) ?\\( x)", dialect_for("a.el"))[1].balanced
    assert check("(str \\( \\) [1])", dialect_for("a.clj"))[1].balanced
    # `|` is an ordinary character in Clojure, a quoted symbol in Common Lisp.
    assert check("(a | b)", dialect_for("a.clj"))[1].balanced
    assert check("(a | b)", CL)[0].problems


def test_edn_is_read_like_clojure():
    edn = dialect_for("data.edn")
    assert check('{:a "(" :b \\( :c [1 2] ; note (\n :d #{3}}', edn)[1].balanced
    assert not check("{:a [1 2}", edn)[1].balanced


def test_reports_each_kind_of_problem():
    _, report = check("(a))", CL)
    assert report.unmatched == [(3, ")")]
    _, report = check("(a]", CL)
    assert report.mismatched == [(2, "]", ")")]
    _, report = check("(a (b)", CL)
    assert report.unclosed == [(0, "(")]
    found, _ = check('(a "open', CL)
    assert found.problems == [(3, "unterminated string")]
    found, _ = check("(a #| open", CL)
    assert found.problems[0][1] == "unterminated #| comment"


OLD = "(defun f (x)\n  (+ x 1))\n\n(defun g () ; note (\n  2)\n"


def patched(body: str, old: str = OLD):
    lines = split_lines(old)
    anchors = {index + 1: f"{index + 1}:{line_hash(line)}" for index, line in enumerate(lines)}
    [section] = parse_patch(
        "@@ f.lisp\n" + body.format(**{f"a{key}": value for key, value in anchors.items()})
    )
    [edit] = plan_edits([FileTarget("f.lisp", old, True, section.ops)])
    return edit, repair(old, edit.new_text, edit.hunks, CL)


def test_balanced_edit_needs_nothing():
    _, outcome = patched("= {a2}..{a2}\n~  (* x 2))\n")
    assert outcome.status == "balanced"


def test_missing_closer_inside_the_edit_is_a_safe_repair():
    _, outcome = patched("= {a2}..{a2}\n~  (* x 2)  ; doubled\n")
    assert outcome.status == "repaired" and outcome.safe
    assert outcome.text.split("\n")[1] == "  (* x 2))  ; doubled"
    assert outcome.fixes == ["added `)` at the end of line 2"]


def test_extra_closer_inside_the_edit_is_removed():
    _, outcome = patched("= {a2}..{a2}\n~  (* x 2)))\n")
    assert outcome.status == "repaired" and outcome.safe
    assert outcome.text.split("\n")[1] == "  (* x 2))"


def test_wrong_closer_kind_is_swapped():
    _, outcome = patched("= {a2}..{a2}\n~  (* x 2])\n")
    assert outcome.status == "repaired" and outcome.text.split("\n")[1] == "  (* x 2))"


def test_repair_skips_character_literals_and_block_comments_in_the_edit():
    _, outcome = patched("= {a2}..{a2}\n~  (list #\\( x #| ) |# 1)\n")
    assert outcome.status == "repaired" and outcome.safe
    assert outcome.text.split("\n")[1] == "  (list #\\( x #| ) |# 1))"


def test_repair_that_changes_the_form_count_is_only_a_candidate():
    _, outcome = patched("+ {a5}\n~(defun h ()\n~  3\n")
    assert outcome.status == "candidate" and not outcome.safe
    assert outcome.text.endswith("(defun h ()\n  3)\n")


def test_unterminated_string_is_reported_not_repaired():
    edit, outcome = patched('= {a2}..{a2}\n~  (+ x "1))\n')
    assert outcome.status == "syntax" and outcome.text == edit.new_text
    assert any("unterminated string" in problem for problem in outcome.problems)


def test_file_already_unbalanced_is_left_alone():
    old = "(defun f (x)\n  (+ x 1)\n"
    _, outcome = patched("+ {a2}\n~; comment\n", old=old)
    assert outcome.status == "preexisting"


def test_deleting_an_opener_outside_any_remaining_hunk_gets_a_global_candidate():
    _, outcome = patched("- {a1}..{a1}\n")
    assert outcome.status == "candidate"
    assert check(outcome.text, CL)[1].balanced
