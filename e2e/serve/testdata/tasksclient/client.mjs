// The TypeScript SDK's task client against warden (e2e/serve/tasks_test.go
// TestTasksTypeScriptSDK). Usage:
//   node client.mjs SDK_DIR (stdio WARDEN CONFIG | http URL)
// It prints one JSON line per step; the Go test judges them.
const [sdk, transportKind, a, b] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { CallToolResultSchema } = await import(`${sdk}/dist/esm/types.js`);
let transport;
if (transportKind === 'stdio') {
  const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);
  transport = new StdioClientTransport({ command: a, args: ['serve', '--config', b], stderr: 'ignore' });
} else {
  const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);
  transport = new StreamableHTTPClientTransport(new URL(a));
}
const out = (step, value) => console.log(JSON.stringify({ step, value }));
const client = new Client({ name: 'e2e-ts', version: '1' }, { defaultTaskPollInterval: 50 });
await client.connect(transport);
out('capabilities', client.getServerCapabilities()?.tasks ?? null);
const tools = await client.listTools();
out('taskSupport', tools.tools.find(t => t.name === 'taskloop')?.execution?.taskSupport ?? null);

const messages = [];
for await (const m of client.experimental.tasks.callToolStream(
  { name: 'taskloop', arguments: { iterations: 3, work: 1000 } }, CallToolResultSchema, { task: { ttl: 60000 } })) {
  messages.push(m.type === 'result' ? { type: 'result', text: m.result.content?.[0]?.text }
    : m.type === 'error' ? { type: 'error', error: String(m.error) }
    : { type: m.type, status: m.task.status, statusMessage: m.task.statusMessage });
}
out('completed', messages);

let cancelled = null;
for await (const m of client.experimental.tasks.callToolStream(
  { name: 'taskloop', arguments: { iterations: 1000000000, work: 20000 } }, CallToolResultSchema, { task: { ttl: 60000 } })) {
  if (m.type === 'taskStatus' && (m.task.statusMessage ?? '').startsWith('iteration ') && !cancelled) {
    cancelled = await client.experimental.tasks.cancelTask(m.task.taskId);
    out('cancel', { status: cancelled.status, statusMessage: cancelled.statusMessage });
  }
  if (m.type === 'error') out('cancelledStream', String(m.error));
}
await client.close();
