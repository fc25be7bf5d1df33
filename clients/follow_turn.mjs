// Follows a live turn of a Glassbox server as a program would, with the protocol's own client:
// @ag-ui/client's HttpAgent (AG-UI) or the `ai` package's chat transport and UI message stream
// reader (the AI SDK's resume: reconnectToStream). It connects, lets go of the connection right
// after the first frame of type `dropAfter` (mid tool call), says so, waits for a line on
// stdin, and resumes with Last-Event-ID set to the last frame it had. It tells the test on
// stdout, one JSON object a line:
//   {"dropped": "<id>"}  the first connection is closed; the client waits for "resume"
//   {"resumed": true}    the resumed connection gave its first frame
//   {"result": {...}}    the frames the client had on each connection, and what it rebuilt
//   node follow_turn.mjs '{"wire": "agui", "url": "http://…/agui/", "token": "…",
//                          "dropAfter": "TOOL_CALL_START"}'
import { createInterface } from "node:readline";
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const options = JSON.parse(process.argv[2]);
const commands = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

function parseFrame(block) {
  const frame = { id: null, data: null };
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) frame.id = line.slice(4);
    else if (line.startsWith("data: ")) frame.data = line.slice(6);
  }
  frame.data = frame.data === "[DONE]" ? frame.data : JSON.parse(frame.data);
  return frame;
}

// `dropAfter` is a frame's type, or "CUSTOM:<name>" for an AG-UI custom event of that name.
function dropsAfter(data) {
  const [type, name] = options.dropAfter.split(":");
  return data?.type === type && (name === undefined || data.name === name);
}

// The connections so far, each the frames the client had on it. A connection's body reaches the
// client frame by frame through this tap; on the first connection it ends right after the
// frame to drop after, and the request is aborted: the server sees the client go.
const connections = [];
let lastId = null;
let resumedAfter = null;

async function tappedFetch(url, init) {
  const frames = [];
  const first = connections.length === 0;
  connections.push(frames);
  const abort = new AbortController();
  const response = await fetch(url, { ...init, signal: abort.signal });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = "";
  const tap = new TransformStream({
    transform(bytes, controller) {
      buffer += decoder.decode(bytes, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame = parseFrame(block);
        frames.push(frame);
        if (frame.id) lastId = frame.id;
        if (!first && frames.length === 1) say({ resumed: true });
        controller.enqueue(encoder.encode(`${block}\n\n`));
        if (first && dropsAfter(frame.data)) {
          controller.terminate();
          abort.abort();
          return;
        }
      }
    },
  });
  return new Response(response.body.pipeThrough(tap), {
    status: response.status,
    headers: response.headers,
  });
}

async function resumeWhenTold() {
  resumedAfter = lastId;
  say({ dropped: lastId });
  const { value } = await commands.next();
  if (value !== "resume") throw new Error(`expected "resume", got ${value}`);
}

const auth = { Authorization: `Token ${options.token}`, Accept: "text/event-stream" };

// AG-UI's client POSTs a RunAgentInput; Glassbox serves a turn that is already running, so
// the request is a GET (requestInit is the HttpAgent's hook for the request it makes).
class JoiningAgent extends HttpAgent {
  requestInit() {
    return { method: "GET", headers: { ...this.headers }, signal: this.abortController.signal };
  }
}

async function followAgui() {
  const agent = new JoiningAgent({ url: options.url, headers: auth, fetch: tappedFetch });
  const ends = [];
  const errors = [];
  const handlers = {
    onRunFinishedEvent: ({ event }) => { ends.push(event.outcome?.type ?? "success"); },
    onRunErrorEvent: ({ event }) => { ends.push(`error:${event.code}`); },
  };
  for (const connection of ["first", "resumed"]) {
    if (connection === "resumed") {
      await resumeWhenTold();
      agent.headers = { ...auth, "Last-Event-ID": lastId };
    }
    try {
      await agent.runAgent({}, handlers);
    } catch (error) {
      errors.push(String(error.message ?? error));
    }
  }
  const text = agent.messages
    .filter((m) => m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content)
    .join("");
  const toolCalls = agent.messages.flatMap((m) => m.toolCalls ?? []).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
  const results = Object.fromEntries(
    agent.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, JSON.parse(m.content)]),
  );
  return { text, toolCalls, results, ends, errors, messages: agent.messages };
}

async function followUiStream() {
  const transport = new DefaultChatTransport({
    fetch: tappedFetch,
    prepareReconnectToStreamRequest: () => ({
      api: options.url,
      headers: lastId ? { ...auth, "Last-Event-ID": lastId } : auth,
    }),
  });
  let message;
  const errors = [];
  for (const connection of ["first", "resumed"]) {
    if (connection === "resumed") await resumeWhenTold();
    const stream = await transport.reconnectToStream({ chatId: "turn" });
    const read = readUIMessageStream({
      message,
      stream,
      onError: (error) => errors.push(String(error.message ?? error)),
    });
    for await (const snapshot of read) message = snapshot;
  }
  const parts = message?.parts ?? [];
  const text = parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  const tools = parts.filter((p) => p.type.startsWith("tool-"));
  const toolCalls = tools.map((part) => ({
    id: part.toolCallId,
    name: part.type.slice(5),
    arguments: JSON.stringify(part.input),
  }));
  const results = Object.fromEntries(
    tools.filter((p) => p.state === "output-available").map((p) => [p.toolCallId, p.output]),
  );
  const end = connections.at(-1).find((frame) => ["finish", "abort"].includes(frame.data?.type));
  const ends = end ? [end.data.type] : [];
  return { id: message?.id, text, toolCalls, results, ends, errors, message };
}

const rebuilt = await (options.wire === "agui" ? followAgui() : followUiStream());
say({ result: { ...rebuilt, connections, resumedAfter } });
process.exit(0);
