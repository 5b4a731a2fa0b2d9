"""A loopback OTLP/HTTP trace receiver for TraceTests, independent of Coffer.

Decodes each POST /v1/traces body with the OpenTelemetry project's own
protobuf classes (PyPI's opentelemetry-proto) and appends one JSON line
per span to the file named by argv[1]: name, kind, ids in hex, parent,
status, times and every attribute. Prints the port it listens on, then
serves until killed. Answers anything else with 404, and a body that does
not decode with 400.
"""
import gzip
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = sys.argv[1]


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(item) for item in any_value.array_value.values]
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = trace_service_pb2.ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception:
            self.send_response(400)
            self.end_headers()
            return
        lines = []
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "name": span.name,
                        "kind": span.kind,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "status": span.status.code,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "events": [e.name for e in span.events],
                        "service": resource.get("service.name"),
                    }))
        with open(OUT, "a") as out:
            for line in lines:
                out.write(line + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


# A test process may start this with SIGTERM blocked; let it stop it.
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
signal.signal(signal.SIGTERM, signal.SIG_DFL)
server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
