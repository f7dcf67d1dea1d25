"""The judge cache (``judges.cache``): a second identical batch makes no calls; several processes share it safely."""

import multiprocessing

from judge_mocks import COMPLETIONS, FAST, PROBLEM, Script, openai, openai_reply

from poly_epo_trl.judges import (
    JudgeCache,
)


def test_cache_second_identical_batch_makes_no_calls(tmp_path):
    script = Script([], reply=openai_reply)
    groups = [(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(10)]

    def judge():
        return openai(script, retry=FAST, cache_dir=tmp_path)

    first = judge().cluster_groups(groups)
    assert script.calls == 10
    again = judge()  # a new run (resume, evaluation) with the same cache
    assert again.cluster_groups(groups) == first and script.calls == 10
    assert again.pop_stats()["cache_hits"] == 10
    other_template = openai(script, retry=FAST, cache_dir=tmp_path, template="code")
    other_template.cluster_groups(groups[:1])
    assert script.calls == 11  # another template is another question


def _fill_cache(path: str, worker: int) -> None:
    cache = JudgeCache(path)
    for i in range(200):
        cache.put(f"{worker}-{i}", [worker, i])


def test_cache_is_safe_with_several_processes(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill_cache, args=(str(tmp_path), w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert all(p.exitcode == 0 for p in workers)
    cache = JudgeCache(tmp_path)
    assert len(cache) == 600 and cache.get("2-199") == ([2, 199], None)
