"""The default judge (``judges/answer.py``): the final answer is the strategy; no answer, degenerate."""

import pytest

from poly_epo_trl.judges import AnswerJudge
from poly_epo_trl.judges.answer import SHORT_ANSWER_WORDS, final_answer


def labels_of(judge: AnswerJudge, prompt: str, completions: list[str]) -> list[int]:
    return judge.cluster_groups([(prompt, completions)])[0]


RAMBLING = [
    "Let me think about this problem carefully and step by step before I answer it.",
    "Well, there are many ways to look at a question like this one, so let us begin.",
    "I am not sure what the question means, but here is what I would say about it.",
]


def test_rambling_without_an_answer_is_degenerate_under_the_default_judge():
    """A policy that rambles differently each time gains no diversity from it: every such completion is id 100. A
    short text answer is a strategy where the group's answers are text (the names tasks), and none beside numbers."""
    completions = [*RAMBLING, "So the answer is \\boxed{7}.", "It is 7", "Anna"]
    labels = labels_of(AnswerJudge(), "What is 3 + 4?", completions)
    assert labels[:3] == [100, 100, 100]
    assert labels[3] == labels[4] != 100 and labels[5] == 100
    assert labels_of(AnswerJudge(), "Name one", [*RAMBLING[:1], "Anna", "Bob", "anna"]) == [100, 0, 1, 0]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Anna", "anna"),  # a name, as the names tasks ask for
        ("The answer is Anna.", "theanswerisanna"),  # a short text answer clusters by its text
        (" ".join(["word"] * SHORT_ANSWER_WORDS), "word" * SHORT_ANSWER_WORDS),
        (" ".join(["word"] * (SHORT_ANSWER_WORDS + 1)), None),  # past SHORT_ANSWER_WORDS: no answer
        ("ramble " * 40 + "\\boxed{12}", "12"),
        ("ramble " * 40 + "so 12 it is", "12"),
    ],
)
def test_auto_mode_answers(text, answer):
    assert final_answer(text) == answer


def test_text_mode_still_clusters_any_text():
    assert final_answer(RAMBLING[0], "text") is not None
    assert labels_of(AnswerJudge("text"), "q", RAMBLING[:2] * 2) == [0, 1, 0, 1]


def test_equal_numbers_written_differently_are_one_strategy():
    completions = ["\\boxed{1/2}", "\\boxed{0.5}", "\\boxed{\\frac{1}{2}}", "\\boxed{\\dfrac{2}{4}}", "\\boxed{1/3}"]
    assert labels_of(AnswerJudge(), "Half of 1?", completions) == [0, 0, 0, 0, 1]
    huge = labels_of(AnswerJudge(), "q", ["\\boxed{1e999999999}", "\\boxed{1e999999998}"])  # never expanded
    assert huge == [0, 1]


def test_answers_in_tags_are_read_as_people_write_them():
    """Inside <answer> tags a LaTeX fraction, a slash fraction and the decimal are one answer (a fraction's
    denominator is not the answer), and only the last tagged answer counts."""
    group = [
        "<think>half of it</think><answer>$\\frac{1}{2}$</answer>",
        "<answer>0.5</answer>",
        "<answer>2/4</answer>",
        "<answer>\\dfrac{1}{2}</answer>",
        "<think>maybe 3</think><answer>1/3</answer>",
        "<answer>7</answer> and later <answer>2</answer>",
    ]
    assert labels_of(AnswerJudge(), "Half of 1?", group) == [0, 0, 0, 0, 1, 2]
    assert final_answer("<answer>$\\frac{1}{2}$</answer>") == "1/2"


def test_a_bare_expression_is_one_answer_whatever_the_order_of_its_sums_and_products():
    """A countdown equation: reordered sums and products are one strategy, a different expression another; a worked
    line with its result is the result."""
    group = [
        "<answer>(25 - 5) * 3</answer>",
        "<answer>3 * (25 - 5)</answer>",
        "<answer>3*(-5 + 25)</answer>",
        "<answer>(5 - 25) * 3</answer>",
        "<answer>25 * 3 - 5 * 3</answer>",
        "<answer>3 + 57 = 60</answer>",
    ]
    labels = labels_of(AnswerJudge(), "Make 60 from 25, 5, 3", group)
    assert labels[:3] == [0, 0, 0] and len(set(labels)) == 4 and labels[5] == 3
    assert final_answer(group[5]) == "60"


def test_a_short_aside_in_a_math_group_is_no_strategy():
    """In a GSM8K group, "Let me think again." (4 words, no number) is degenerate however short."""
    group = ["The total is 18 eggs. <answer>18</answer>", "Let me think again.", "<answer>16</answer>", "Hmm."]
    assert labels_of(AnswerJudge(), "How many eggs?", group) == [0, 100, 1, 100]
