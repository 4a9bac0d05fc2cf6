"""The judge's one HTTP call: a chat completion POSTed with aiohttp on the caller's event loop.

Failures are raised as the openai SDK's own exception types (APITimeoutError, APIConnectionError, RateLimitError,
InternalServerError, ...), built from the status, headers and body the SDK would have seen, so that the judge's
retries and error messages read them as they read the SDK's.

Why not the SDK's request pipeline for this one call: measured here (2 cores, 4,000 calls at concurrency 128 against
tests/judge_server.py, bench/bench_judge.py), `AsyncOpenAI.post` costs about 1.2 ms of CPU per call over aiohttp
(building the request options, URL and headers, httpx's models, pydantic parsing of the answer) and 2.4 ms over
httpx, whose connection pool scans every connection on each request; this POST costs about 0.4 ms. The judge makes
hundreds of calls a second, so those layers decided how far one process goes. Everything else that talks to an
endpoint (the connection test, the Batch API) uses the SDK's client.

The SDK itself (about 0.4 s of CPU and 30 MB to import) and httpx2 are loaded only when a call fails, to build its
exception, and httpx2 when the endpoint or its proxy is reached over TLS, for the SDK's SSL context: a run whose
calls all succeed over plain HTTP (a judge on the machine or the cluster) never loads them. A client may be told of
each refusal (its status and headers) before that import (`refused`): a budget shared with other processes hears of
a process's first 429 at once, not 0.4 s later.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from common.lazy_modules import lazy

if TYPE_CHECKING:
    import httpx2
    import openai
else:
    httpx2 = lazy("httpx2")  # the openai SDK's HTTP library: its exceptions carry an httpx2 request and response
    openai = lazy("openai")

USER_AGENT = "PersonaSteerBench-judge"


def _status_errors() -> dict[int, type[openai.APIStatusError]]:
    """The SDK's exception for each HTTP status it names (openai._client._make_status_error), others by range."""
    return {
        400: openai.BadRequestError,
        401: openai.AuthenticationError,
        403: openai.PermissionDeniedError,
        404: openai.NotFoundError,
        409: openai.ConflictError,
        422: openai.UnprocessableEntityError,
        429: openai.RateLimitError,
    }


_sdk_loaded = False


def load_errors() -> None:
    """Import the SDK's exceptions (once a call has failed)."""
    global _sdk_loaded
    openai.APIStatusError  # noqa: B018 - reading an attribute of the stand-in imports the module
    httpx2.Request  # noqa: B018
    _sdk_loaded = True


async def _errors_loaded() -> None:
    """Load the SDK's exceptions on a thread the first time a call fails: an import of 0.4 s of CPU on the event loop
    would stall every other call in flight (their reads and timeouts) meanwhile."""
    if not _sdk_loaded:
        await asyncio.to_thread(load_errors)


class ChatClient:
    """POSTs chat completions to one OpenAI-compatible endpoint; made (open()), used and closed on one event loop."""

    def __init__(self, endpoint: str, api_key: str, timeout_s: float, connections: int,
                 refused: Callable[[int, Mapping[str, str]], None] | None = None) -> None:
        self.url = endpoint.rstrip("/") + "/chat/completions"
        self.refused = refused  # told of a non-2xx answer while the SDK is not loaded yet
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json", "User-Agent": USER_AGENT}
        # HTTP(S)_PROXY and NO_PROXY apply, as they do to the SDK's client; read once here, since aiohttp's
        # trust_env reads them (and ~/.netrc) on a thread at every request.
        try:
            proxy, proxy_auth = get_env_proxy_for_url(URL(self.url))
        except LookupError:
            proxy, proxy_auth = None, None
        # TLS as the SDK's client does it: certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set. No request
        # of this client goes anywhere else (no redirects), so over plain HTTP no SSL context is ever used.
        tls = self.url.startswith("https:") or str(proxy or "").startswith("https:")
        connector = aiohttp.TCPConnector(limit=connections, ssl=httpx2.create_ssl_context() if tls else True)
        self._session = aiohttp.ClientSession(connector=connector,
                                              timeout=aiohttp.ClientTimeout(total=timeout_s), proxy=proxy,
                                              proxy_auth=proxy_auth, headers=self._headers,
                                              cookie_jar=aiohttp.DummyCookieJar())

    @classmethod
    async def open(cls, endpoint: str, api_key: str, timeout_s: float, connections: int,
                   refused: Callable[[int, Mapping[str, str]], None] | None = None) -> ChatClient:
        """A client made on the running event loop (aiohttp binds its connections to it); `refused(status, headers)`
        is called for an HTTP error answer before the SDK's exceptions are first loaded to raise it."""
        return cls(endpoint, api_key, timeout_s, connections, refused)

    async def complete(self, data: bytes) -> dict:
        """The JSON object of a 2xx answer to the request body `data` (JSON); raises an openai.APIError subclass for
        anything else."""
        try:
            # No redirects: the key is sent to the configured endpoint and nowhere else (a 3xx is an error).
            async with self._session.post(self.url, data=data, allow_redirects=False) as response:
                content = await response.read()
                status, headers = response.status, response.headers
        except TimeoutError as exc:  # aiohttp's timeouts are TimeoutErrors
            await _errors_loaded()
            raise openai.APITimeoutError(request=self._request(data)) from exc
        except (aiohttp.ClientError, OSError) as exc:
            await _errors_loaded()
            raise openai.APIConnectionError(request=self._request(data)) from exc
        if not 200 <= status < 300:
            if self.refused is not None and not _sdk_loaded:
                self.refused(status, headers)
            await _errors_loaded()
            raise _status_error(status, headers, content, self._request(data))
        try:
            answer = json.loads(content)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            await _errors_loaded()
            invalid = httpx2.Response(status, headers=list(headers.items()), content=content,
                                      request=self._request(data))
            raise openai.APIResponseValidationError(invalid, content.decode("utf-8", "replace")[:500],
                                                    message="the judge's answer is not a JSON object")
        return answer

    async def close(self) -> None:
        """Close the connections."""
        await self._session.close()

    def _request(self, data: bytes) -> httpx2.Request:
        """The request as the SDK's exceptions carry it (only built when a call fails)."""
        return httpx2.Request("POST", self.url, headers=self._headers, content=data)


def _status_error(status: int, headers: Mapping[str, str], content: bytes,
                  request: httpx2.Request) -> openai.APIStatusError:
    """The SDK's exception for an HTTP error answer: its class by status, its body the JSON `error` object when
    there is one, its message as the SDK words it."""
    text = content.decode("utf-8", "replace")
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text or None
    if isinstance(body, dict):
        body = body.get("error", body)
    response = httpx2.Response(status, headers=list(headers.items()), content=content, request=request)
    error = _status_errors().get(status) or (openai.InternalServerError if status >= 500 else openai.APIStatusError)
    return error(f"Error code: {status} - {body}", response=response, body=body)
