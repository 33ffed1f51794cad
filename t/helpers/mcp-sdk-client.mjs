// SPDX-License-Identifier: Apache-2.0
// t/mcp.bats: sbx-mcp over stdio, or the daemon's /mcp over Streamable
// HTTP, driven by the official MCP TypeScript SDK's client. Prints one
// JSON object of what each call returned.
// Usage: node mcp-sdk-client.mjs stdio SBX_MCP SOCKET
//        node mcp-sdk-client.mjs http URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, a, b] = process.argv.slice(2);
const transport =
        mode === "http"
                ? new StreamableHTTPClientTransport(new URL(a), { requestInit: { headers: { Authorization: "Bearer " + b } } })
                : new StdioClientTransport({ command: a, args: ["--socket", b], stderr: "inherit" });
const client = new Client({ name: "sbx-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), protocol: transport._protocolVersion ?? null };

out.tools = (await client.listTools()).tools.map((t) => t.name);

const py = await client.callTool({
        name: "run_code",
        arguments: {
                language: "python",
                code: "import json, os\nprint(6 * 7)\nopen('out.txt', 'w').write('made in the sandbox')\n" +
                        "json.dump({'answer': 42}, open(os.environ['SBX_RESULT'], 'w'))",
                artifacts: ["out.txt"],
        },
});
out.python = { isError: py.isError, structured: py.structuredContent };

const node = await client.callTool({ name: "run_code", arguments: { language: "node", code: "console.log(20 + 22)" } });
out.node = { isError: node.isError, structured: node.structuredContent };

const art = await client.callTool({ name: "get_artifact", arguments: { job: py.structuredContent.job, path: "out.txt" } });
out.artifact = art.structuredContent;

const fail = await client.callTool({ name: "run_code", arguments: { language: "python", code: "raise SystemExit(3)" } });
out.fail = { isError: fail.isError, exit_code: fail.structuredContent.exit_code };

const missing = await client.callTool({ name: "get_artifact", arguments: { job: py.structuredContent.job, path: "none.txt" } });
out.missing = { isError: missing.isError, text: missing.content[0].text };

try {
        await client.callTool({ name: "no_such_tool", arguments: {} });
        out.unknown = "answered";
} catch (e) {
        out.unknown = e.code ?? String(e);
}

// A long run, cancelled once it has said something: the SDK sends
// notifications/cancelled.
const ac = new AbortController();
const progress = [];
// Over HTTP too the call with a progressToken is answered as a stream:
// progress comes as it does over stdio. (Should none come, the run is
// cancelled after a while all the same, and the test sees no progress.)
const timer = setTimeout(() => ac.abort("enough"), 20000);
try {
        await client.callTool({ name: "run_code", arguments: { language: "sh", code: "echo begun; sleep 60" } }, undefined, {
                signal: ac.signal,
                timeout: 60000,
                onprogress: (p) => {
                        progress.push(p.message);
                        if (p.message === "output") ac.abort("enough");
                },
        });
        out.cancel = "not cancelled";
} catch (e) {
        out.cancel = "cancelled";
}
clearTimeout(timer);
out.progress = progress;
await client.close();
console.log(JSON.stringify(out));
