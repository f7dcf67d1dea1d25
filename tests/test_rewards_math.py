import asyncio
import threading
import time

import pytest

from poly_epo_trl.rewards import MathVerifier, math_reward, resolve_reward


@pytest.fixture(scope="module")
def verifier():
    verifier = MathVerifier(num_workers=2, timeout_seconds=1)
    yield verifier
    verifier.close()


CASES = [
    # (completion, gold answer, expected reward)
    ("so the answer is \\boxed{42}.", "42", 1.0),
    ("\\boxed{ 42 }", "42", 1.0),
    ("\\boxed{0.5}", "\\frac{1}{2}", 1.0),
    ("\\boxed{\\dfrac12}", "1/2", 1.0),
    ("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\sqrt{2}/2", 1.0),
    ("\\boxed{1+x^2}", "x^2+1", 1.0),
    ("\\boxed{(0,1]}", "(0,1]", 1.0),
    ("\\boxed{\\{2,1\\}}", "\\{1,2\\}", 1.0),
    ("\\boxed{\\frac{a}{\\frac{b}{c}}}", "\\frac{ac}{b}", 1.0),  # nested braces
    ("first \\boxed{3}, then corrected: \\boxed{4}", "4", 1.0),  # the last box counts
    ("first \\boxed{4}, then changed my mind: \\boxed{3}", "4", 0.0),
    ("\\boxed{43}", "42", 0.0),  # close but wrong
    ("\\boxed{0.51}", "\\frac{1}{2}", 0.0),
    ("\\boxed{[0,1]}", "(0,1]", 0.0),  # interval ends matter
    ("\\boxed{x^2-1}", "x^2+1", 0.0),
    ("The answer is 42.", "42", 0.0),  # no box
    ("\\boxed{}", "42", 0.0),
    ("\\boxed{\\frac{1}{", "1", 0.0),  # malformed LaTeX, unclosed box
    ("\\boxed{\\frac{1}{2}", "\\frac{1}{2}", 0.0),  # unclosed box: no answer
    ("\\boxed{42}", "\\boxed{42}", 1.0),  # gold given boxed
    # case matters for symbols (math-verify lowercases them): pi is not Pi, n is not N
    ("\\boxed{\\pi}", "\\Pi", 0.0),
    ("\\boxed{\\Pi}", "\\Pi", 1.0),
    ("\\boxed{n}", "N", 0.0),
    ("\\boxed{x+n}", "x+N", 0.0),
    ("\\boxed{2N}", "N+N", 1.0),
    ("\\boxed{\\frac{4\\pi}{2}}", "2\\pi", 1.0),
    ("\\boxed{yes}", "Yes", 1.0),  # words are compared without case
    ("\\boxed{\\text{Yes}}", "yes", 1.0),
    ("\\boxed{none}", "None", 1.0),  # a reference that is the word itself
]


@pytest.mark.parametrize(("completion", "gold", "expected"), CASES)
def test_tricky_cases(verifier, completion, gold, expected):
    assert math_reward([completion], [gold], verifier=verifier) == [expected]


@pytest.mark.parametrize("gold", [None, "", "  "])
def test_missing_reference_is_not_scored(verifier, gold):
    """A row without a reference answer is skipped (None), never matched by \\boxed{none} or anything else."""
    completions = ["\\boxed{none}", "\\boxed{None}", "\\boxed{}", "no box"]
    assert math_reward(completions, [gold] * 4, verifier=verifier) == [None] * 4


def test_a_row_without_a_reference_is_refused_with_its_number_before_it_reaches_the_reward(tmp_path):
    """The dataset never turns a missing reference into the text "None" (which \\boxed{None} would match): a row
    without one, among rows with one, is refused at the door, naming the row."""
    from poly_epo_trl.data import DatasetArguments, format_dataset, load_table
    from poly_epo_trl.recipe import RecipeError

    path = tmp_path / "rows.jsonl"
    path.write_text('{"problem": "1+1", "answer": "2"}\n{"problem": "?", "answer": null}\n')
    with pytest.raises(RecipeError, match=r"Row 1 \(counting from 0\): column 'answer' \(answer_column\) is empty"):
        format_dataset(load_table(DatasetArguments(dataset_name=str(path)), "train"), DatasetArguments())


def test_chat_completions_and_batch(verifier):
    completions = [[{"role": "assistant", "content": "\\boxed{7}"}], [{"role": "assistant", "content": "\\boxed{8}"}]]
    assert math_reward(completions, ["7", "7"], verifier=verifier) == [1.0, 0.0]


def test_huge_expression_times_out_and_the_verifier_recovers(verifier):
    start = time.perf_counter()
    rewards = math_reward(["\\boxed{1}", "\\boxed{\\frac{2}{4}}"], ["9^{9^{9^{9}}}", "1/2"], verifier=verifier)
    elapsed = time.perf_counter() - start
    assert rewards == [0.0, 1.0]
    assert elapsed < verifier.deadline_seconds + 5
    assert math_reward(["\\boxed{2/4}"], ["0.5"], verifier=verifier) == [1.0]


def test_correct_from_other_threads_and_event_loops(verifier):
    """math-verify's own timeouts need the main thread; ours must not."""
    completions, golds = ["\\boxed{0.5}", "\\boxed{3}"], ["\\frac12", "4"]
    results = []
    threads = [threading.Thread(target=lambda: results.append(math_reward(completions, golds, verifier=verifier)))]
    threads += [threading.Thread(target=lambda: results.append(math_reward(completions, golds, verifier=verifier)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    async def in_loop():
        return await asyncio.to_thread(math_reward, completions, golds, verifier=verifier)

    results.append(asyncio.run(in_loop()))
    assert results == [[1.0, 0.0]] * 3


def test_length_mismatch_and_registry():
    with pytest.raises(ValueError, match="2 completions and 1 answers"):
        math_reward(["a", "b"], ["1"])
    assert resolve_reward("math") is math_reward
    assert resolve_reward("poly_epo_trl.rewards.math:math_reward") is math_reward
    with pytest.raises(ValueError, match="Unknown reward 'maths'"):
        resolve_reward("maths")
    with pytest.raises(ValueError, match="could not be imported"):
        resolve_reward("no_such_module:fn")
