"""The SDKs' HTTP layer over a recording: an ``httpx2`` transport, and botocore's ``before-send``.

No global patching, so it works next to anything else a test does. The SDK always addresses the
provider's real host; when recording, ``upstream`` (the emulator's base URL, say) is where
requests are really sent, so the cassette names ``api.openai.com`` whether it was recorded
against OpenAI or against ``127.0.0.1:53117``. Replies reach the SDK split at their event
boundaries, while recording as on every replay.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast
from urllib.parse import urlsplit

import httpx2

import harness.recording._clients as backends
from harness.recording._recorded._cassette_recording import Recording
from harness.recording._vcr import EventChunks, reply_parts


def _upstream_url(url: str, upstream: str | None) -> str:
    if not upstream:
        return url
    target, parts = urlsplit(upstream), urlsplit(url)
    path = target.path.rstrip("/") + parts.path
    return parts._replace(scheme=target.scheme, netloc=target.netloc, path=path).geturl()


def _on_loopback(upstream: str | None) -> bool:
    host = urlsplit(upstream).hostname if upstream else None
    return host is not None and (host == "localhost" or host.startswith("127.") or host == "::1")


class _InStep:
    """The requests ``new_episodes`` answered from the cassette, still to be shown to ``upstream``.

    A scripted upstream (the emulator) answers each request with the next turn of its script; the
    requests the cassette answered never reached it, so the first new request would get its first
    turn again. Before a new request is sent, the replayed ones are sent too (their replies
    dropped), and the script is where a whole recording would have left it. Only for an upstream
    on loopback that the test named (``upstream=``): a provider, or a gateway read from
    ``OPENAI_BASE_URL``..., is never sent a request twice.
    """

    def __init__(self, recording: Recording, upstream: str | None, keep_in_step: bool | None) -> None:
        wanted = _on_loopback(upstream) if keep_in_step is None else keep_in_step
        self.active = bool(upstream) and wanted and recording.mode == "new_episodes"
        self.pending: list[Any] = []

    def replayed(self, request: Any) -> None:
        if self.active:
            self.pending.append(request)

    def take(self) -> list[Any]:
        pending, self.pending = self.pending, []
        return pending


class CassetteTransport(httpx2.AsyncBaseTransport):
    """The SDK client's HTTP layer: answers from the recording, or sends upstream and records."""

    def __init__(self, recording: Recording, upstream: str | None = None, keep_in_step: bool | None = None) -> None:
        self.recording = recording
        self.upstream = upstream
        self._real: dict[int, httpx2.AsyncHTTPTransport] = {}
        self._in_step = _InStep(recording, upstream, keep_in_step)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        from vcr.request import Request as VcrRequest

        body = await request.aread()
        vcr_request = VcrRequest(request.method, str(request.url), body, dict(request.headers))
        played = self.recording.respond(vcr_request)
        if played is None:
            for replayed, replayed_body in self._in_step.take():
                await self._send(replayed, replayed_body)
            played = self.recording.record(vcr_request, await self._send(request, body))
        else:
            self._in_step.replayed((request, body))
        headers, chunks = reply_parts(played)
        status = played["status"]
        message = status.get("message") or ""
        return httpx2.Response(
            int(status["code"]),
            headers=headers,
            stream=cast("httpx2.AsyncByteStream", EventChunks.for_httpx(httpx2, chunks)),  # both kinds, by its bases
            request=request,
            extensions={"reason_phrase": message.encode("ascii", "replace")} if message else {},
        )

    async def _send(self, request: httpx2.Request, body: bytes) -> dict[str, Any]:
        loop = id(asyncio.get_running_loop())
        real = self._real.get(loop)
        if real is None:  # a connection pool belongs to one event loop
            real = self._real[loop] = httpx2.AsyncHTTPTransport()
        url = _upstream_url(str(request.url), self.upstream)
        # Host is the upstream's (from the URL), not the provider's: a server checks it is addressed
        sent = [(name, value) for name, value in request.headers.multi_items() if name.lower() != "host"]
        forwarded = httpx2.Request(request.method, url, headers=sent, content=body)
        try:
            response = await real.handle_async_request(forwarded)
        except Exception as exc:
            raise self.recording.unsent(request.method, url, exc) from None
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)  # what an async transport hands back
        try:
            content = b"".join([part async for part in stream])
        finally:
            await response.aclose()
        headers: dict[str, list[str]] = {}
        for name, value in response.headers.multi_items():
            headers.setdefault(name, []).append(value)
        return {
            "status": {"code": response.status_code, "message": response.reason_phrase},
            "headers": headers,
            "body": {"string": content},
        }

    async def aclose(self) -> None:
        for real in self._real.values():
            try:
                await real.aclose()
            except Exception:  # a pool of an event loop that is gone: nothing left to release
                pass
        self._real.clear()


def attach_botocore(
    client: Any, recording: Recording, upstream: str | None = None, keep_in_step: bool | None = None
) -> None:
    """Make a boto3 client's requests go through ``recording`` (its ``before-send`` event)."""
    from botocore.awsrequest import AWSResponse
    from vcr.request import Request as VcrRequest

    in_step = _InStep(recording, upstream, keep_in_step)

    def send(request: Any, **_: Any) -> Any:
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode("utf-8")
        headers = {
            str(name): value.decode("latin-1") if isinstance(value, bytes) else str(value)
            for name, value in request.headers.items()
        }
        vcr_request = VcrRequest(request.method, request.url, body, headers)
        played = recording.respond(vcr_request)
        if played is None:
            try:
                for replayed in in_step.take():
                    _send_boto(replayed, upstream)
                sent = _send_boto(request, upstream)
            except Exception as exc:
                raise recording.unsent(request.method, _upstream_url(request.url, upstream), exc) from None
            played = recording.record(vcr_request, sent)
        else:
            in_step.replayed(copy.copy(request))
        pairs, chunks = reply_parts(played)
        merged: dict[str, str] = {}
        for name, value in pairs:
            merged[name] = f"{merged[name]}, {value}" if name in merged else value
        # botocore reads the headers as a mapping; its stub asks for the HTTPHeaders it builds itself
        return AWSResponse(request.url, int(played["status"]["code"]), cast("Any", merged), EventChunks(chunks))

    client.meta.events.register("before-send.bedrock-runtime.*", send)


def _send_boto(request: Any, upstream: str | None) -> dict[str, Any]:
    from botocore.httpsession import URLLib3Session

    forwarded = copy.copy(request)
    forwarded.url = _upstream_url(request.url, upstream)
    session = URLLib3Session(timeout=backends.TIMEOUT_SECONDS)  # type: ignore[arg-type]  # the stub says int; urllib3 takes seconds as a float
    try:
        response = session.send(forwarded)
        content = response.content
    finally:
        session.close()
    return {
        "status": {"code": response.status_code, "message": ""},
        "headers": {str(name): [str(value)] for name, value in response.headers.items()},
        "body": {"string": content},
    }
