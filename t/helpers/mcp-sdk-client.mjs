// SPDX-License-Identifier: Apache-2.0
// t/mcp.bats: sbx-mcp driven by the official MCP TypeScript SDK's client
// over stdio. Prints one JSON object of what each call returned.
// Usage: node mcp-sdk-client.mjs SBX_MCP SOCKET   (NODE_PATH: the SDK)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, sock] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["--socket", sock], stderr: "inherit" });
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
out.progress = progress;
await client.close();
console.log(JSON.stringify(out));
