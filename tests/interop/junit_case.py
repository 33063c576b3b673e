"""Case `junit`: `check --junit FILE` read by a JUnit reader nobody here wrote (junitparser, from
PyPI), as a CI system reads it.

On cassettes/incident.json (the lost acknowledgement and the duplicate shipment): one test case
per check, the failed one's message naming the check and its detail, its text the calls behind
it (call #3 committed the shipment again; call #2 first), the passing ones without a failure, and
the suite's properties naming the recording and its seed. And `campaign --junit` on
cassettes/lost-ack-campaign.json: one case per run and seed, the failing runs' failures naming
the calls behind them.
"""

from junitparser import Failure, JUnitXml

from interop import CASE_DIR, HERE, Failures, run_bin, say

f = Failures()
cassette = (HERE / ".." / ".." / "cassettes" / "incident.json").resolve()
out = CASE_DIR / "check.junit.xml"
done = run_bin("check", str(cassette), "--junit", str(out))
f.check(done.returncode == 1, f"check exited {done.returncode}, expected 1 (the duplicate)")
lines = [line[2:] for line in done.stdout.splitlines() if line[:1] in ("✓", "✗")]
if f.check(out.is_file(), "no JUnit file written"):
    xml = JUnitXml.fromfile(str(out))
    suites = list(xml)
    f.check(len(suites) == 1, f"{len(suites)} suites, expected 1")
    cases = [c for s in suites for c in s]
    f.check(len(cases) == len(lines) and all(line.startswith(f"{c.name}: ") for line, c in zip(lines, cases)),
            f"cases {[c.name for c in cases]} are not the checks {lines}")
    failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
    f.check([c.name for c in failed] == ["No duplicate side effects"],
            f"failed cases: {[c.name for c in failed]}")
    for c in failed:
        (failure,) = [r for r in c.result if isinstance(r, Failure)]
        say(f"failure: {failure.message!r} / {failure.text!r}")
        f.check("1 duplicate effect(s) across 2 commits" in (failure.message or ""), f"message: {failure.message}")
        f.check("call #3 committed shipment order-1729 again; call #2 committed it first" in (failure.text or ""),
                f"the failure does not name the calls: {failure.text}")
    props = {p.name: p.value for s in suites for p in s.properties()}
    f.check(props.get("seed") is not None and str(cassette) in (props.get("recording") or ""),
            f"suite properties: {props}")
    f.check(xml.tests == len(lines) and xml.failures == 1, f"totals: {xml.tests} tests, {xml.failures} failures")

# A campaign: one case per run and seed; a failing run's failure names the calls behind it.
campaign = (HERE / ".." / ".." / "cassettes" / "lost-ack-campaign.json").resolve()
out = CASE_DIR / "campaign.junit.xml"
done = run_bin("campaign", str(campaign), "--junit", str(out), join=False)
# Runs of the bundled campaign failed: exit 1, as a test runner, with the file written all the same.
f.check(done.returncode == 1, f"campaign exited {done.returncode}, expected 1: {done.stderr[-300:]}")
failing = sum(1 for line in done.stdout.splitlines() if line.rstrip().endswith("FAIL"))
if f.check(out.is_file(), "no campaign JUnit file written"):
    xml = JUnitXml.fromfile(str(out))
    cases = [c for s in xml for c in s]
    f.check(len(cases) == 10, f"{len(cases)} cases, expected the campaign's 10 runs")
    failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
    f.check(len(failed) == failing and failing > 0, f"{len(failed)} failed cases, the table shows {failing}")
    for c in failed:
        (failure,) = [r for r in c.result if isinstance(r, Failure)]
        f.check("committed shipment o-1 again" in (failure.text or ""), f"{c.name}: {failure.text}")
f.done()
