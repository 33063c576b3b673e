// Case `fs`: the TypeScript SDK's Client + StdioClientTransport -> toolstorm-tui mcp ->
// @modelcontextprotocol/server-filesystem ROOT (run with node from the local node_modules).
//
// The scenario times out the first write_file before it reaches the server; the agent retries
// it once. It also reads the file back, asks for a file outside ROOT (the server's own isError)
// and lists ROOT. The recording must hold every call with its tool and status, the timed-out
// write as injected and not executed, one `file` commit, and `check` must pass; the file must
// really be in ROOT.
//
// run.sh copies this file next to its node_modules (ES modules resolve packages from their own
// folder) and sets TOOLSTORM_BIN, FS_SERVER, INTEROP_CASE_DIR and INTEROP_HERE.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const BIN = process.env.TOOLSTORM_BIN;
const FS_SERVER = process.env.FS_SERVER;
const CASE_DIR = process.env.INTEROP_CASE_DIR;
const SCENARIO = join(process.env.INTEROP_HERE, "fs-write-timeout.json");
const CASSETTE = join(CASE_DIR, "fs.json");
const SIDECAR = join(CASE_DIR, "fs.mcp.json");
mkdirSync(join(CASE_DIR, "root"), { recursive: true });
const ROOT = realpathSync(join(CASE_DIR, "root"));
const FILE = join(ROOT, "hello.txt");
const CONTENT = "written through toolstorm-tui by the TypeScript SDK\n";

const why = [];
const check = (ok, text) => {
  if (!ok) why.push(text);
  return ok;
};
const say = (text) => process.stderr.write(`  ${text}\n`);
const textOf = (r) => (r.content ?? []).map((b) => b.text ?? "").join(" ");

async function agent() {
  const transport = new StdioClientTransport({
    command: BIN,
    args: ["mcp", SCENARIO, "--record", CASSETTE, "--", process.execPath, FS_SERVER, ROOT],
  });
  const client = new Client({ name: "interop-fs-agent", version: "1.0.0" });
  await client.connect(transport);
  try {
    const server = client.getServerVersion();
    say(`server ${server?.name} ${server?.version}`);
    const names = new Set((await client.listTools()).tools.map((t) => t.name));
    for (const t of ["write_file", "read_text_file", "list_directory", "list_allowed_directories"]) {
      check(names.has(t), `tools/list lacks ${t}`);
    }

    const dirs = await client.callTool({ name: "list_allowed_directories", arguments: {} });
    check(!dirs.isError, `list_allowed_directories failed: ${textOf(dirs)}`);

    // The agent retries a failed write once.
    const args = { path: FILE, content: CONTENT };
    const first = await client.callTool({ name: "write_file", arguments: args });
    say(`write_file #1: isError=${first.isError} ${JSON.stringify(textOf(first).slice(0, 100))}`);
    check(first.isError === true, "the first write_file was not answered with isError (no timeout injected?)");
    const second = await client.callTool({ name: "write_file", arguments: args });
    say(`write_file #2: isError=${second.isError} ${JSON.stringify(textOf(second).slice(0, 100))}`);
    check(!second.isError, `the retried write_file failed: ${textOf(second)}`);

    const back = await client.callTool({ name: "read_text_file", arguments: { path: FILE } });
    check(!back.isError && textOf(back) === CONTENT, `read_text_file gave ${JSON.stringify(textOf(back))}`);

    const denied = await client.callTool({ name: "read_text_file", arguments: { path: "/etc/hostname" } });
    say(`read_text_file outside ROOT: isError=${denied.isError} ${JSON.stringify(textOf(denied).slice(0, 100))}`);
    check(denied.isError === true, "reading a file outside ROOT was not refused by the server");

    const listing = await client.callTool({ name: "list_directory", arguments: { path: ROOT } });
    check(textOf(listing).includes("[FILE] hello.txt"), `list_directory gave ${JSON.stringify(textOf(listing))}`);
  } finally {
    await client.close();
  }
}

function assertRecording() {
  check(existsSync(FILE) && readFileSync(FILE, "utf8") === CONTENT, `${FILE} does not exist with the written content`);

  const load = (p) => {
    try {
      return JSON.parse(readFileSync(p, "utf8"));
    } catch {
      return {};
    }
  };
  const cassette = load(CASSETTE);
  const calls = cassette.calls ?? [];
  const effects = cassette.effects ?? [];
  const want = [
    ["list_allowed_directories", "ok"],
    ["write_file", "error"],
    ["write_file", "ok"],
    ["read_text_file", "ok"],
    ["read_text_file", "error"],
    ["list_directory", "ok"],
  ];
  const got = calls.map((c) => [c.tool, c.status]);
  check(
    JSON.stringify(got) === JSON.stringify(want),
    `cassette calls (tool, status) are ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`,
  );
  const [w1, w2] = calls.filter((c) => c.tool === "write_file");
  if (w1) {
    check(
      w1.injected === true && w1.executed === false && w1.kind === "timeout" && w1.fault === "write-timeout",
      `the timed-out write_file is not recorded as injected and not executed: ${JSON.stringify({
        injected: w1.injected, executed: w1.executed, kind: w1.kind, fault: w1.fault })}`,
    );
  }
  if (w2) check(w2.injected === false && w2.executed === true, "the retried write_file is not recorded as executed");
  const refused = calls.filter((c) => c.tool === "read_text_file")[1];
  if (refused) check(refused.injected === false, "the server's own refusal is recorded as an injected fault");
  const files = effects.filter((e) => e.name === "file");
  check(
    files.length === 1 && files[0].key === FILE,
    `expected one \`file\` commit keyed by ${FILE}, found ${JSON.stringify(files.map((e) => e.key))}`,
  );
  const side = load(SIDECAR).calls ?? [];
  check(side.length === calls.length, `the sidecar has ${side.length} call(s), the cassette ${calls.length}`);

  const verdict = spawnSync(BIN, ["check", CASSETTE], { encoding: "utf8" });
  say(`check: ${(verdict.stdout + verdict.stderr).trim().replaceAll("\n", " | ")}`);
  check(verdict.status === 0, `\`toolstorm-tui check\` exited ${verdict.status}, expected 0 (the rule fired, one commit)`);
}

try {
  await agent();
} catch (e) {
  why.push(`the agent failed: ${e?.message ?? e}`);
}
assertRecording();
for (const w of why) console.log(`why: ${w}`);
process.exit(why.length ? 1 : 0);
