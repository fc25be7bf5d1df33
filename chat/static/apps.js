// The host side of MCP Apps (io.modelcontextprotocol/ui): each call's own interface runs in a
// frame with no origin (chat.pages.app_frames) and speaks JSON-RPC over postMessage with this
// bridge only. Everything a frame sends is untrusted: a message is taken only from the window
// of a frame this page drew, only in JSON-RPC's shape, only under SIZE_LIMIT, only at
// PER_SECOND; the rest is dropped (a request among them is refused in words).
"use strict";

const PROTOCOL = "2026-01-26";
const SIZE_LIMIT = 64 * 1024;
const PER_SECOND = 20;
const MIN_HEIGHT = 60;
const MAX_HEIGHT = 1600;
const METHOD_NOT_FOUND = -32601;
const INVALID_REQUEST = -32600;
const REFUSED = -32000;
const MAX_CALLS_AT_ONCE = 2;
const POLL_MS = 1000;
const POLL_GRACE_MS = 60 * 1000;

const apps = new Map();  // a frame's window -> its state

function appOf(source) {
  if (!source) return null;
  for (const frame of document.querySelectorAll(".mcp-app iframe")) {
    if (frame.contentWindow === source) {
      let state = apps.get(source);
      if (!state || state.frame !== frame) {
        state = {frame, box: frame.closest(".mcp-app"), window: [], dropped: 0, ready: false, calling: 0};
        apps.set(source, state);
      }
      return state;
    }
  }
  return null;
}

function withinRate(state) {
  const now = performance.now();
  state.window = state.window.filter((at) => now - at < 1000);
  if (state.window.length >= PER_SECOND) {
    state.dropped += 1;
    state.box.dataset.dropped = String(state.dropped);
    return false;
  }
  state.window.push(now);
  return true;
}

function send(state, message) {
  // "*": the frame's origin is opaque ("null"), so no name can be given; the window is its own.
  state.frame.contentWindow?.postMessage({jsonrpc: "2.0", ...message}, "*");
}

const answer = (state, id, result) => send(state, {id, result});
const refuse = (state, id, code, message) => send(state, {id, error: {code, message}});

function isRequestId(id) {
  return (typeof id === "string" && id.length <= 64) || Number.isSafeInteger(id);
}

function hostContext(state) {
  const root = document.documentElement;
  const dark = root.dataset.theme
    ? root.dataset.theme === "dark"
    : matchMedia("(prefers-color-scheme: dark)").matches;
  return {
    theme: dark ? "dark" : "light",
    locale: root.lang || "en",
    displayMode: state.box.classList.contains("full-screen") ? "fullscreen" : "inline",
    availableDisplayModes: ["inline", "fullscreen"],
    platform: matchMedia("(pointer: coarse)").matches ? "mobile" : "web",
    containerDimensions: {maxHeight: MAX_HEIGHT},
  };
}

async function deliver(state) {
  // The call's input and result as recorded: the same live and from history.
  const response = await fetch(state.box.dataset.context, {credentials: "same-origin"});
  if (!response.ok) return;
  const call = await response.json();
  send(state, {method: "ui/notifications/tool-input", params: {arguments: call.arguments}});
  if (call.result) send(state, {method: "ui/notifications/tool-result", params: call.result});
}

function resize(state, params) {
  const height = Number(params?.height);
  if (!Number.isFinite(height)) return;
  const bounded = Math.round(Math.min(Math.max(height, MIN_HEIGHT), MAX_HEIGHT));
  state.frame.style.height = `${bounded}px`;
}

function setFullScreen(state, on) {
  state.box.classList.toggle("full-screen", on);
  state.box.querySelector(".app-full-screen")?.setAttribute("aria-pressed", String(on));
  if (state.ready) {
    send(state, {method: "ui/notifications/host-context-changed", params: hostContext(state)});
  }
}

function csrfHeaders() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}");
  } catch {
    return {};
  }
}

// The server decides (chat.turns.app_calls): only its own server's tools that apps may call,
// asked first under the same rules as the model's, written ahead and kept in the feed.
async function relayCall(state, id, params) {
  if (typeof params?.name !== "string") return refuse(state, id, INVALID_REQUEST, "no tool name");
  if (state.calling >= MAX_CALLS_AT_ONCE) return refuse(state, id, REFUSED, "too many calls at once");
  state.calling = (state.calling || 0) + 1;
  try {
    const response = await fetch(state.box.dataset.call, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", ...csrfHeaders()},
      body: JSON.stringify({name: params.name, arguments: params.arguments ?? {}}),
    });
    let answered = await response.json().catch(() => ({}));
    if (response.status === 202 && typeof answered.outcome === "string") {
      answered = await awaitDecision(state, answered);
    }
    if (answered.result) answer(state, id, answered.result);
    else refuse(state, id, answered.error?.code ?? REFUSED, answered.error?.message ?? "refused");
  } catch {
    refuse(state, id, REFUSED, "the host could not reach its server");
  } finally {
    state.calling -= 1;
  }
}

// A call that asks first waits for its person's decision on the approval card (drawn here, in
// the answer's slot, and in the inbox); the decision may come from any tab, the inbox, the
// API or the form without JavaScript, so the outcome is asked for rather than pushed.
async function awaitDecision(state, waiting) {
  redrawCard(state);
  const until = Date.now() + (Number(waiting.seconds) || 600) * 1000 + POLL_GRACE_MS;
  while (Date.now() < until && state.frame.isConnected) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const response = await fetch(waiting.outcome, {credentials: "same-origin"}).catch(() => null);
    if (!response) continue;  // offline a moment: ask again
    if (!response.ok) return {error: {code: REFUSED, message: "the call is no longer known"}};
    const outcome = await response.json().catch(() => ({}));
    if (outcome.result || outcome.error) {
      redrawCard(state);
      return outcome;
    }
  }
  return {error: {code: REFUSED, message: "no decision came in time"}};
}

function redrawCard(state) {
  // The slot comes back out of band (chat.pages.app_frames.app_call_card), processed by htmx
  // so its form sends over the page's socket as any card's does.
  if (window.htmx && state.box.dataset.card) {
    window.htmx.ajax("GET", state.box.dataset.card, {swap: "none"});
  }
}

// An app's message for the conversation is put in the composer, for its person to read, edit
// and send (or not): it then goes as their own question, through the same pipeline.
function proposeMessage(state, id, params) {
  const composer = document.getElementById("question");
  const blocks = Array.isArray(params?.content) ? params.content : [];
  const text = blocks
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
  if (!composer || composer.disabled || !text.trim()) {
    return refuse(state, id, REFUSED, "no message can be proposed here now");
  }
  const limit = Number(composer.maxLength) > 0 ? composer.maxLength : text.length;
  composer.value = text.slice(0, limit);
  composer.dispatchEvent(new Event("input", {bubbles: true}));
  composer.focus({preventScroll: true});
  keepNote(state, "message", text);  // in the feed, whether or not its person sends it
  return answer(state, id, {});
}

// What an app says besides its calls is kept in the answer's feed (chat.turns.app_notes).
async function keepNote(state, note, text) {
  const response = await fetch(state.box.dataset.note, {
    method: "POST",
    credentials: "same-origin",
    headers: {"Content-Type": "application/json", ...csrfHeaders()},
    body: JSON.stringify({note, text}),
  }).catch(() => null);
  if (response?.ok) return {};
  const refused = await response?.json().catch(() => ({}));
  return {error: refused?.error ?? {code: REFUSED, message: "the host could not keep it"}};
}

// The context an app sets for the model is recorded for the audit; the model is not told it.
async function updateContext(state, id, params) {
  const blocks = Array.isArray(params?.content) ? params.content : [];
  let text = blocks
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
  if (params?.structuredContent !== undefined) {
    text = [text, JSON.stringify(params.structuredContent)].filter(Boolean).join("\n");
  }
  const kept = await keepNote(state, "context", text);
  if (kept.error) return refuse(state, id, kept.error.code ?? REFUSED, kept.error.message);
  return answer(state, id, {});
}

function onRequest(state, message) {
  const {id, method, params} = message;
  switch (method) {
    case "ui/initialize":
      return answer(state, id, {
        protocolVersion: PROTOCOL,
        hostInfo: {name: "Glassbox", version: "1"},
        // What this host does for an app: relays its calls to its own server's tools, takes
        // a message for the composer and context for the record (text; context's structure).
        hostCapabilities: {
          serverTools: {},
          message: {text: {}},
          updateModelContext: {text: {}, structuredContent: {}},
        },
        hostContext: hostContext(state),
      });
    case "ping":
      return answer(state, id, {});
    case "ui/request-display-mode": {
      const mode = params?.mode === "fullscreen" ? "fullscreen" : "inline";
      setFullScreen(state, mode === "fullscreen");
      return answer(state, id, {mode});
    }
    case "tools/call":
      return relayCall(state, id, params);
    case "ui/message":
      return proposeMessage(state, id, params);
    case "ui/update-model-context":
      return updateContext(state, id, params);
    case "ui/open-link":
    case "resources/read":
      return refuse(state, id, REFUSED, `${method} is not offered to apps by this host`);
    default:
      return refuse(state, id, METHOD_NOT_FOUND, "unknown method");
  }
}

function onNotification(state, message) {
  switch (message.method) {
    case "ui/notifications/initialized":
      if (state.ready) return;
      state.ready = true;
      deliver(state);
      return;
    case "ui/notifications/size-changed":
      return resize(state, message.params);
    default:
      return;  // a notification this host does not act on is ignored, as JSON-RPC allows
  }
}

window.addEventListener("message", (event) => {
  const state = appOf(event.source);
  if (!state || !withinRate(state)) return;
  const message = event.data;
  let size = 0;
  try {
    size = JSON.stringify(message)?.length ?? 0;
  } catch {
    return;
  }
  const shaped = message && typeof message === "object" && message.jsonrpc === "2.0";
  if (!shaped || typeof message.method !== "string" || message.method.length > 100) return;
  const request = "id" in message;
  if (request && !isRequestId(message.id)) return;
  if (size > SIZE_LIMIT) {
    if (request) refuse(state, message.id, INVALID_REQUEST, "the message is too large");
    state.dropped += 1;
    state.box.dataset.dropped = String(state.dropped);
    return;
  }
  if (request) onRequest(state, message);
  else onNotification(state, message);
});

document.addEventListener("click", (event) => {
  const button = event.target.closest(".mcp-app .app-full-screen");
  if (!button) return;
  const frame = button.closest(".mcp-app").querySelector("iframe");
  const state = appOf(frame.contentWindow);
  if (state) setFullScreen(state, !state.box.classList.contains("full-screen"));
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  for (const box of document.querySelectorAll(".mcp-app.full-screen")) {
    const state = appOf(box.querySelector("iframe").contentWindow);
    if (state) setFullScreen(state, false);
  }
});

// Before a line or a card is swapped out, its apps are told they are going (teardown).
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  const target = event.detail?.target;
  if (!target?.querySelectorAll) return;
  for (const frame of target.querySelectorAll(".mcp-app iframe")) {
    const state = apps.get(frame.contentWindow);
    if (state?.ready) send(state, {id: `teardown-${Date.now()}`, method: "ui/resource-teardown", params: {}});
    apps.delete(frame.contentWindow);
  }
});
