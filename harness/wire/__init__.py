"""What each provider's wire is, written once, beneath recording, the emulator and the agents campaign.

Those three packages sit in one layer and may not import each other, so what all of them need
lives here, a layer below (DESIGN section 2): the routes (``_routes``: one table of provider,
endpoint, path and stream, and a recorded URL read back into one), the credential vocabulary
(``_credentials``: header and query names, URL userinfo, the forms a value takes), reading
Content-Encoding (``_encodings``), SSE framing (``_sse``), NDJSON lines (``_ndjson``) and AWS event-stream framing
(``_eventstream``), each one codec for writing and reading, streamed fields joined per choice,
call and block (``_joins``), the one atomic file writer (``_atomic``) and ``clip`` (``_clip``).
Lazy (``harness._lazy_exports``): the pytest plugin loads recording's facade with every session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import _lazy_exports

if TYPE_CHECKING:
    from harness.wire._atomic import target_of, write_atomic
    from harness.wire._clip import clip
    from harness.wire._credentials import (
        CREDENTIAL_HEADERS,
        CREDENTIAL_QUERY_PARAMS,
        KEY_HEADERS,
        PLACEHOLDER_HEADERS,
        credential_query_names,
        has_userinfo,
        is_credential_header,
        is_credential_query,
        key_header,
        scrub_headers,
        scrub_url,
        value_forms,
    )
    from harness.wire._encodings import (
        COMPRESSED,
        GZIP_MAGIC,
        content_codings,
        gunzipped,
        header_values,
        outer_coding,
    )
    from harness.wire._eventstream import (
        EVENTSTREAM,
        decode_frame,
        encode_frame,
        event_frame,
        eventstream_messages,
        eventstream_payload,
        exception_frame,
        with_eventstream_crc,
    )
    from harness.wire._joins import joined_fields, string_fields
    from harness.wire._ndjson import NDJSON, ndjson_lines, ndjson_whole
    from harness.wire._routes import (
        ENDPOINTS,
        ROUTES,
        SERVED_ENDPOINTS,
        STREAMING_ENDPOINTS,
        WITHOUT_BACKEND,
        Destination,
        Route,
        RouteError,
        path_pattern,
        route,
        route_by_path,
        routes_of,
        surface_prefix,
    )
    from harness.wire._sse import SSE, is_sse, sse_data, sse_events, sse_frame, sse_whole

_EXPORTS = {
    "target_of": "._atomic",
    "write_atomic": "._atomic",
    "clip": "._clip",
    "CREDENTIAL_HEADERS": "._credentials",
    "CREDENTIAL_QUERY_PARAMS": "._credentials",
    "KEY_HEADERS": "._credentials",
    "PLACEHOLDER_HEADERS": "._credentials",
    "key_header": "._credentials",
    "credential_query_names": "._credentials",
    "has_userinfo": "._credentials",
    "is_credential_header": "._credentials",
    "is_credential_query": "._credentials",
    "scrub_headers": "._credentials",
    "scrub_url": "._credentials",
    "value_forms": "._credentials",
    "COMPRESSED": "._encodings",
    "GZIP_MAGIC": "._encodings",
    "content_codings": "._encodings",
    "gunzipped": "._encodings",
    "header_values": "._encodings",
    "outer_coding": "._encodings",
    "EVENTSTREAM": "._eventstream",
    "decode_frame": "._eventstream",
    "encode_frame": "._eventstream",
    "event_frame": "._eventstream",
    "eventstream_messages": "._eventstream",
    "eventstream_payload": "._eventstream",
    "exception_frame": "._eventstream",
    "with_eventstream_crc": "._eventstream",
    "NDJSON": "._ndjson",
    "ndjson_lines": "._ndjson",
    "ndjson_whole": "._ndjson",
    "joined_fields": "._joins",
    "string_fields": "._joins",
    "ENDPOINTS": "._routes",
    "ROUTES": "._routes",
    "SERVED_ENDPOINTS": "._routes",
    "STREAMING_ENDPOINTS": "._routes",
    "WITHOUT_BACKEND": "._routes",
    "Destination": "._routes",
    "Route": "._routes",
    "RouteError": "._routes",
    "path_pattern": "._routes",
    "route": "._routes",
    "route_by_path": "._routes",
    "routes_of": "._routes",
    "surface_prefix": "._routes",
    "SSE": "._sse",
    "is_sse": "._sse",
    "sse_data": "._sse",
    "sse_events": "._sse",
    "sse_frame": "._sse",
    "sse_whole": "._sse",
}
__all__ = [
    "COMPRESSED",
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_QUERY_PARAMS",
    "Destination",
    "ENDPOINTS",
    "EVENTSTREAM",
    "GZIP_MAGIC",
    "KEY_HEADERS",
    "NDJSON",
    "PLACEHOLDER_HEADERS",
    "ROUTES",
    "Route",
    "RouteError",
    "SSE",
    "SERVED_ENDPOINTS",
    "STREAMING_ENDPOINTS",
    "WITHOUT_BACKEND",
    "clip",
    "content_codings",
    "credential_query_names",
    "decode_frame",
    "encode_frame",
    "event_frame",
    "eventstream_messages",
    "eventstream_payload",
    "exception_frame",
    "gunzipped",
    "has_userinfo",
    "header_values",
    "is_credential_header",
    "is_credential_query",
    "is_sse",
    "key_header",
    "joined_fields",
    "ndjson_lines",
    "ndjson_whole",
    "outer_coding",
    "path_pattern",
    "route",
    "route_by_path",
    "routes_of",
    "scrub_headers",
    "scrub_url",
    "sse_data",
    "sse_events",
    "sse_frame",
    "sse_whole",
    "string_fields",
    "surface_prefix",
    "target_of",
    "value_forms",
    "with_eventstream_crc",
    "write_atomic",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
