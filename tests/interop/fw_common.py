"""What the framework agents of the `fw_*` cases share (fw_pydantic_agent.py, fw_openai_agent.py,
fw_langchain_agent.py): their command line and the one JSON line each prints.

    python fw_X_agent.py URL ORDER TRIES TIMEOUT

Each agent calls create_shipment(order_id=ORDER) through its framework's MCP client over
Streamable HTTP at URL, the way the framework's agent loop does, and calls it again after an
error while it has TRIES left (a scripted model decides, the one the framework offers for
tests, or the framework's tool wrapper called as its agent loop calls it). TIMEOUT is the
per-call read timeout in seconds, or `default` for the framework's own. It prints one JSON line
and exits 0: {"framework", "attempts": [{"kind": "result" | "tool_error" | "exception",
"type", "text"}], "http", "seconds", "fatal"}. `http` lists the requests the framework's HTTP
client (httpx or httpx2, watched from outside: the framework is not changed) sent, in order,
each {"method", "resume" (it carried Last-Event-ID), "status", "type" (the answer's content
type)} or {"method", "resume", "error"} when no answer came.
"""

import asyncio
import importlib
import json
import re
import sys
import time


def parse_args() -> tuple[str, str, int, float | None]:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    url, order, tries, timeout = sys.argv[1:]
    return url, order, int(tries), (None if timeout == "default" else float(timeout))


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaves(e)]
    return [exc]


def cause_chain(exc: BaseException) -> list[BaseException]:
    """The exception and what caused it, outermost first."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 8:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


HTTP: list[dict] = []


def watch_http() -> None:
    """Records in HTTP what each request the HTTP client libraries send gets back (the head:
    an event stream's events come later)."""
    for name in ("httpx", "httpx2"):
        try:
            client = importlib.import_module(name).AsyncClient
        except (ImportError, AttributeError):
            continue

        async def send(self, request, *args, _send=client.send, **kwargs):
            seen = {"method": request.method, "resume": "last-event-id" in request.headers}
            try:
                response = await _send(self, request, *args, **kwargs)
            except BaseException as exc:
                HTTP.append(seen | {"error": type(exc).__name__})
                raise
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            HTTP.append(seen | {"status": response.status_code, "type": kind})
            return response

        client.send = send


def plain(text: str) -> str:
    """A text without what differs between two runs of the same session: URLs, ports,
    session ids, object addresses, durations."""
    text = re.sub(r"https?://[^\s'\"]+", "URL", text)
    text = re.sub(r"\b(0x)?[0-9a-f]{8,}\b", "ID", text)
    text = re.sub(r"\d+(\.\d+)?\s*(s|seconds|ms)\b", "N s", text)
    return text[:300]


def exception(exc: BaseException) -> dict:
    """An exception as an attempt: its type and text, and the HTTP status it carries."""
    leaf = leaves(exc)[0]
    chain = [e for c in cause_chain(leaf) for e in leaves(c)]
    status = next((getattr(getattr(e, "response", None), "status_code", None) for e in chain
                   if getattr(getattr(e, "response", None), "status_code", None)), None)
    return {"kind": "exception", "type": type(leaf).__name__, "text": plain(str(leaf)),
            "causes": [type(e).__name__ for e in chain[1:]], "http_status": status}


class Run:
    """The attempts of one run and the line it prints."""

    def __init__(self, framework: str) -> None:
        self.out = {"framework": framework, "attempts": [], "http": HTTP, "seconds": None, "fatal": None}
        self.t0 = time.monotonic()
        watch_http()

    def attempt(self, kind: str, text: str, type_: str | None = None) -> None:
        self.out["attempts"].append({"kind": kind, "type": type_, "text": plain(text)})

    def fail(self, exc: BaseException) -> None:
        self.out["fatal"] = exception(exc)

    def print(self) -> None:
        self.out["seconds"] = round(time.monotonic() - self.t0, 2)
        print(json.dumps(self.out), flush=True)


def run_agent(run: Run, main) -> None:
    """Runs the coroutine function `main`, and prints what `run` saw, whatever happened."""
    try:
        asyncio.run(main())
    except BaseException as exc:  # noqa: BLE001 - every way of failing is reported, not raised
        if isinstance(exc, KeyboardInterrupt):
            raise
        run.fail(exc)
    run.print()
