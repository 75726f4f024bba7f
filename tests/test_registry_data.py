"""The registries' data-file reader: a JSON file in a package folder, its records checked, its figures in SI."""

from __future__ import annotations

import json
import uuid

import pytest

from roofline_lib.core import registry_data as data


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A throwaway package (a fresh name each test: the reader caches a file's text) with a data folder."""
    name = f"regdata_{uuid.uuid4().hex[:8]}"
    (tmp_path / name / "data").mkdir(parents=True)
    (tmp_path / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(path: str, content) -> str:
        text = content if isinstance(content, str) else json.dumps(content)
        (tmp_path / name / path).write_text(text, encoding="utf-8")
        return name

    return write


def test_records_come_back_by_key_in_the_file_order(package):
    pkg = package("data/t.json", {"about": "x", "chips": {"b": {"name": "B"}, "a": {"name": "A", "note": ""}}})
    records = data.read_records(pkg, "data/t.json", table="chips", required=("name",), optional=("note",))
    assert list(records) == ["b", "a"]  # the file's order, not sorted
    assert records["a"] == {"name": "A", "note": ""}


def test_a_record_missing_a_field_or_with_an_unknown_one_is_refused_by_file_and_key(package):
    pkg = package("data/t.json", {"chips": {"a": {"nmae": "A"}}})
    with pytest.raises(ValueError, match=r"data/t.json, record 'a' lacks name"):
        data.read_records(pkg, "data/t.json", table="chips", required=("name",))
    with pytest.raises(ValueError, match=r"record 'a' has unknown fields nmae; known: name"):  # a typo is caught
        data.read_records(pkg, "data/t.json", table="chips", required=(), optional=("name",))


def test_a_file_that_is_not_a_table_of_objects_is_refused(package):
    pkg = package("data/list.json", [1, 2])
    with pytest.raises(ValueError, match="must be a JSON object"):
        data.read_table(pkg, "data/list.json")
    package("data/flat.json", {"a": 3})
    with pytest.raises(ValueError, match="record 'a' must be a JSON object"):
        data.read_records(pkg, "data/flat.json", required=())
    with pytest.raises(ValueError, match="has no table 'chips'; it has: a"):
        data.read_records(pkg, "data/flat.json", table="chips", required=())
    package("data/bad.json", '{"a": 1,}')
    with pytest.raises(ValueError, match="is not valid JSON"):
        data.read_table(pkg, "data/bad.json")
    with pytest.raises(FileNotFoundError, match="package-data"):
        data.read_table(pkg, "data/missing.json")


def test_read_table_gives_a_fresh_copy_each_time(package):
    pkg = package("data/t.json", {"a": {"name": "A"}})
    data.read_table(pkg, "data/t.json")["a"]["name"] = "changed"
    assert data.read_table(pkg, "data/t.json")["a"]["name"] == "A"


def test_a_figure_in_si_is_the_printed_value_times_its_unit_bit_for_bit():
    assert data.si({"value": 3.35, "unit": "TB/s"}, "bw") == 3.35 * 1e12  # the product a literal gives
    assert data.si({"value": 80, "unit": "GiB"}, "cap") == 80 * 2**30  # 85,899,345,920 bytes, an int
    assert data.si({"value": 400, "unit": "Gb/s"}, "ndr") == 50e9  # 400 gigabits = 50 GB
    assert data.number({"value": 132, "from": "datasheet"}, "sms") == 132


@pytest.mark.parametrize(
    "figure, message",
    [
        ({"value": 3.35, "unit": "TBps"}, "must give a unit, one of .*got 'TBps'"),
        ({"unit": "TB/s"}, "must give its number as 'value', got None"),
        ({"value": True, "unit": "TB/s"}, "got True"),
        ({"value": "3.35", "unit": "TB/s"}, "got '3.35'"),
        (3.35, "must be a JSON object"),
    ],
)
def test_a_figure_without_a_number_or_a_known_unit_is_refused(figure, message):
    with pytest.raises(ValueError, match=message):
        data.si(figure, "gpus.json, h100, hbm_bytes_per_s")
