#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-mcp(1), the Model Context Protocol server on stdio, and the same
# protocol at the daemon's /mcp (Streamable HTTP, sbx-supervisord(8) HTTP
# API), against a real daemon. The JSON-RPC of both revisions it speaks
# (the initialize handshake of 2025-11-25, and 2026-07-28's per-request
# _meta with server/discover) and its refusals; then the official
# TypeScript SDK's client (from npm) over stdio and over HTTP: tools
# listed, Python and Node.js run, an artifact read, a failing program as
# isError, a long run cancelled; and the MCP Inspector's CLI mode.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        cp "$SBX_BUILDDIR/supervisor/sbx-mcp" "$SBX_STAGE/bin/"
        PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        TOK=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        TOK_RO=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        export PORT TOK TOK_RO
        sup_config "socket_mode = 0666"
        cat >> "$SUP_DIR/sup.conf" <<EOC

[http]
listen = 127.0.0.1:$PORT
mcp_origin = http://localhost:6274

[token.agent]
tenant = admin
sha256 = $(printf %s "$TOK" | sha256sum | cut -d' ' -f1)

[token.reader]
tenant = admin
sha256 = $(printf %s "$TOK_RO" | sha256sum | cut -d' ' -f1)
scope = read
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

# mcp LINE...: each argument one message to sbx-mcp; prints what it answers
mcp() {
        printf '%s\n' "$@" | timeout 60 "$SBX_STAGE/bin/sbx-mcp" --socket "$SUP_SOCK"
}

@test "the initialize handshake: a version it speaks is kept, another gets 2025-11-25; tools/list has schemas" {
        run -0 mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
                '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
                '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
                '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}}' \
                '{"jsonrpc":"2.0","id":4,"method":"ping"}'
        [ "${#lines[@]}" = 4 ]
        [ "$(jq -r .result.protocolVersion <<< "${lines[0]}")" = 2025-06-18 ]
        [ "$(jq -r .result.serverInfo.name <<< "${lines[0]}")" = sbx-mcp ]
        [ "$(jq -c '[.result.tools[].name]' <<< "${lines[1]}")" = '["run_code","run_bundle","get_artifact","session_create","session_exec","session_put_file","session_get_file","session_close"]' ]
        [ "$(jq -r '.result.tools[0].inputSchema.required | join(",")' <<< "${lines[1]}")" = language,code ]
        [ "$(jq -r '.result.tools[0].outputSchema.type' <<< "${lines[1]}")" = object ]
        [ "$(jq -r .result.protocolVersion <<< "${lines[2]}")" = 2025-11-25 ]
        [ "$(jq -c .result <<< "${lines[3]}")" = '{}' ]
}

@test "2026-07-28: server/discover and per-request _meta; results say resultType; another version is -32022" {
        m='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
        run -0 mcp "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\",\"params\":{$m}}" \
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{$m}}" \
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{$m,\"name\":\"run_code\",\"arguments\":{\"language\":\"sh\",\"code\":\"echo modern\"}}}" \
                '{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2030-01-01"}}}'
        [ "$(jq -c .result.supportedVersions <<< "${lines[0]}")" = '["2026-07-28"]' ]
        [ "$(jq -r .result.resultType <<< "${lines[0]}")" = complete ]
        [ "$(jq -r .result.cacheScope <<< "${lines[0]}")" = public ]
        [ "$(jq -r .result.resultType <<< "${lines[1]}")" = complete ]
        [ "$(jq -r .result.ttlMs <<< "${lines[1]}")" -gt 0 ]
        # the unsupported version is answered at once; the run ends after
        [ "$(jq -r .error.code <<< "${lines[2]}")" = -32022 ]
        [ "$(jq -c .error.data.supported <<< "${lines[2]}")" = '["2026-07-28"]' ]
        [ "$(jq -r .result.structuredContent.stdout <<< "${lines[3]}")" = modern ]
        [ "$(jq -r .result.resultType <<< "${lines[3]}")" = complete ]
}

@test "run_code: stdout, stderr, exit, the \$SBX_RESULT value and artifacts; a failing program is isError, not a protocol error" {
        run -0 mcp '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"import sys, json, os\nprint(\"out\")\nprint(\"err\", file=sys.stderr)\nopen(\"r.txt\",\"w\").write(\"x\")\njson.dump([1,2], open(os.environ[\"SBX_RESULT\"], \"w\"))","artifacts":["r.txt"],"files":[{"path":"in.txt","content":"given"}]}}}' \
                '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"sh","code":"cat in.txt; exit 7","files":[{"path":"in.txt","content":"given"}]}}}'
        r1=$(jq -c 'select(.id == 1)' <<< "$output")
        r2=$(jq -c 'select(.id == 2)' <<< "$output")
        [ "$(jq -r .result.isError <<< "$r1")" = false ]
        [ "$(jq -r .result.structuredContent.stdout <<< "$r1")" = out ]
        [ "$(jq -r .result.structuredContent.stderr <<< "$r1")" = err ]
        [ "$(jq -r .result.structuredContent.exit_code <<< "$r1")" = 0 ]
        [ "$(jq -c .result.structuredContent.value <<< "$r1")" = '[1,2]' ]
        [ "$(jq -r '.result.structuredContent.artifacts[0].path' <<< "$r1")" = r.txt ]
        # the text content is the same object, for clients without structuredContent
        [ "$(jq -r '.result.content[0].text | fromjson | .stdout' <<< "$r1")" = out ]
        [ "$(jq -r .result.isError <<< "$r2")" = true ]
        [ "$(jq -r .result.structuredContent.exit_code <<< "$r2")" = 7 ]
        [ "$(jq -r .result.structuredContent.stdout <<< "$r2")" = given ]
}

@test "refusals: bad params are -32602, an unknown method -32601, junk -32700, the daemon's refusal an isError result" {
        run -0 mcp '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"cobol","code":"x"}}}' \
                '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}' \
                '{"jsonrpc":"2.0","id":3,"method":"resources/list"}' \
                'this is not json' \
                '[1,2]' \
                '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_artifact","arguments":{"job":"j00000000000000000000","path":"a"}}}' \
                '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"sh","code":"true","timeout_s":999999}}}'
        [ "$(jq -r 'select(.id == 1) | .error.code' <<< "$output")" = -32602 ]
        [ "$(jq -r 'select(.id == 2) | .error.message' <<< "$output")" = "unknown tool 'nope'" ]
        [ "$(jq -r 'select(.id == 3) | .error.code' <<< "$output")" = -32601 ]
        [ "$(jq -r 'select(.id == null) | .error.code' <<< "$output" | sort | tr '\n' ' ')" = "-32600 -32700 " ]
        [ "$(jq -r 'select(.id == 4) | .result.isError' <<< "$output")" = true ]
        [[ "$(jq -r 'select(.id == 4) | .result.content[0].text' <<< "$output")" == E_NOT_FOUND:* ]]
        # the daemon still decides its limits: an isError the model can read
        [ "$(jq -r 'select(.id == 5) | .result.isError' <<< "$output")" = true ]
}

@test "sessions: create, put a file, exec in it, read the file back, close" {
        run -0 mcp '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session_create","arguments":{}}}'
        s=$(jq -r .result.structuredContent.session <<< "$output")
        [ "$(jq -r .result.structuredContent.state <<< "$output")" = ready ]
        run -0 mcp "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"session_put_file\",\"arguments\":{\"session\":\"$s\",\"path\":\"a.txt\",\"content\":\"abc\"}}}" \
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"session_exec\",\"arguments\":{\"session\":\"$s\",\"language\":\"sh\",\"code\":\"tr a-c A-C < a.txt > b.txt; cat b.txt\"}}}"
        [ "$(jq -r 'select(.id == 3) | .result.structuredContent.stdout' <<< "$output")" = ABC ]
        run -0 mcp "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"session_get_file\",\"arguments\":{\"session\":\"$s\",\"path\":\"b.txt\"}}}" \
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"session_close\",\"arguments\":{\"session\":\"$s\"}}}"
        [ "$(jq -r 'select(.id == 4) | .result.structuredContent.content' <<< "$output")" = ABC ]
        [ "$(jq -r 'select(.id == 5) | .result.isError' <<< "$output")" = false ]
}

# newest_job_killed: the tenant's newest job ends killed within 10 s
newest_job_killed() {
        local i st
        for i in $(seq 100); do
                st=$(ctl ls --limit 1 | awk 'NR == 2 { print $2 }')
                [ "$st" = killed ] && return 0
                sleep 0.1
        done
        echo "the newest job is $st, not killed"
        return 1
}

# sdk: the MCP SDK installed from npm into the stage (once per file), or a
# skip saying why not
sdk() {
        command -v node >/dev/null && command -v npm >/dev/null || skip "node and npm are not installed (Debian packages nodejs npm)"
        SDK="$SBX_STAGE/npm"
        if [ ! -f "$SDK/ok" ]; then
                mkdir -p "$SDK"
                if ! timeout 300 npm install --prefix "$SDK" --no-audit --no-fund '@modelcontextprotocol/sdk@1' \
                        '@modelcontextprotocol/inspector' > "$SDK/install.log" 2>&1; then
                        tail -5 "$SDK/install.log"
                        skip "npm could not install @modelcontextprotocol/sdk and inspector (registry unreachable?)"
                fi
                touch "$SDK/ok"
        fi
        cp "$SBX_SRCDIR/t/helpers/mcp-sdk-client.mjs" "$SDK/"
}

# check_sdk_run: what mcp-sdk-client.mjs printed ($output) holds
check_sdk_run() {
        echo "$output"
        r=${lines[-1]}
        [ "$(jq -r .server.name <<< "$r")" = sbx-mcp ]
        [ "$(jq -r '.tools | length' <<< "$r")" = 8 ]
        [ "$(jq -r .python.isError <<< "$r")" = false ]
        [ "$(jq -r .python.structured.stdout <<< "$r")" = 42 ]
        [ "$(jq -r .python.structured.value.answer <<< "$r")" = 42 ]
        [ "$(jq -r .node.structured.stdout <<< "$r")" = 42 ]
        [ "$(jq -r .artifact.content <<< "$r")" = "made in the sandbox" ]
        [ "$(jq -r .fail.isError <<< "$r")" = true ]
        [ "$(jq -r .fail.exit_code <<< "$r")" = 3 ]
        [ "$(jq -r .missing.isError <<< "$r")" = true ]
        [ "$(jq -r .unknown <<< "$r")" = -32602 ]
        [ "$(jq -r .cancel <<< "$r")" = cancelled ]
        # the cancelled run's job was killed, not left to sleep
        newest_job_killed
}

@test "the official TypeScript SDK client over stdio: tools, Python and Node.js, an artifact, isError, a cancelled run" {
        sdk
        run -0 timeout 120 node "$SDK/mcp-sdk-client.mjs" stdio "$SBX_STAGE/bin/sbx-mcp" "$SUP_SOCK"
        check_sdk_run
        # progress came as the job started and wrote
        [ "$(jq -r '.progress[0]' <<< "$r")" = started ]
}

@test "the official TypeScript SDK client over Streamable HTTP at /mcp: the same, as the token's tenant" {
        sdk
        run -0 timeout 120 node "$SDK/mcp-sdk-client.mjs" http "http://127.0.0.1:$PORT/mcp" "$TOK"
        check_sdk_run
        # the jobs are the token's: the audit log says so
        grep '"event":"request"' "$SUP_DIR/audit.log" | grep '"via":"http"' | grep -q '"token":"agent"'
        # the long run's progress came on its stream (text/event-stream)
        [ "$(jq -r '.progress[0]' <<< "$r")" = started ]
        [ "$(jq -r '.progress | index("output")' <<< "$r")" != null ]
}

# post TOKEN BODY [CURL ARGS]: POST /mcp; the body, then "HTTP CODE"
post() {
        local tok=$1 body=$2
        shift 2
        curl -sS -w '\nHTTP %{http_code}' ${tok:+-H "Authorization: Bearer $tok"} -H 'Content-Type: application/json' \
                -H 'Accept: application/json, text/event-stream' --data-binary "$body" "$@" "http://127.0.0.1:$PORT/mcp"
}

@test "/mcp: JSON answers, 202 for notifications; no token 401, a read token 403, a foreign Origin 403, GET 405, batches 400" {
        run -0 post "$TOK" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}'
        [ "$(jq -r .result.protocolVersion <<< "${lines[0]}")" = 2025-11-25 ]
        [ "${lines[-1]}" = "HTTP 200" ]
        run -0 post "$TOK" '{"jsonrpc":"2.0","method":"notifications/initialized"}'
        [ "${lines[-1]}" = "HTTP 202" ]
        run -0 post "$TOK" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print(2**10)"}}}'
        [ "$(jq -r .result.structuredContent.stdout <<< "${lines[0]}")" = 1024 ]
        run -0 post "" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
        [ "${lines[-1]}" = "HTTP 401" ]
        run -0 post "$TOK_RO" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
        [ "${lines[-1]}" = "HTTP 403" ]
        run -0 post "$TOK" '{"jsonrpc":"2.0","id":4,"method":"tools/list"}' -H 'Origin: http://evil.example'
        [[ "$output" == *"Origin 'http://evil.example' is not an mcp_origin"*"HTTP 403" ]]
        run -0 post "$TOK" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' -H 'Origin: http://localhost:6274'
        [ "${lines[-1]}" = "HTTP 200" ]
        run -0 post "$TOK" '[{"jsonrpc":"2.0","id":6,"method":"tools/list"}]'
        [[ "$output" == *'"code":-32600'*"HTTP 400" ]]
        run -0 post "$TOK" '{"jsonrpc":'
        [[ "$output" == *'"code":-32700'*"HTTP 400" ]]
        run -0 curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOK" "http://127.0.0.1:$PORT/mcp"
        [ "$output" = 405 ]
}

@test "/mcp: a tool call with a progressToken is an event stream: progress as the job goes, then its result" {
        run -0 post "$TOK" '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p7"},"name":"run_code","arguments":{"language":"sh","code":"echo one; sleep 0.3; echo two"}}}' -D "$SUP_DIR/sse.headers"
        grep -qi '^content-type: text/event-stream' "$SUP_DIR/sse.headers"
        [ "${lines[-1]}" = "HTTP 200" ]
        # each event a data line: progress (token p7) first, the response (id 7) last
        data=$(grep '^data: ' <<< "$output" | sed 's/^data: //')
        [ "$(head -1 <<< "$data" | jq -r .method)" = notifications/progress ]
        [ "$(head -1 <<< "$data" | jq -r .params.progressToken)" = p7 ]
        [ "$(head -1 <<< "$data" | jq -r .params.message)" = started ]
        [ "$(tail -1 <<< "$data" | jq -r .id)" = 7 ]
        [ "$(tail -1 <<< "$data" | jq -r .result.structuredContent.stdout)" = "one
two" ]
        # without text/event-stream in Accept: one JSON answer, as before
        run -0 curl -sS -w '\nHTTP %{http_code}' -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
                -H 'Accept: application/json' --data-binary '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"progressToken":"p8"},"name":"run_code","arguments":{"language":"sh","code":"echo x"}}}' \
                "http://127.0.0.1:$PORT/mcp"
        [ "$(jq -r .result.structuredContent.stdout <<< "${lines[0]}")" = x ]
        # a client that hangs up on the stream has its job cancelled
        run -28 timeout 10 curl -sS -m 2 -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
                -H 'Accept: text/event-stream, application/json' --data-binary \
                '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":{"progressToken":9},"name":"run_code","arguments":{"language":"sh","code":"sleep 60"}}}' \
                "http://127.0.0.1:$PORT/mcp"
        [[ "$output" == *"data: "*'"progressToken":9'* ]]
        newest_job_killed
}

@test "/mcp: a caller that hangs up during a tool call has its job cancelled" {
        # curl gives up after 2 s (exit 28) and closes the connection
        run -28 timeout 10 curl -sS -m 2 -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' --data-binary \
                '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"sh","code":"sleep 60"}}}' \
                "http://127.0.0.1:$PORT/mcp"
        newest_job_killed
}

@test "the MCP Inspector's CLI mode lists the tools and runs Python through sbx-mcp" {
        sdk
        insp="$SDK/node_modules/.bin/mcp-inspector"
        [ -x "$insp" ]
        run -0 timeout 120 "$insp" --cli "$SBX_STAGE/bin/sbx-mcp" --socket "$SUP_SOCK" --method tools/list
        [ "$(jq -r '[.tools[].name] | join(" ")' <<< "$output")" = "run_code run_bundle get_artifact session_create session_exec session_put_file session_get_file session_close" ]
        run -0 timeout 120 "$insp" --cli "$SBX_STAGE/bin/sbx-mcp" --socket "$SUP_SOCK" --method tools/call --tool-name run_code \
                --tool-arg language=python --tool-arg 'code=print(6*7)'
        [ "$(jq -r .structuredContent.stdout <<< "$output")" = 42 ]
        [ "$(jq -r .isError <<< "$output")" = false ]
}
