"""Which cassette a request names: the header, the path prefix, and the names refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.proxy import CassetteChoiceError
from harness.proxy._cassette_select import Cassettes, cassette_file, split_selection


def test_the_header_and_the_prefix_name_a_cassette_and_the_prefix_leaves_the_path() -> None:
    assert split_selection("/v1/messages", [("X-Harness-Cassette", "test_one")]) == ("test_one", "/v1/messages")
    assert split_selection("/cassette/test_two/v1/chat/completions", []) == ("test_two", "/v1/chat/completions")
    assert split_selection("/cassette/a%2Fb/model/m%3A0/converse", []) == ("a/b", "/model/m%3A0/converse")
    assert split_selection("/v1/messages", []) == (None, "/v1/messages")


def test_a_header_and_a_prefix_naming_two_cassettes_are_refused() -> None:
    with pytest.raises(CassetteChoiceError, match="name two cassettes"):
        split_selection("/cassette/one/v1/messages", [("x-harness-cassette", "two")])


@pytest.mark.parametrize("name", ["../escape", "/abs", "a//b", ".hidden", "", "a b", "x" * 201])
def test_a_name_that_could_leave_the_directory_or_is_no_plain_name_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(CassetteChoiceError, match="plain names"):
        cassette_file(name, tmp_path)


def test_names_are_files_in_the_directory_with_yaml_added(tmp_path: Path) -> None:
    assert cassette_file("test_agent/test_weather", tmp_path) == tmp_path / "test_agent" / "test_weather.yaml"
    assert cassette_file("kept.yml", tmp_path) == tmp_path / "kept.yml"


def test_a_file_takes_unnamed_requests_and_a_directory_asks_for_a_name(tmp_path: Path) -> None:
    one = Cassettes(tmp_path / "run.yaml", "none")
    assert one.path_for(None) == tmp_path / "run.yaml"
    assert one.path_for("other") == tmp_path / "other.yaml"
    library = Cassettes(tmp_path / "cassettes", "none")
    assert library.path_for("t") == tmp_path / "cassettes" / "t.yaml"
    with pytest.raises(CassetteChoiceError, match="X-Harness-Cassette: NAME"):
        library.path_for(None)
