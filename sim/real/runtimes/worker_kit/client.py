"""The external system's HTTP client: one connection per request, a timeout on every one (standard library
only)."""

from __future__ import annotations

import http.client
import json
import socket
from urllib.parse import urlencode, urlparse

from .config import Transition


class NoAnswer(Exception):
    """No answer from the external system: a timeout, a closed connection, a refused connection."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ExternalClient:
    """HTTP to the external system; one connection per request, a timeout on every one."""

    def __init__(self, base_url: str, worker: str, timeout_s: float):
        url = urlparse(base_url)
        if url.hostname is None:
            raise ValueError(f"the external system's address {base_url!r} names no host")
        self.host, self.port = url.hostname, url.port
        self.worker = worker
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: dict | None = None, headers: dict[str, str] | None = None,
              timeout_s: float | None = None) -> tuple[int, dict]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s or self.timeout_s)
        try:
            data = json.dumps(body).encode("utf-8") if body is not None else None
            sent = {"Content-Type": "application/json", "Fencesim-Worker": self.worker, **(headers or {})}
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            payload = json.loads(response.read() or b"{}")
            return response.status, payload
        except socket.timeout:
            raise NoAnswer("timeout") from None
        except (ConnectionError, http.client.HTTPException, OSError) as error:
            raise NoAnswer(type(error).__name__) from None
        finally:
            connection.close()

    def create(self, transition: Transition, body: dict, key: str | None, request: str,
               timeout_s: float | None = None) -> dict:
        """A transition's request; ``timeout_s`` is how long to wait for its answer (default: the client's)."""
        headers = {"Fencesim-Request": request}
        if key is not None:
            headers["Idempotency-Key"] = key
        status, payload = self._call("POST", f"/v1/objects/{transition.object_kind}", body, headers, timeout_s)
        if status not in (200, 201, 409):
            raise RuntimeError(f"the external system refused {transition.name}: {status} {payload}")
        return payload

    def query(self, **params: str) -> tuple[int, dict]:
        return self._call("GET", "/v1/objects?" + urlencode(sorted(params.items())))

    def object(self, number: int) -> dict | None:
        status, payload = self._call("GET", f"/v1/objects/{number}")
        return payload if status == 200 else None

    def close(self, number: int, compensation: str | None, key: str | None) -> dict:
        headers = {"Idempotency-Key": key} if key else {}
        status, payload = self._call("POST", f"/v1/objects/{number}/close", {"compensation": compensation}, headers)
        if status != 200:
            raise RuntimeError(f"closing #{number} failed: {status} {payload}")
        return payload
