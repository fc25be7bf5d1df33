// Reads a turn's standard stream as a program would, with the protocol's own client: each
// connection's raw server-sent events (the first ones dropped mid-turn, the next resumed with
// Last-Event-ID) go through @ag-ui/client's HttpAgent or the `ai` package's UI message
// stream reader (`readUIMessageStream({ message })` carrying on the message it had), and what
// the client rebuilt is printed as JSON: the whole message (or the agent's messages) among it.
//   echo '{"wire": "agui", "connections": ["id: 0-1-0\ndata: …\n\n", …]}' | node read_turn.mjs
//   echo '{"wire": "ui-stream", "reads": [[…], […]]}' | node read_turn.mjs   (one result a read)
import { HttpAgent } from "@ag-ui/client";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const input = JSON.parse(await new Response(process.stdin).text());

function response(text) {
  return new Response(text, { headers: { "content-type": "text/event-stream" } });
}

async function readAgui(connections) {
  const agent = new HttpAgent({ url: "http://glassbox.invalid/", fetch: async () => response(connections.shift()) });
  const ends = [];
  const customs = [];
  const errors = [];
  const total = connections.length;
  for (let n = 0; n < total; n++) {
    try {
      await agent.runAgent({}, {
        onRunFinishedEvent: ({ event }) => { ends.push(event.outcome?.type ?? "success"); },
        onRunErrorEvent: ({ event }) => { ends.push(`error:${event.code}`); },
        onCustomEvent: ({ event }) => { customs.push(event.name); },
      });
    } catch (error) {
      errors.push(String(error.message ?? error));
    }
    // A run that paused for an approval is answered before the next: the decision was taken.
    agent.pendingInterrupts = [];
  }
  const text = agent.messages
    .filter((m) => m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content)
    .join("");
  const toolCalls = {};
  for (const m of agent.messages) {
    for (const call of m.toolCalls ?? []) {
      toolCalls[call.id] = { name: call.function.name, arguments: JSON.parse(call.function.arguments) };
    }
  }
  const results = Object.fromEntries(
    agent.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, JSON.parse(m.content)]),
  );
  return { text, toolCalls, results, ends, customs, errors, state: agent.state, messages: agent.messages };
}

async function readUiStream(connections) {
  let message;
  const errors = [];
  for (const text of connections) {
    const chunks = parseJsonEventStream({ stream: response(text).body, schema: uiMessageChunkSchema })
      .pipeThrough(new TransformStream({
        transform(parsed, controller) {
          if (!parsed.success) throw parsed.error;
          controller.enqueue(parsed.value);
        },
      }));
    for await (const snapshot of readUIMessageStream({ message, stream: chunks, onError: (e) => errors.push(String(e.message ?? e)) })) {
      message = snapshot;
    }
  }
  const parts = message?.parts ?? [];
  const text = parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  const toolCalls = {};
  const results = {};
  for (const part of parts.filter((p) => p.type.startsWith("tool-"))) {
    toolCalls[part.toolCallId] = { name: part.type.slice(5), arguments: part.input };
    if (part.state === "output-available") results[part.toolCallId] = part.output;
    if (part.state === "output-error") results[part.toolCallId] = { error: part.errorText };
  }
  const data = parts.filter((p) => p.type.startsWith("data-")).map((p) => p.type);
  const dataParts = parts
    .filter((p) => p.type.startsWith("data-"))
    .map((p) => ({ type: p.type, id: p.id, data: p.data }));
  return { id: message?.id, text, toolCalls, results, data, dataParts, errors, message };
}

// One read, or with "reads" several (each a list of connections) in this one process.
const read = input.wire === "agui" ? readAgui : readUiStream;
const out = [];
for (const connections of input.reads ?? [input.connections]) out.push(await read(connections));
process.stdout.write(JSON.stringify(input.reads ? out : out[0]));
