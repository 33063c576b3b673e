"""What the naive shipping agents (http_client.py on the Python SDK 1.x, http_client_2026.py on
2.x) share: the command line `URL [TOKEN]`, the run under a 60 s bound, and the one JSON line
they print whatever happened, with `fatal` naming what stopped the run early."""

import asyncio
import json
import sys
from typing import Awaitable, Callable


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which the SDKs' task groups raise."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaf_errors(e)]
    return [exc]


def describe(exc: BaseException, status_error: type) -> str:
    """An HTTP status error (the SDK's httpx flavour) as `HTTP 401 Unauthorized`, else its type
    and message."""
    if isinstance(exc, status_error):
        return f"HTTP {exc.response.status_code} {exc.response.reason_phrase}"
    return f"{type(exc).__name__}: {exc}"


def run(doc: str, out: dict, agent: Callable[[str, str | None, dict], Awaitable[None]],
        status_error: type) -> None:
    """Reads `URL [TOKEN]` (exit 2 with `doc` on bad usage), runs `agent(url, token, out)` for
    at most 60 s, and prints `out` as one JSON line; every way of failing lands in `fatal`."""
    if len(sys.argv) not in (2, 3):
        print(doc, file=sys.stderr)
        sys.exit(2)
    url, token = sys.argv[1], (sys.argv[2] if len(sys.argv) == 3 else None)
    try:
        asyncio.run(asyncio.wait_for(agent(url, token, out), timeout=60))
    except BaseException as exc:  # noqa: BLE001 - every way of failing is reported, not raised
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["fatal"] = "; ".join(describe(e, status_error) for e in leaf_errors(exc))[:500]
    print(json.dumps(out), flush=True)
