"""harness.wire, the pieces recording, the emulator and agents share, each as its callers rely on it."""

from __future__ import annotations

import base64
import gzip
import os
from pathlib import Path

import pytest

import harness.wire as wire
from harness.emulator import PROVIDER_MODULES


def test_the_emulator_serves_exactly_the_route_table() -> None:
    import importlib

    modules = [importlib.import_module(f"harness.emulator._{name}") for name in PROVIDER_MODULES]
    served = {route for module in modules for route in module.ROUTES}
    assert served == set(wire.ROUTES)


@pytest.mark.parametrize("route", wire.ROUTES, ids=lambda r: f"{r.provider}:{r.path}")
def test_every_route_of_the_table_reads_back_from_its_own_path(route: wire.Route) -> None:
    path = route.path.replace("{modelId:path}", "m-1")
    path = path.format(version="v1", model="m-1", project="p", location="eu")
    found = wire.route("POST", "http://127.0.0.1:8" + path)
    assert (found.provider, found.endpoint) == (route.provider, route.endpoint)
    assert found.streams in (route.stream, None)


@pytest.mark.parametrize("user", ["", "u", "us", "gateway-user"])
def test_a_key_inside_base64_is_one_of_its_forms_whatever_comes_before_it(user: str) -> None:
    key = "sk-ant-api03-abcdefghijklmnop"
    encoded = base64.b64encode(f"{user}:{key}".encode()).decode()
    assert any(form in encoded for form in wire.value_forms(key))
    assert any(form in encoded.replace("+", "-").replace("/", "_") for form in wire.value_forms(key))
    assert not any(form in base64.b64encode(b"user:another-key-entirely").decode() for form in wire.value_forms(key))


def test_a_url_loses_its_userinfo_and_credential_parameters_and_nothing_else() -> None:
    assert wire.scrub_url("https://u:p@h:8/v1?a=1&API-KEY=s&key=t&b=2#f") == "https://h:8/v1?a=1&b=2#f"
    assert wire.scrub_url("https://h/v1?a=1") == "https://h/v1?a=1"
    assert wire.credential_query_names("https://h/?api-key=1&Key=2&x=3") == ["api-key", "Key"]


@pytest.mark.parametrize(
    ("headers", "codings"),
    [
        ({"Content-Encoding": ["gzip"]}, ("gzip",)),
        ({"content-encoding": "gzip, br"}, ("gzip", "br")),
        ([("content-encoding", "identity"), ("Content-Encoding", b"deflate")], ("deflate",)),
        ({"content-type": ["text/plain"]}, ()),
        (None, ()),
    ],
)
def test_content_encoding_is_read_one_way_from_every_form_of_headers(headers: object, codings: tuple[str, ...]) -> None:
    assert wire.content_codings(headers) == codings
    assert wire.outer_coding(headers) == (codings[-1] if codings else None)


def test_gzip_is_undone_by_its_magic_bytes_and_a_cut_stream_stays_as_stored() -> None:
    assert wire.gunzipped(gzip.compress(b"{}")) == b"{}"
    assert wire.gunzipped(wire.GZIP_MAGIC + b"cut") == wire.GZIP_MAGIC + b"cut"


def test_an_sse_frame_reads_back_as_written() -> None:
    body = wire.sse_frame('{"a":1}', "delta") + wire.sse_frame("[DONE]", crlf=True) + b"data: cut"
    events = wire.sse_events(body)
    assert b"".join(events) == body
    assert [wire.sse_data(event) for event in events] == [b'{"a":1}', b"[DONE]", b"cut"]
    assert [wire.sse_whole(event) for event in events] == [True, True, False]


def test_an_event_stream_frame_is_what_botocore_decodes_and_a_new_crc_keeps_it_valid() -> None:
    from botocore.eventstream import EventStreamBuffer

    frame = wire.event_frame("contentBlockDelta", b'{"x":1}')
    rewritten = wire.with_eventstream_crc(frame.replace(b'"x":1', b'"x":2'))
    buffer = EventStreamBuffer()
    buffer.add_data(frame + rewritten)
    assert [message.payload for message in buffer] == [b'{"x":1}', b'{"x":2}']
    assert wire.eventstream_messages(frame + rewritten + b"\x00\x00") == [frame, rewritten, b"\x00\x00"]
    assert wire.eventstream_payload(rewritten) == b'{"x":2}'


def test_streamed_fields_are_joined_per_choice_call_and_block() -> None:
    events = [
        {"choices": [{"index": 1, "delta": {"content": "b"}}]},
        {"choices": [{"index": 0, "delta": {"content": "a"}}]},
        {"choices": [{"index": 1, "delta": {"content": "c"}}]},
        {"type": "content_block_delta", "index": 2, "delta": {"partial_json": "{}"}},
    ]
    joined = {path: "".join(text for _, text in pieces) for path, pieces in wire.joined_fields(events).items()}
    assert joined["choices[1].delta.content"] == "bc"
    assert joined["choices[0].delta.content"] == "a"
    assert joined["(index=2) delta.partial_json"] == "{}"


def test_an_atomic_write_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "shared" / "c.yaml"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    os.chmod(target, 0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    assert wire.write_atomic(link, "new") == target
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.yaml"]


def test_clip_cuts_with_an_ellipsis_and_flattens_lines_when_asked() -> None:
    assert wire.clip("abcdef", 4) == "abc…"
    assert wire.clip("a\nb", 10, flat=True) == "a\\nb"
    assert wire.clip("short") == "short"
