// SPDX-License-Identifier: Apache-2.0
// bench/mcp.sh's client: N calls of run_code print(1) through sbx-mcp
// (stdio) and through the daemon's /mcp (Streamable HTTP), from the
// official MCP TypeScript SDK's client, one at a time, alternating; prints
// p50 and p95 of each call's round trip, and of a bare job through the
// socket by sbxctl for comparison.
// Usage: node mcp-client.mjs SBX_MCP SOCKET URL TOKEN N
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [bin, sock, url, token, nArg] = process.argv.slice(2);
const n = Number(nArg);
const clients = {};
for (const [k, t] of [
        ["stdio", new StdioClientTransport({ command: bin, args: ["--socket", sock], stderr: "inherit" })],
        ["http", new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } })],
]) {
        clients[k] = new Client({ name: "sbx-bench", version: "1" });
        await clients[k].connect(t);
}
const call = (c) => c.callTool({ name: "run_code", arguments: { language: "python", code: "print(1)" } });
for (const c of Object.values(clients)) for (let i = 0; i < 3; i++) await call(c); // warm up
const lat = { stdio: [], http: [] };
for (let i = 0; i < n; i++)
        for (const [k, c] of Object.entries(clients)) {
                const t = performance.now();
                const r = await call(c);
                lat[k].push(performance.now() - t);
                if (r.isError || r.structuredContent.stdout !== "1\n") throw new Error(JSON.stringify(r));
        }
const pct = (v, p) => v.slice().sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(v.length * p))];
for (const [k, v] of Object.entries(lat))
        console.log(`  ${k.padEnd(6)} run_code print(1): p50 ${pct(v, 0.5).toFixed(1)} ms  p95 ${pct(v, 0.95).toFixed(1)} ms  (${v.length} calls)`);
for (const c of Object.values(clients)) await c.close();
