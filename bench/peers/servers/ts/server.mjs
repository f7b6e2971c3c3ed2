// The TypeScript SDK's echo server of warden's peers benchmark: the echo
// tool of tools-wasm/echo (same input and output schemas, same result)
// served over stdio the way the SDK's README does. make bench-peers
// installs the pinned SDK (package-lock.json) beside a copy of this file.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "ts", version: "1" });
server.registerTool(
  "echo",
  {
    description: "Returns the given text unchanged.",
    inputSchema: { text: z.string() },
    outputSchema: { text: z.string() },
  },
  async ({ text }) => ({
    content: [{ type: "text", text }],
    structuredContent: { text },
  }),
);
await server.connect(new StdioServerTransport());
