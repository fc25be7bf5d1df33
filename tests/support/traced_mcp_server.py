"""An MCP server instrumented as a team would instrument theirs: built with the `mcp` SDK, its
spans recorded by the OpenTelemetry SDK and exported over OTLP/HTTP to wherever the standard
variables say (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The `mcp` SDK's own server middleware
reads each request's `_meta.traceparent` with OpenTelemetry's propagator and starts its
`tools/call <tool>` server span under it; `lookup` adds a span of its own inside, `fail`
fails with the text it is given. Streamable HTTP:
`python -m tests.support.traced_mcp_server --http PORT`."""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

# Simple, not batched: each span is exported when it ends, before the call's answer leaves.
provider = TracerProvider(resource=Resource.create({"service.name": "traced-mcp"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("traced-mcp")

server = MCPServer("traced")


@server.tool(title="Look up")
async def lookup(topic: str) -> str:
    """Looks a topic up, in a span of its own."""
    with tracer.start_as_current_span("lookup in the index"):
        return f"nothing on {topic}"


@server.tool(title="Fail")
async def fail(marker: str) -> str:
    """Fails, saying `marker` in its error (a tool's text, which traces keep out)."""
    raise ToolError(f"the index is down: {marker}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    server.run("streamable-http", host="127.0.0.1", port=parser.parse_args().http)


if __name__ == "__main__":
    main()
