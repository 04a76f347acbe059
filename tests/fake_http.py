"""Local HTTP endpoints for tests: a threaded server on 127.0.0.1 and a JSON handler base."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class JSONHandler(http.server.BaseHTTPRequestHandler):
    """A quiet handler that reads JSON bodies and answers JSON (or raw bytes)."""

    def log_message(self, format, *args):
        pass

    def body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def reply(self, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def embeddings_payload(model: str, vectors: list[list[float]]) -> dict[str, Any]:
    """An OpenAI `/embeddings` reply: one item per input, each with its `index`."""
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    usage = {"prompt_tokens": 1, "total_tokens": 1}
    return {"object": "list", "data": data, "model": model, "usage": usage}


@contextmanager
def serve(handler: Any) -> Iterator[str]:
    """`handler` served on a free 127.0.0.1 port until the block ends; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
