// An MCP server built with @modelcontextprotocol/ext-apps: its `registerAppTool` and
// `registerAppResource` helpers on the server side, and its `App` class in the interface (the
// package's browser bundle, inlined: an app is one HTML document). It imports nothing of
// Glassbox: it stands for a team's own server. Served over stdio (`node ext-apps/server.mjs`).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import {
  RESOURCE_MIME_TYPE,
  registerAppResource,
  registerAppTool,
} from "@modelcontextprotocol/ext-apps/server";
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

const VIEW = "ui://forecast/view.html";

// The bundle is an ES module ending in `export{…, x as App}`: inlined, its export clause
// becomes a binding the app's own script below uses.
function appClass() {
  const path = createRequire(import.meta.url).resolve("@modelcontextprotocol/ext-apps/app-with-deps");
  const bundle = readFileSync(path, "utf8");
  const exported = bundle.match(/export\s*\{([^}]*)\};?\s*$/);
  const name = exported?.[1].match(/(\w+)\s+as\s+App\b/)?.[1];
  if (!exported || !name) throw new Error("the ext-apps bundle no longer exports App as expected");
  return `${bundle.slice(0, exported.index)}\nconst App = ${name};\n`;
}

const html = `<!doctype html>
<html><body>
<h1>Forecast</h1>
<p id="input">no input yet</p>
<p id="result">no result yet</p>
<p id="host">not connected</p>
<button id="again" type="button">Again</button>
<p id="again-result"></p>
<script type="module">
${appClass()}
const text = (result) => (result.content || []).map((block) => block.text).join(" ");
const app = new App({ name: "forecast", version: "1.0.0" });
app.ontoolinput = (params) => {
  document.getElementById("input").textContent = JSON.stringify(params.arguments);
};
app.ontoolresult = (result) => {
  document.getElementById("result").textContent = text(result);
};
document.getElementById("again").addEventListener("click", async () => {
  const result = await app.callServerTool({ name: "refresh_forecast", arguments: { city: "Rome" } });
  document.getElementById("again-result").textContent = text(result);
});
await app.connect();
const context = app.getHostContext() || {};
document.getElementById("host").textContent = "connected to " + (app.getHostVersion()?.name || "?") + ", theme " + context.theme;
</script>
</body></html>`;

const server = new McpServer({ name: "forecast", version: "1.0.0" });

registerAppTool(
  server,
  "show_forecast",
  {
    title: "Forecast",
    description: "Shows the weather forecast for a city.",
    inputSchema: z.object({ city: z.string() }),
    _meta: { ui: { resourceUri: VIEW } },
  },
  async ({ city }) => ({ content: [{ type: "text", text: `Sunny in ${city}` }] }),
);

registerAppTool(
  server,
  "refresh_forecast",
  {
    title: "Refresh the forecast",
    description: "Reloads the forecast; called by its view.",
    inputSchema: z.object({ city: z.string() }),
    _meta: { ui: { resourceUri: VIEW, visibility: ["app"] } },
  },
  async ({ city }) => ({ content: [{ type: "text", text: `Still sunny in ${city}` }] }),
);

registerAppResource(server, "Forecast view", VIEW, {}, async () => ({
  contents: [{ uri: VIEW, mimeType: RESOURCE_MIME_TYPE, text: html }],
}));

await server.connect(new StdioServerTransport());
