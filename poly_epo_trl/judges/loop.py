"""The judges' event loop: one daemon thread where every judge's I/O runs, stopped at exit."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class JudgeLoop:
    """One long-lived event loop in a daemon thread, where every judge's I/O runs: HTTP clients and their
    keep-alive connections live as long as the process, and the trainer's main thread only submits and joins."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._thread is None or not cls._thread.is_alive():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                cls._thread = threading.Thread(target=serve, name="poly-epo-judge-loop", daemon=True)
                cls._thread.start()
                ready.wait()
                cls._loop = loop
            return cls._loop

    @classmethod
    def submit(cls, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the judge loop; the future's ``result()`` returns or raises what it did."""
        loop = cls.get()
        if threading.current_thread() is cls._thread:
            coro.close()
            raise RuntimeError("Called from the judge loop itself: await the coroutine instead.")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    @classmethod
    def close(cls, timeout: float = 5.0) -> None:
        """Cancel what is still running on the loop, stop it and join its thread (``get`` starts a new one). Runs at
        exit, so that no thread of ours is inside the interpreter while it finalizes."""
        with cls._lock:
            loop, thread = cls._loop, cls._thread
            cls._loop = cls._thread = None
        if loop is None or thread is None or not thread.is_alive():
            return

        async def cancel_all() -> None:
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        # a task that will not end (or a loop already stopping): the loop stops around it
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()


atexit.register(JudgeLoop.close)
