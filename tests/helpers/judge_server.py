"""A small OpenAI-compatible judge server for tests and benchmarks: a separate OS process, loopback only.

    python tests/helpers/judge_server.py --port 0 --slots 1 --latency 0.2 [--invalid-frac 0.2] [--prefix /api/v1]

It prints ``ready <port>`` once listening. Like ``vllm serve`` or ``llama-server --parallel 1`` it runs at most
``--slots`` requests at once and queues the rest (the client cannot see the queue), streams replies as server-sent
events, and aborts a request whose client disconnects, queued or generating. It answers the judge's prompt (its
delimited answer blocks, read back with ``prompts.response_blocks``) with a clustering: answers sharing their
``\\boxed{...}`` (else their first line) share a cluster, and an answer containing ``DEGENERATE`` gets 100. Knobs
inject what real servers do: latency, invalid answers (``--invalid-frac``, or always for prompts containing
``--invalid-marker``), ids as numeric strings, 400 for prompts containing ``--reject-marker``, transport failures
(``--fail-frac``: reset, 500, 503, 429, hang), no support for structured output (``--no-structured``: 400 when asked),
an API key, a path prefix and a model id.
``GET /stats`` returns the server's counters (received, completed, aborted, ...) as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import subprocess
import sys
import time
import urllib.request
from collections import Counter

from poly_epo_trl.judges.prompts import response_blocks

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
KNOWN = re.compile(r"^- cluster_id (\d+): ends with (.*)$", re.MULTILINE)
FOLLOWING = re.compile(r"Number strategies that are not in this list from (\d+) on")
STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
FAILURES = ("reset", "500", "503", "429", "hang")


def cluster_answer(prompt: str, string_ids: bool = False) -> dict:
    """The clustering of the answer blocks of ``prompt``: same boxed answer (else first line), same id.
    The strategy names the key ("ends with K"); for a later part of a split group, the strategies the prompt lists
    keep their ids and new ones are numbered from the id it gives."""
    known = dict((key, int(cluster)) for cluster, key in KNOWN.findall(prompt))
    following = FOLLOWING.search(prompt)
    ids: dict[str, int] = {}
    answer = {}
    for number, text in enumerate(response_blocks(prompt), 1):
        text = text.strip()
        if "DEGENERATE" in text:
            cluster, key = 100, "degenerate"
        else:
            boxed = BOXED.findall(text)
            key = boxed[-1] if boxed else text.split("\n", 1)[0]
            start = int(following.group(1)) if following else 1
            cluster = known.get(key) or ids.setdefault(key, start + len(ids))
        answer[str(number)] = {"strategy": f"ends with {key}", "cluster_id": str(cluster) if string_ids else cluster}
    return answer


class JudgeServer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.slots = asyncio.Semaphore(args.slots)
        self.rng = random.Random(args.seed)
        self.stats: Counter[str] = Counter()
        self.waiting = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await self.read_request(reader)
                if request is None:
                    break
                keep_open = await self.route(*request, reader, writer)
                if not keep_open:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> tuple[str, str, dict, bytes] | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return method, path, headers, body

    @staticmethod
    async def send(writer: asyncio.StreamWriter, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n{extra}\r\n"
        writer.write(head.encode() + data)
        await writer.drain()

    async def route(self, method: str, path: str, headers: dict, body: bytes, reader, writer) -> bool:
        prefix = self.args.prefix.rstrip("/")
        if method == "GET" and path == "/stats":
            await self.send(writer, 200, {**self.stats, "waiting": self.waiting})
            return True
        if self.args.api_key and headers.get("authorization") != f"Bearer {self.args.api_key}":
            await self.send(writer, 401, {"error": {"message": "Invalid API key", "type": "authentication_error"}})
            return True
        if method == "GET" and path == f"{prefix}/models":
            await self.send(writer, 200, {"object": "list", "data": [{"id": self.args.model, "object": "model"}]})
            return True
        if method != "POST" or path != f"{prefix}/chat/completions":
            await self.send(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return True
        return await self.chat(json.loads(body), reader, writer)

    async def chat(self, request: dict, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        self.stats["received"] += 1
        prompt = request["messages"][0]["content"]
        if request.get("model") != self.args.model:
            self.stats["wrong_model"] += 1
            message = f"The model `{request.get('model')}` does not exist."
            await self.send(writer, 404, {"error": {"message": message, "type": "NotFoundError"}})
            return True
        asks_schema = "response_format" in request and request["response_format"].get("type") == "json_schema"
        self.stats["structured"] += asks_schema
        if self.args.no_structured and asks_schema:
            await self.send(writer, 400, {"error": {"message": "response_format json_schema is not supported"}})
            return True
        if self.args.reject_marker and self.args.reject_marker in prompt:
            self.stats["rejected"] += 1
            await self.send(writer, 400, {"error": {"message": "This model's maximum context length is 4096."}})
            return True
        if self.args.fail_frac and self.rng.random() < self.args.fail_frac:
            failure = self.rng.choice(FAILURES)
            self.stats[f"failure/{failure}"] += 1
            if failure == "reset":
                writer.transport.abort()
                return False
            if failure == "hang":
                await reader.read(1)  # until the client gives up and disconnects
                return False
            retry = {"retry-after": "0.05"} if failure == "429" else {}
            await self.send(writer, int(failure), {"error": {"message": f"injected {failure}"}}, retry)
            return True
        disconnected = asyncio.ensure_future(reader.read(1))
        work = asyncio.ensure_future(self.generate(request, prompt, writer))
        done, _ = await asyncio.wait({disconnected, work}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            disconnected.cancel()
            await asyncio.wait({disconnected})  # let the read go before the next request's
            return work.result()
        work.cancel()
        self.stats["aborted"] += 1
        return False

    async def generate(self, request: dict, prompt: str, writer: asyncio.StreamWriter) -> bool:
        self.waiting += 1
        self.stats["max_waiting"] = max(self.stats["max_waiting"], self.waiting)
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        try:
            self.stats["started"] += 1
            invalid = (self.args.invalid_marker and self.args.invalid_marker in prompt) or (
                self.args.invalid_frac and self.rng.random() < self.args.invalid_frac
            )
            if invalid:
                self.stats["invalid_sent"] += 1
                text = "I think answers 1 and 2 are alike." if self.rng.random() < 0.5 else '{"1": {"cluster_id": 1}}'
            else:
                text = json.dumps(cluster_answer(prompt, self.args.string_ids))
            usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
            pieces = [text[i : i + max(1, len(text) // 4)] for i in range(0, len(text), max(1, len(text) // 4))]
            if not request.get("stream"):
                await asyncio.sleep(self.args.latency)
                message = {"role": "assistant", "content": text}
                await self.send(writer, 200, {"choices": [{"index": 0, "message": message}], "usage": usage})
            else:
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                for piece in pieces:
                    await asyncio.sleep(self.args.latency / len(pieces))
                    self.chunk(writer, {"choices": [{"index": 0, "delta": {"content": piece}}]})
                    await writer.drain()
                if (request.get("stream_options") or {}).get("include_usage"):
                    self.chunk(writer, {"choices": [], "usage": usage})
                writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                await writer.drain()
            self.stats["completed"] += 1
            return True
        finally:
            self.slots.release()

    @staticmethod
    def chunk(writer: asyncio.StreamWriter, event: dict) -> None:
        data = f"data: {json.dumps(event)}\n\n".encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request once it has a slot")
    parser.add_argument("--invalid-frac", type=float, default=0.0)
    parser.add_argument("--invalid-marker", default="")
    parser.add_argument("--reject-marker", default="")
    parser.add_argument("--fail-frac", type=float, default=0.0)
    parser.add_argument("--string-ids", action="store_true")
    parser.add_argument("--no-structured", action="store_true")
    parser.add_argument("--api-key", default="")
    parser.add_argument("--prefix", default="/v1")
    parser.add_argument("--model", default="judge-model")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    server = JudgeServer(args)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", args.port, reuse_address=True)
    print(f"ready {listener.sockets[0].getsockname()[1]}", flush=True)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(serve(parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)


class ServerProcess:
    """The server as a child process: ``start()`` waits for ``ready``; ``kill()`` and ``start()`` again restart it on
    the same port; ``stats()`` reads its counters."""

    def __init__(self, port: int = 0, **knobs: object) -> None:
        self.port = port
        self.knobs = knobs
        self.process: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        argv = [sys.executable, __file__, "--port", str(self.port)]
        for name, value in self.knobs.items():
            flag = "--" + name.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif value not in (False, None):
                argv += [flag, str(value)]
        return argv

    def start(self) -> ServerProcess:
        deadline = time.monotonic() + 30
        while True:
            self.process = subprocess.Popen(self.argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = self.process.stdout.readline()
            if line.startswith("ready "):
                self.port = int(line.split()[1])
                return self
            self.process.wait()
            if time.monotonic() > deadline:  # the port may linger for a moment after a kill
                raise RuntimeError(f"judge server did not start: {self.process.stderr.read()}")
            time.sleep(0.1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.knobs.get('prefix', '/v1')}"

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as response:
            return json.loads(response.read())

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()
