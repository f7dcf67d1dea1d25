"""The judges' event loop (``judges.loop``): one long-lived loop for every batch, stopped at exit."""

import asyncio

from poly_epo_trl.judges import (
    JudgeSpec,
)


def test_every_batch_runs_on_one_long_lived_judge_loop():
    import asyncio
    import threading

    seen = []

    async def where(prompt, completions):
        seen.append((threading.current_thread().name, id(asyncio.get_running_loop())))
        return [0] * len(completions)

    judge = JudgeSpec().around(where)
    for _ in range(3):
        judge.cluster_groups([("p", ["a", "b"])])
    future = judge.submit_groups([("q", ["c"])])  # returns at once; the result arrives on the future
    assert [r.labels for r in future.result(timeout=5)] == [[0]]
    assert len(set(seen)) == 1 and seen[0][0] == "poly-epo-judge-loop"


def test_the_judge_loop_stops_at_exit_even_with_a_call_in_flight(tmp_path):
    """``JudgeLoop.close`` (registered at exit) cancels what still runs and joins the thread, so no thread of ours
    is inside the interpreter while it finalizes; the next batch starts a new loop."""
    import subprocess
    import sys
    import threading

    from poly_epo_trl.judges import JudgeLoop

    started, cancelled = threading.Event(), threading.Event()

    async def forever(prompt, completions):
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    JudgeSpec().around(forever).submit_groups([("p", ["a", "b"])])
    assert started.wait(5)
    thread = JudgeLoop._thread
    JudgeLoop.close()
    assert cancelled.is_set() and not thread.is_alive()
    judge = JudgeSpec().around(lambda prompt, completions: [0] * len(completions))
    assert judge.cluster_groups([("q", ["c", "d"])]) == [[0, 0]]
    assert JudgeLoop._thread is not thread and JudgeLoop._thread.is_alive()

    script = tmp_path / "exit_in_flight.py"
    script.write_text(
        "import asyncio\n"
        "from poly_epo_trl.judges import JudgeSpec\n"
        "async def slow(prompt, completions):\n"
        "    await asyncio.sleep(3600)\n"
        "JudgeSpec().around(slow).submit_groups([('p', ['a', 'b'])])\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
