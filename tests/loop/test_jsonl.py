"""The one JSON Lines reader: values with their line numbers, blank lines skipped, a bad line named by file
and number, a binary file refused at its first bytes, a cut-off last line left out."""
import io

import pytest

from r2mad.jsonl import read_jsonl


def test_values_come_with_their_line_numbers_and_blank_lines_are_skipped():
    fh = io.BytesIO(b'{"a": 1}\n\n  \n[2, "\xc3\xa9"]\n3')
    assert list(read_jsonl(fh, "x.jsonl")) == [(1, {"a": 1}), (4, [2, "é"]), (5, 3)]


def test_a_bad_line_names_the_file_and_the_line():
    with pytest.raises(ValueError, match=r"^rows.jsonl:2 is not valid JSON \(Expecting value\); fix or remove"):
        list(read_jsonl(io.BytesIO(b'{"a": 1}\nnope\n'), "rows.jsonl"))
    with pytest.raises(ValueError, match=r"^rows.jsonl:1 is not valid JSON \(invalid start byte\)"):
        list(read_jsonl(io.BytesIO(b'"\xff"\n'), "rows.jsonl"))


def test_the_caller_words_the_error():
    def bad(path, number, why):
        return KeyError(f"{path} line {number}: {why}")

    with pytest.raises(KeyError, match="f line 1: not a JSON object"):
        list(read_jsonl(io.BytesIO(b"[1]\n"), "f", objects=True, bad_line=bad))


def test_objects_only_refuses_a_binary_file_at_its_first_bytes():
    fh = io.BytesIO(b"\x00" * 10_000_000)  # one "line" of 10 MB
    with pytest.raises(ValueError, match="f:1 is not valid JSON \\(not a JSON object\\)"):
        list(read_jsonl(fh, "f", objects=True))
    assert fh.tell() <= 64 * 1024
    long = b'{"text": "' + b"x" * 200_000 + b'"}\n{"b": 2}\n'
    assert [n for n, _ in read_jsonl(io.BytesIO(long), "f", objects=True)] == [1, 2]


def test_whole_lines_leaves_out_a_cut_off_last_line_and_stops_at_its_start():
    fh = io.BytesIO(b'{"a": 1}\n{"b": 2}\n{"c": ')
    assert list(read_jsonl(fh, "f", whole_lines=True)) == [(1, {"a": 1}), (2, {"b": 2})]
    assert fh.tell() == len(b'{"a": 1}\n{"b": 2}\n')
    assert list(read_jsonl(io.BytesIO(b'{"a": 1}\n{"b": 2}'), "f", whole_lines=True)) == [(1, {"a": 1})]
