"""The CSV reader's coded paths (text columns kept as categoricals, each distinct string read once) give
the frames the plain paths give: raw pages whose first lines show thousands separators or per-instance
lists, details pages and ``--metrics`` output, and the number and decimal-mark helpers on few strings."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES

from ncu_roof.errors import ReportLoadError
from ncu_roof.read.csv import columns, load_csv, long, numbers, wide

SYN = FIXTURES / "synthetic"
_BIG = re.compile(r"^(-?)(\d{4,})((?:\.\d+)?)$")


def _repeat(source: Path, target: Path, launches: int, cell=lambda v: v) -> Path:  # type: ignore[no-untyped-def]
    """``source``'s launch rows repeated to ``launches`` launches (IDs renumbered), each data cell passed
    through ``cell``; what comes before the header and the units row are kept."""
    text = source.read_text(encoding="utf-8-sig")
    at = text.index('"ID"')
    rows = list(csv.reader(io.StringIO(text[at:])))
    head = rows[:2] if rows[1][0] == "" else rows[:1]
    by_launch: dict[str, list[list[str]]] = {}
    for row in rows[len(head):]:
        by_launch.setdefault(row[0], []).append(row)
    groups = list(by_launch.values())
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows(head)
    for i in range(launches):
        writer.writerows([str(i), *map(cell, row[1:])] for row in groups[i % len(groups)])
    target.write_text(text[:at] + out.getvalue(), encoding="utf-8")
    return target


def _separated(value: str) -> str:
    match = _BIG.match(value)
    return f"{match[1]}{int(match[2]):,}{match[3]}" if match else value


def _plain_wide(monkeypatch: pytest.MonkeyPatch, path: Path) -> pd.DataFrame:
    with monkeypatch.context() as m:
        m.setattr(wide, "_text_metrics", lambda *a: set())
        return load_csv(path)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert repr(a.attrs) == repr(b.attrs)


@pytest.mark.parametrize("launches", [3, 70, 200])
def test_a_raw_page_with_separators_reads_as_the_plain_path_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launches: int) -> None:
    path = _repeat(SYN / "synthetic_raw_units.csv", tmp_path / "sep.csv", launches, _separated)
    if launches > wide._SAMPLE_LINES:  # the first lines show the separators: those columns are coded
        body = path.read_bytes()
        header = next(csv.reader([body.decode().splitlines()[0]]))
        assert wide._text_metrics(body, header, header, {"ID", "Kernel Name"})
    _same(load_csv(path), _plain_wide(monkeypatch, path))


def test_per_instance_lists_and_text_read_as_the_plain_path_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def damage(value: str) -> str:
        return {"12.5": "1;2;3", "0.75": "n/a", "80": "many"}.get(value, value)
    path = _repeat(SYN / "synthetic_raw_units.csv", tmp_path / "lists.csv", 150, damage)
    frame = load_csv(path)
    _same(frame, _plain_wide(monkeypatch, path))
    assert any("per-instance lists" in n for n in frame.attrs["notes"])


def test_a_misleading_guess_falls_back_to_the_plain_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _repeat(SYN / "synthetic_raw_units.csv", tmp_path / "plain.csv", 100)
    reads = []

    def read_columns(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(kwargs.get("coded"))
        return columns.read_columns(*args, **kwargs)

    with monkeypatch.context() as m:  # columns of plain numbers guessed to be text
        m.setattr(wide, "_text_metrics", lambda *a: {"gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"})
        m.setattr(wide, "read_columns", read_columns)
        guessed = load_csv(path)
    assert len(reads) == 2 and reads[0] and not reads[1]  # the guess, then the plain read
    _same(guessed, _plain_wide(monkeypatch, path))


def test_a_decimal_comma_file_is_still_refused_or_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _repeat(SYN / "synthetic_raw_units.csv", tmp_path / "comma.csv", 100, lambda v: v.replace(".", ","))
    try:
        coded = load_csv(path)
    except ReportLoadError as exc:
        with pytest.raises(ReportLoadError, match=re.escape(str(exc))):
            _plain_wide(monkeypatch, path)
    else:
        _same(coded, _plain_wide(monkeypatch, path))


@pytest.mark.parametrize("source", ["synthetic_details_rules.csv", "synthetic_metrics_stdout.csv"])
@pytest.mark.parametrize("launches", [2, 300])
def test_details_and_metrics_output_read_coded_as_plain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, launches: int) -> None:
    path = _repeat(SYN / source, tmp_path / source, launches)
    coded = load_csv(path)
    with monkeypatch.context() as m:
        m.setattr(long, "_CODED", frozenset())
        m.setattr(long, "_RULES_CODED", frozenset())
        plain = load_csv(path)
    _same(coded, plain)
    assert repr(coded.attrs["ncu_rule_results"]) == repr(plain.attrs["ncu_rule_results"])


def test_section_and_metric_numbers_match_the_joined_strings() -> None:
    sections = ["SOL", None, "SOL", "Memory", None, "a\x1fb", "a"]
    names = ["Duration", "Duration", "Elapsed", "Duration", "Elapsed", "c", "b\x1fc"]
    for cut in (5, 7):  # without and with a name holding the joining character
        section = pd.Series(sections[:cut], dtype="category")
        name = pd.Series(names[:cut], dtype="category")
        coded = long._section_metric(section, name)
        joined = long._section_metric(section.astype(object), name.astype(object))
        assert pd.factorize(coded)[0].tolist() == pd.factorize(joined)[0].tolist()


_CELLS = ["1,234", "1,234.5", "70.464", "7", "1;2;3", "abc", "0.5", None, "1 234,5", "-12", "1.234.567", "", "1e3",
          "9,999,999", "+3.25", "1'234.5"]


@pytest.mark.parametrize("decimal", [".", ","])
def test_numbers_of_a_categorical_are_the_strings_numbers(decimal: str) -> None:
    rng = np.random.default_rng(7)
    cells = [_CELLS[i] for i in rng.integers(0, len(_CELLS), 3000)]
    text = pd.Series(cells, dtype=object)
    coded = pd.Series(pd.Categorical(cells, categories=sorted({c for c in _CELLS if c is not None} | {"unused;1"})))
    plain_notes: list[str] = []
    coded_notes: list[str] = []
    plain = numbers.parse_numbers(text, decimal, plain_notes)
    got = numbers.parse_numbers(coded, decimal, coded_notes)
    np.testing.assert_array_equal(plain.to_numpy(), got.to_numpy())
    assert plain_notes == coded_notes


@pytest.mark.parametrize("seed", range(6))
def test_few_strings_give_the_evidence_and_numbers_of_the_column_path(
        monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cells = list(dict.fromkeys(str(_CELLS[i]) for i in rng.integers(0, len(_CELLS), 12)))
    values = pd.Series(cells, dtype="str")
    few = [numbers._column_evidence(values, integer) for integer in (False, True)]
    objects = pd.Series([None if c == "None" else c for c in cells], dtype=object)
    parsed = []
    for d in ".,":
        notes: list[str] = []
        parsed.append((numbers._parse_text(objects, objects.notna(), d, notes, None), notes))
    monkeypatch.setattr(numbers, "_FEW", 0)
    assert few == [numbers._column_evidence(values, integer) for integer in (False, True)]
    for (got, said), d in zip(parsed, ".,", strict=True):
        expected: list[str] = []
        np.testing.assert_array_equal(got, numbers._parse_text(objects, objects.notna(), d, expected, None))
        assert said == expected


@pytest.mark.parametrize("seed", range(4))
def test_unique_rows_through_one_number_are_numpy_s_unique_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, [3, 50, 2, 7, 1, 4], size=(500, 6))
    count, first, which = long._unique_rows(codes)
    distinct, first_np, which_np = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    assert count == len(distinct)
    np.testing.assert_array_equal(first, first_np)
    np.testing.assert_array_equal(which.reshape(-1), which_np.reshape(-1))
    assert long._unique_rows(np.zeros((0, 6), dtype=np.int64))[0] == 0


@pytest.mark.parametrize("cells", [["3", "3", "1", "x", "3", "007", "1"], ["2", None, "2", "5", "9" * 19, "+4", "2"],
                                   ["1"] * 9, ["10", "11", "12", "13"]])
def test_launch_ids_of_a_categorical_are_those_of_the_strings(cells: list[str | None]) -> None:
    plain: list[str] = []
    coded: list[str] = []
    as_text = columns.valid_ids(pd.DataFrame({"ID": pd.Series(cells, dtype="str")}), plain)
    as_codes = columns.valid_ids(pd.DataFrame({"ID": pd.Series(cells, dtype="category")}), coded)
    pd.testing.assert_frame_equal(as_text, as_codes, check_exact=True)
    assert plain == coded


def test_rows_cut_a_run_at_a_time_are_the_rows_read_alone(tmp_path: Path) -> None:
    body = _repeat(SYN / "synthetic_details_rules.csv", tmp_path / "d.csv", 40).read_bytes()
    header = next(csv.reader([body.decode().splitlines()[0]]))
    ends = columns.line_ends(body)
    everything = columns.read_columns(body, header, header, tmp_path)
    rng = np.random.default_rng(3)
    for rows in (np.arange(0), np.arange(5), np.array([0, 2, 3, 4, 9, len(everything) - 1]),
                 np.sort(rng.choice(len(everything), 60, replace=False))):
        some = columns.some_rows(body, ends, header, header, tmp_path, rows)
        pd.testing.assert_frame_equal(some, everything.iloc[rows].reset_index(drop=True), check_exact=True)


def test_text_read_a_block_of_rows_at_a_time_is_the_whole_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    width, rows = 20, 80_000  # pandas tokenizes 32,768 rows of 20 fields a block: three blocks
    names = [f"c{i}" for i in range(width)]
    pool = np.array(["", "7", "007", "1,5", "x y", "n/a", "3.25", "True"], dtype=object)
    cells = pool[rng.integers(0, len(pool), size=(rows, 4))]
    cells[rows // 2:, 1] = "9"  # a column all numbers in the first blocks, text later
    lines = ['"' + '","'.join([str(i), *row, *["z"] * (width - 5)]) + '"' for i, row in enumerate(cells.tolist())]
    body = ("\n".join(['"' + '","'.join(names) + '"', *lines]) + "\n").encode()
    keep = names[:5]
    got = columns.read_columns(body, names, keep, tmp_path, categories={"c1", "c2"}, coded={"c3"})
    whole = pd.read_csv(io.BytesIO(body), usecols=keep, dtype=str, keep_default_na=False,
                        na_values=["", "n/a", "N/A"], low_memory=False)
    assert isinstance(got["c3"].dtype, pd.CategoricalDtype)
    for name in keep:
        assert got[name].astype(object).where(got[name].notna(), None).tolist() == \
            whole[name].astype(object).where(whole[name].notna(), None).tolist(), name
