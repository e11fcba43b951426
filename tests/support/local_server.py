"""What the local protocol servers share: a threaded HTTP server on 127.0.0.1, run in a background thread."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128  # the listen backlog: a burst of concurrent first connections is not dropped

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that gave up (timeouts, dropped connections) are expected here: stay quiet."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class LocalServer:
    """Serves ``handler`` on 127.0.0.1 (``port`` 0: a free one) from ``start`` until ``stop``, or as
    ``with Server(...) as srv: srv.url``."""

    #: The serving thread's name (the port is appended) and how often it checks for ``stop``.
    thread_name = "local-server"
    poll_interval = 0.5

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0):
        self._httpd = QuietServer(("127.0.0.1", port), handler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": self.poll_interval},
                name=f"{self.thread_name}-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
