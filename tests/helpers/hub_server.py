"""A local stand-in for the Hugging Face Hub's upload API, for testing ``push_to_hub`` without the network: a
separate OS process on loopback that ``huggingface_hub`` talks to through ``HF_ENDPOINT``.

    python tests/helpers/hub_server.py --port 0 --store <folder>

It prints ``ready <port>`` once listening. It answers what ``create_repo``, ``ModelCard`` and ``upload_folder`` send:
repository creation (``POST /api/repos/create``), the card's metadata check (``POST /api/validate-yaml``), the pre-
upload check (every file uploads inline, "regular", so nothing goes to LFS or Xet) and the commit (``POST
/api/models/<repo>/commit/<revision>``, NDJSON whose file lines carry base64 content). Each committed file is written
to ``<store>/<repo>/<path>``, and every request is appended to ``<store>/requests.jsonl`` (method, path, the token's
presence), so a test reads back what reached "the Hub". A request without a bearer token is refused with 401, as the
Hub refuses it.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

USER = "standin-user"
PREUPLOAD = re.compile(r"^/api/(models|datasets|spaces)/(.+)/preupload/([^/]+)$")
COMMIT = re.compile(r"^/api/(models|datasets|spaces)/(.+)/commit/([^/]+)$")


class HubHandler(BaseHTTPRequestHandler):
    store: Path

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, extra: dict | None = None) -> None:
        entry = {"method": self.command, "path": self.path, "token": self.headers.get("authorization", "")[:7]}
        with (self.store / "requests.jsonl").open("a") as log:
            log.write(json.dumps({**entry, **(extra or {})}) + "\n")

    def do_GET(self) -> None:
        self._record()
        if self.path.startswith("/api/whoami"):
            self._send(200, {"name": USER, "type": "user", "orgs": [], "auth": {"accessToken": {"role": "write"}}})
            return
        self._send(404, {"error": f"not served by the stand-in: GET {self.path}"})

    def do_POST(self) -> None:
        body = self._body()
        if not self.headers.get("authorization", "").startswith("Bearer "):
            self._record({"refused": True})
            self._send(401, {"error": "Invalid credentials in Authorization header"})
            return
        path = self.path.split("?", 1)[0]
        if path == "/api/validate-yaml":  # a model card's metadata, checked before it is saved
            self._record()
            self._send(200, {"errors": [], "warnings": []})
            return
        if path == "/api/repos/create":
            request = json.loads(body)
            repo = f"{request.get('organization') or USER}/{request['name']}"
            self._record({"repo": repo, "private": request.get("private")})
            self._send(200, {"url": f"http://{self.headers['host']}/{repo}", "name": repo, "id": repo})
            return
        if match := PREUPLOAD.match(path):
            files = json.loads(body)["files"]
            self._record({"repo": match.group(2), "files": [f["path"] for f in files]})
            answer = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
            self._send(200, {"files": answer, "commitOid": "0" * 40})
            return
        if match := COMMIT.match(path):
            repo, revision = match.group(2), match.group(3)
            written, summary = [], ""
            for line in body.decode().splitlines():
                item = json.loads(line)
                if item["key"] == "header":
                    summary = item["value"].get("summary", "")
                elif item["key"] == "file":
                    target = self.store / repo / item["value"]["path"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(base64.b64decode(item["value"]["content"]))
                    written.append(item["value"]["path"])
            self._record({"repo": repo, "revision": revision, "summary": summary, "files": written})
            url = f"http://{self.headers['host']}/{repo}"
            self._send(200, {"commitUrl": f"{url}/commit/{'1' * 40}", "commitOid": "1" * 40, "pullRequestUrl": None})
            return
        self._record()
        self._send(404, {"error": f"not served by the stand-in: POST {path}"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--store", type=Path, required=True)
    args = parser.parse_args()
    args.store.mkdir(parents=True, exist_ok=True)
    HubHandler.store = args.store
    server = ThreadingHTTPServer(("127.0.0.1", args.port), HubHandler)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
