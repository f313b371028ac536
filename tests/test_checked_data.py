"""The tool's data files: validated once per content, then read back from the cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from advisor.core import validation
from advisor.core.cache import write_cached
from advisor.core.checked_data import CACHE_ENV, cache_dir, load_checked
from advisor.model import InputError

DEVICES = """\
version: 1
devices:
  - name: Test NPU
    match: test
    peak_tflops: 100
    source: a datasheet
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "validated").glob("*.json")) if (cache / "validated").is_dir() else []


def _count_validations(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = validation.schema_errors

    def counting(instance: object, schema_name: str) -> list[str]:
        calls.append(instance)
        return real(instance, schema_name)

    monkeypatch.setattr(validation, "schema_errors", counting)
    return calls


def test_valid_file_is_validated_once_then_read_from_the_cache(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text(DEVICES)
    calls = _count_validations(monkeypatch)
    first, errors = load_checked(path, "devices.schema.json")
    assert errors == [] and len(calls) == 1
    assert len(_entries(cache)) == 1
    second, errors = load_checked(path, "devices.schema.json")
    assert errors == [] and len(calls) == 1  # not validated again
    assert second == first and second["devices"][0]["peak_tflops"] == 100


def test_an_edited_file_misses_the_cache_and_its_errors_are_reported(
    tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text(DEVICES)
    load_checked(path, "devices.schema.json")
    path.write_text(DEVICES.replace("peak_tflops: 100", "peak_tflops: fast"))
    _, errors = load_checked(path, "devices.schema.json")
    assert errors and "peak_tflops" in errors[0]
    assert len(_entries(cache)) == 1  # an invalid file is never cached
    _, errors_again = load_checked(path, "devices.schema.json")
    assert errors_again == errors


def test_an_unwritable_cache_validates_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker))
    path = tmp_path / "devices.yaml"
    path.write_text(DEVICES)
    calls = _count_validations(monkeypatch)
    for _ in range(2):
        data, errors = load_checked(path, "devices.schema.json")
        assert errors == [] and data["devices"][0]["name"] == "Test NPU"
    assert len(calls) == 2


def test_a_corrupt_cache_entry_is_a_miss(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text(DEVICES)
    load_checked(path, "devices.schema.json")
    (entry,) = _entries(cache)
    entry.write_text('{"devices": [')
    data, errors = load_checked(path, "devices.schema.json")
    assert errors == [] and data["devices"][0]["source"] == "a datasheet"
    assert json.loads(entry.read_text()) == data  # rewritten whole


def test_data_json_cannot_hold_is_not_cached(cache: Path) -> None:
    write_cached(cache / "validated" / "x.json", {1: "integer key"})
    write_cached(cache / "validated" / "y.json", {"when": float("nan")})
    assert _entries(cache) == []


def test_a_missing_file_is_reported_by_the_loader(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_checked(tmp_path / "absent.yaml", "devices.schema.json")
    assert "absent.yaml" in str(caught.value)


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert cache_dir() == Path("/somewhere/advisor")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "advisor"
    monkeypatch.setenv(CACHE_ENV, "/explicit")
    assert cache_dir() == Path("/explicit")


def test_without_a_home_directory_nothing_is_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_dir() is None
    path = tmp_path / "devices.yaml"
    path.write_text(DEVICES)
    data, errors = load_checked(path, "devices.schema.json")
    assert errors == [] and data["devices"][0]["name"] == "Test NPU"


FSDP2_SCHEMA = "config/mindspeed-fsdp2.schema.json"


def _count_validators(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the validator runs of schema_violations (a cached verdict makes none)."""
    calls: list[str] = []
    real = validation._validator

    def counting(schema_name: str) -> object:
        calls.append(schema_name)
        return real(schema_name)

    monkeypatch.setattr(validation, "_validator", counting)
    return calls


def test_a_configs_verdict_is_validated_once_per_content(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_validators(monkeypatch)
    wrong = {"parallel": {"fsdp_size": "eight", "tp_size": 2}}
    first = validation.schema_violations(wrong, FSDP2_SCHEMA)
    assert first and len(calls) == 1
    again = validation.schema_violations(wrong, FSDP2_SCHEMA)
    assert again == first and len(calls) == 1  # read back, not validated again
    fixed = validation.schema_violations({"parallel": {"fsdp_size": 8}}, FSDP2_SCHEMA)
    assert fixed == [] and len(calls) == 2  # other data: validated
    assert validation.schema_violations({"parallel": {"fsdp_size": 8}}, FSDP2_SCHEMA) == []
    assert len(calls) == 2  # "no violation" is a verdict too


def test_a_verdict_json_cannot_hold_exactly_is_never_cached(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_validators(monkeypatch)
    odd = {"parallel": {1: "integer key"}}  # JSON would make the key a string
    for _ in range(2):
        assert validation.schema_violations(odd, FSDP2_SCHEMA)
    assert len(calls) == 2


def test_a_tampered_verdict_is_a_miss(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = {"parallel": {"fsdp_size": "eight"}}
    first = validation.schema_violations(wrong, FSDP2_SCHEMA)
    for entry in (cache / "verdicts").glob("*.json"):
        entry.write_text('{"not": "a verdict"}')
    calls = _count_validators(monkeypatch)
    assert validation.schema_violations(wrong, FSDP2_SCHEMA) == first
    assert len(calls) == 1
