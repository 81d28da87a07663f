"""vcrpy's serializer, readable: the YAML any vcrpy reads, written so a person can read it too.

:data:`READABLE_YAML` is registered as ``yaml`` (the file suffix stays ``.yaml``): JSON bodies
pretty-printed (key order kept: it is what the SDK parses) and multi-line text (SSE streams,
JSON) written as literal blocks. Reading goes through ``harness._yaml``, memory bounded.
"""

from __future__ import annotations

import json
from typing import Any, Final

import yaml

import harness._yaml as bounded_yaml


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def pretty_body(body: Any) -> Any:
    """A JSON body as indented JSON text (key order kept: it is what the SDK parses); anything else as is."""
    text = body.decode("utf-8") if isinstance(body, bytes) and is_utf8(body) else body
    if not isinstance(text, str) or text.lstrip()[:1] not in ("{", "["):
        return body
    try:
        parsed = json.loads(text)
    except ValueError:
        return body
    return json.dumps(parsed, indent=2, ensure_ascii=False) + "\n"


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _ReadableYaml:
    """vcrpy's serializer protocol (``serialize``/``deserialize``) writing the readable form."""

    @staticmethod
    def deserialize(cassette_string: str) -> Any:
        from vcr.serializers import yamlserializer

        return bounded_yaml.load(cassette_string, yamlserializer.deserialize)

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        for interaction in cassette_dict.get("interactions", []):
            request, response = interaction["request"], interaction["response"]
            request["body"] = pretty_body(request.get("body"))
            body = response.get("body") or {}
            if "string" in body:
                pretty = pretty_body(body["string"])
                if pretty is not body["string"]:
                    body["string"] = pretty
                    _set_length(response, pretty)
        text = yaml.dump(cassette_dict, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
        if _ReadableYaml.deserialize(text) != cassette_dict:  # a literal block that would not round-trip
            text = yaml.dump(cassette_dict, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)
        return text


def _set_length(response: dict[str, Any], body: str) -> None:
    headers = response.get("headers") or {}
    for name in list(headers):
        if name.lower() == "content-length":
            headers[name] = [str(len(body.encode("utf-8")))]


READABLE_YAML: Final = _ReadableYaml()
"""The serializer every harness VCR registers as ``yaml`` (so the file suffix stays ``.yaml``)."""
