// A server on the TypeScript SDK v2 (`@modelcontextprotocol/server`), which serves protocol
// 2026-07-28 and, from the same factory, the 2025 era, for tests/peers_ts2.rs.
//
// `node ts2_server.cjs NPM_ROOT stdio` serves stdio (`serveStdio`: the opening exchange picks
// the era); `node ts2_server.cjs NPM_ROOT http` serves Streamable HTTP at `/mcp`
// (`createMcpHandler`: 2026-07-28 per request, the 2025 era through its default stateless
// fallback, which cannot send the client requests of its own: no elicitation there);
// `http-sessions` routes the 2025 era (`isLegacyRequest`) to a sessionful
// `WebStandardStreamableHTTPServerTransport` per session instead, as the SDK documents for
// keeping a 2025 deployment beside the modern handler. Both bind 127.0.0.1, port 0, and print
// `PORT <n>` once they listen. NPM_ROOT is the directory whose `node_modules` holds the SDK.
//
// Tools: `add(a, b)`, `shout(text)`, `confirm(question)` (asks the client to confirm: an
// `elicitation/create` request in the legacy era, an `input_required` result in the modern
// one; text `confirmed: true|false`), `era()` (the era the instance serves). Resource
// `note://today`. Prompt `review(code)`.

'use strict';

const path = require('node:path');
const http = require('node:http');
const { createRequire } = require('node:module');

const [root, mode] = process.argv.slice(2);
if (!root || !['stdio', 'http', 'http-sessions'].includes(mode)) {
    process.stderr.write('usage: ts2_server.cjs NPM_ROOT stdio|http|http-sessions\n');
    process.exit(2);
}
const load = createRequire(path.join(path.resolve(root), 'package.json'));
const {
    McpServer,
    createMcpHandler,
    inputRequired,
    acceptedContent,
    isLegacyRequest,
    WebStandardStreamableHTTPServerTransport
} = load('@modelcontextprotocol/server');
// The zod the SDK itself resolves (another package of NPM_ROOT may hoist an older one).
const { z } = createRequire(load.resolve('@modelcontextprotocol/server'))('zod');

const CONFIRMATION = {
    type: 'object',
    properties: { confirmed: { type: 'boolean' } },
    required: ['confirmed']
};

function build(ctx) {
    const era = ctx && ctx.era ? ctx.era : 'legacy';
    const server = new McpServer(
        { name: 'ts2-peer', version: '2.4.0' },
        {
            capabilities: { tools: {}, resources: {}, prompts: {} },
            instructions: 'A TypeScript SDK v2 server used by mcp-blocking tests.'
        }
    );
    server.registerTool(
        'add',
        { description: 'Adds two integers.', inputSchema: z.object({ a: z.number().int(), b: z.number().int() }) },
        async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })
    );
    server.registerTool(
        'shout',
        { description: 'Upper-cases its text.', inputSchema: z.object({ text: z.string() }) },
        async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() + '!' }] })
    );
    server.registerTool(
        'confirm',
        { description: 'Asks the client to confirm.', inputSchema: z.object({ question: z.string() }) },
        async ({ question }, extra) => {
            if (era === 'modern') {
                const answer = acceptedContent(extra.mcpReq.inputResponses, 'confirm');
                if (answer === undefined) {
                    return inputRequired({
                        inputRequests: {
                            confirm: inputRequired.elicit({ message: question, requestedSchema: CONFIRMATION })
                        }
                    });
                }
                return { content: [{ type: 'text', text: `confirmed: ${answer.confirmed === true}` }] };
            }
            const result = await extra.mcpReq.elicitInput({ mode: 'form', message: question, requestedSchema: CONFIRMATION });
            const confirmed = result.action === 'accept' && result.content && result.content.confirmed === true;
            return { content: [{ type: 'text', text: `confirmed: ${confirmed}` }] };
        }
    );
    server.registerTool('era', { description: 'The era this instance serves.' }, async () => ({
        content: [{ type: 'text', text: era }]
    }));
    server.registerResource('today', 'note://today', { mimeType: 'text/plain', description: "Today's note." }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'remember the milk' }]
    }));
    server.registerPrompt(
        'review',
        { description: 'Asks for a code review.', argsSchema: z.object({ code: z.string() }) },
        ({ code }) => ({
            messages: [{ role: 'user', content: { type: 'text', text: `Please review:\n\n${code}` } }]
        })
    );
    return server;
}

if (mode === 'stdio') {
    const { serveStdio } = load('@modelcontextprotocol/server/stdio');
    serveStdio(build);
} else {
    const handler = createMcpHandler(build, { legacy: mode === 'http' ? 'stateless' : 'reject' });
    const sessions = new Map();
    // `http-sessions`: a 2025-era request goes to its session's transport (a new one for
    // `initialize`), everything else to the modern handler.
    const serve = async request => {
        if (mode === 'http') return handler.fetch(request);
        let body;
        if (request.method === 'POST') body = await request.clone().json().catch(() => undefined);
        if (!(await isLegacyRequest(request, body))) return handler.fetch(request, { parsedBody: body });
        const sid = request.headers.get('mcp-session-id');
        if (sid) {
            const transport = sessions.get(sid);
            if (!transport) return new Response('unknown session', { status: 404 });
            return transport.handleRequest(request, { parsedBody: body });
        }
        const transport = new WebStandardStreamableHTTPServerTransport({
            sessionIdGenerator: () => require('node:crypto').randomUUID(),
            onsessioninitialized: id => {
                sessions.set(id, transport);
            },
            onsessionclosed: id => {
                sessions.delete(id);
            }
        });
        await build({ era: 'legacy' }).connect(transport);
        return transport.handleRequest(request, { parsedBody: body });
    };
    // node:http in front of the web-standard handler.
    const srv = http.createServer(async (req, res) => {
        try {
            const chunks = [];
            for await (const c of req) chunks.push(c);
            const body = Buffer.concat(chunks);
            const headers = new Headers();
            for (const [k, v] of Object.entries(req.headers)) {
                if (Array.isArray(v)) v.forEach(x => headers.append(k, x));
                else if (v !== undefined) headers.set(k, v);
            }
            const request = new Request(`http://${req.headers.host}${req.url}`, {
                method: req.method,
                headers,
                body: ['GET', 'HEAD'].includes(req.method) ? undefined : body
            });
            const response = await serve(request);
            const out = {};
            response.headers.forEach((v, k) => {
                out[k] = v;
            });
            res.writeHead(response.status, out);
            if (response.body) {
                const reader = response.body.getReader();
                req.on('close', () => reader.cancel().catch(() => {}));
                for (;;) {
                    const { done, value } = await reader.read();
                    if (done) break;
                    res.write(value);
                }
            }
            res.end();
        } catch (e) {
            process.stderr.write(`ts2 peer: ${e && e.stack ? e.stack : e}\n`);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    srv.listen(0, '127.0.0.1', () => {
        process.stdout.write(`PORT ${srv.address().port}\n`);
    });
}
