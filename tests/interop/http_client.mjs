/**
 * A naive shipping agent on the TypeScript SDK's Streamable HTTP client.
 *
 *     node http_client.mjs URL [TOKEN]
 *
 * The twin of http_client.py: initializes, lists the tools, calls create_shipment({order_id: "A1"})
 * and, when that answers isError or throws McpError (a JSON-RPC error or the 10 s timeout), calls
 * it once more; then list_shipments. Prints one JSON line to stdout with the same keys as the
 * Python client and exits 0 whatever the server did; `fatal` names what stopped the run early
 * (e.g. "HTTP 401 ..."). TOKEN is sent as `Authorization: Bearer TOKEN`. Closes with
 * client.close() only, as most agents do: no DELETE of the session. ES modules resolve packages
 * from their own folder, so run a copy placed next to the node_modules holding
 * @modelcontextprotocol/sdk. Exits 2 on bad usage only.
 */
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const CALL_TIMEOUT_MS = 10_000;
const [url, token] = process.argv.slice(2);
if (!url || process.argv.length > 4) {
  console.error("usage: node http_client.mjs URL [TOKEN]");
  process.exit(2);
}

const sdkPackage = new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url);
const out = {
  sdk: `typescript @modelcontextprotocol/sdk ${JSON.parse(readFileSync(sdkPackage, "utf8")).version}`,
  server: null, protocol: null, session_id: null, tools: null, attempts: [], shipments: null, fatal: null,
};

const textOf = (r) => (r.content ?? []).map((b) => b.text ?? "").join(" ");
const attemptOf = (r) => ({ isError: Boolean(r.isError), text: textOf(r), structured: r.structuredContent ?? null });
/** The result's structuredContent, else its text parsed as JSON, else {}. */
function structured(r) {
  if (r.structuredContent) return r.structuredContent;
  try { return JSON.parse(textOf(r)); } catch { return {}; }
}
function describe(err) {
  if (err instanceof StreamableHTTPError) return `HTTP ${err.code}: ${err.message.replace(/^Streamable HTTP error: /, "")}`;
  return `${err?.name ?? "Error"}: ${err?.message ?? err}`;
}

const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "toolstorm-http-interop", version: "0.0.0" });
const options = { timeout: CALL_TIMEOUT_MS };

async function agent() {
  await client.connect(transport, options);
  const info = client.getServerVersion();
  out.server = `${info?.name} ${info?.version}`;
  out.protocol = transport.protocolVersion ?? null;
  out.session_id = transport.sessionId ?? null;
  out.tools = (await client.listTools(undefined, options)).tools.map((t) => t.name).sort();

  for (let i = 0; i < 2; i++) { // the first try, and one retry after an error
    try {
      const r = await client.callTool({ name: "create_shipment", arguments: { order_id: "A1" } }, undefined, options);
      out.attempts.push(attemptOf(r));
      if (!r.isError) break;
    } catch (err) {
      if (!(err instanceof McpError)) throw err;
      out.attempts.push({ error: err.message, code: err.code });
    }
  }

  const listed = await client.callTool({ name: "list_shipments", arguments: {} }, undefined, options);
  out.shipments = structured(listed).shipments ?? null;
  if (listed.isError) out.fatal = `list_shipments: ${textOf(listed)}`;
}

const overall = setTimeout(() => { out.fatal = "timed out after 60 s"; finish(); }, 60_000);
function finish() {
  console.log(JSON.stringify(out));
  process.exit(0);
}
try {
  await agent();
} catch (err) {
  out.fatal = describe(err).slice(0, 500);
}
clearTimeout(overall);
await client.close().catch(() => {});
finish();
