"""What a Responses reply leaves stored on the server, read from its body: its id (what the next
request's ``previous_response_id`` names) and its output items by id (what an ``item_reference``
names). The campaign reads its served replies with it, the seeded campaign its recorded ones, so
both resolve a Responses history the way OpenAI does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


def _json_or_none(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def referenced(item: Any, items: Mapping[str, Any]) -> Any:
    """``item``, or the stored output item an ``item_reference`` names (as it was, when unknown)."""
    if isinstance(item, Mapping) and item.get("type") == "item_reference" and item.get("id") in items:
        return items[item["id"]]
    return item


def output_items(body: bytes) -> dict[str, Any]:
    """The output items a Responses reply (whole, or streamed as ``response.output_item.done``
    events) gave, by id: an item a stream cut before it was done is not there, as OpenAI would not
    have stored it either."""
    whole = _json_or_none(body)
    if isinstance(whole, dict) and isinstance(whole.get("output"), list):
        found: list[Any] = whole["output"]
    else:  # a stream (a JSON body has no line that starts with data:)
        events = (_json_or_none(line[5:]) for line in body.splitlines() if line.startswith(b"data:"))
        found = [e.get("item") for e in events if isinstance(e, dict) and e.get("type") == "response.output_item.done"]
    return {item["id"]: item for item in found if isinstance(item, dict) and isinstance(item.get("id"), str)}


_RESPONSE_ID = re.compile(rb'"id":\s*"(resp_[A-Za-z0-9_-]+)"')


def response_id(body: bytes) -> str | None:
    """The Responses API id a reply's body (whole or streamed) names: what the next request's
    ``previous_response_id`` refers to, served or recorded."""
    found = _RESPONSE_ID.search(body)
    return found.group(1).decode() if found else None
