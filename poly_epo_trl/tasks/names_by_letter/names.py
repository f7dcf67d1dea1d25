"""The names_by_letter task's facts: its prompts and their splits, what ``pycountry`` accepts as a member's name, and
whether a completion names a member with the prompt's initial (a letter, or a two-letter prefix)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import cache

CATEGORIES = ("country", "US state", "language")
HELD_OUT_EVERY = 3  # every third prompt of the sorted list, from the second, is held out
MAX_NAME_WORDS = 6  # a longer answer is no name: degenerate
_PROMPT = re.compile(r"A (.+) starting with ([A-Z][a-z]?):")
SPLITS = ("train", "test", "prefix")


def make_prompt(category: str, initial: str) -> str:
    """``initial``: a capital letter ("M") or a two-letter prefix ("Ma")."""
    return f"A {category} starting with {initial}:"


def parse_prompt(prompt: str) -> tuple[str, str]:
    match = _PROMPT.search(prompt)
    if match is None or match.group(1) not in CATEGORIES:
        raise ValueError(f"Not a names_by_letter prompt: {prompt!r}")
    return match.group(1), match.group(2)


def normalize(name: str) -> str:
    """Lower case, accents and punctuation dropped, spaces collapsed, a leading "the" dropped."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z ]", " ", ascii_name.lower()).split()
    return " ".join(words[1:] if words[:1] == ["the"] and len(words) > 1 else words)


def variants(name: str) -> Iterator[str]:
    """A registry name and its short forms: "Korea, Republic of" also as "Korea", "Modern Greek (1453-)" as "Modern
    Greek", "Spanish; Castilian" as each."""
    for part in name.split(";"):
        yield part
        yield part.split(" (")[0]
        yield part.split(",")[0]


@cache
def members(category: str) -> dict[str, str]:
    """Every accepted name of ``category``'s members, normalized, to the member's code; a short form two members
    share is no one's."""
    import pycountry

    if category == "country":
        named = [(c.alpha_3, n) for c in pycountry.countries for n in (c.name, getattr(c, "common_name", None)) if n]
    elif category == "US state":
        named = [(s.code, s.name) for s in pycountry.subdivisions.get(country_code="US") if s.type == "State"]
    elif category == "language":
        named = [(lang.alpha_3, lang.name) for lang in pycountry.languages if hasattr(lang, "alpha_2")]
    else:
        raise ValueError(f"Unknown category {category!r}: one of {CATEGORIES}.")
    codes: dict[str, set[str]] = {}
    for code, name in named:
        for variant in variants(name):
            if normalize(variant):
                codes.setdefault(normalize(variant), set()).add(code)
    return {name: next(iter(found)) for name, found in codes.items() if len(found) == 1}  # "Korea" names no one


def answer_of(completion: str) -> str:
    """The name a completion gives: its first line, normalized."""
    return normalize(completion.strip().split("\n", 1)[0])


def member(prompt: str, completion: str) -> str | None:
    """The code of the member a completion names, when it is one of the prompt's category (whatever its initial);
    None too for a prompt of another task."""
    try:
        category, _ = parse_prompt(prompt)
    except ValueError:
        return None
    return members(category).get(answer_of(completion))


def is_correct(prompt: str, completion: str) -> bool:
    """A member of the prompt's category, named by a name that starts with the prompt's initial."""
    _, initial = parse_prompt(prompt)
    return member(prompt, completion) is not None and answer_of(completion).startswith(initial.lower())


def correct_members(category: str, initial: str) -> set[str]:
    """The members of ``category`` with a name starting with ``initial`` (a letter or a prefix): the prompt's distinct
    correct strategies."""
    return {code for name, code in members(category).items() if name.startswith(initial.lower())}


@cache
def all_prompts() -> tuple[str, ...]:
    """Every (category, letter) with at least 2 correct members, in order."""
    return tuple(
        make_prompt(category, letter)
        for category in CATEGORIES
        for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        if len(correct_members(category, letter)) >= 2
    )


def split_prompts(split: str) -> list[str]:
    """``train``: the one-letter prompts trained on; ``test``: the other one-letter prompts (every third, from the
    second), never trained on; ``prefix``: ``prefix_prompts``, never trained on either."""
    if split not in SPLITS:
        raise ValueError(f"Unknown names_by_letter split {split!r}: one of {SPLITS}.")
    if split == "prefix":
        return list(prefix_prompts())
    held_out = split == "test"
    return [p for i, p in enumerate(all_prompts()) if (i % HELD_OUT_EVERY == 1) == held_out]


@cache
def prefix_prompts() -> tuple[str, ...]:
    """Two-letter prefixes of the training letters ("A country starting with Ma:" under "... with M:"), each with at
    least 2 correct members and fewer than its letter has: their answers are the rarer answers of prompts that are
    trained on, so a policy that narrows onto a letter's favourite answers loses them."""
    prompts = []
    for prompt in split_prompts("train"):
        category, letter = parse_prompt(prompt)
        whole = correct_members(category, letter)
        under = [name for name in members(category) if name[:1] == letter.lower() and name[1:2].isalpha()]
        initials = sorted({name[:2] for name in under})
        for initial in initials:
            found = correct_members(category, initial.capitalize())
            if 2 <= len(found) < len(whole):
                prompts.append(make_prompt(category, initial.capitalize()))
    return tuple(prompts)


def name_key(prompt: str, completion: str) -> str | None:
    """What a completion's strategy is: the member it names; else its answer, when it is short enough to be a name
    (a wrong one); None (degenerate) for anything else."""
    code = member(prompt, completion)
    if code is not None:
        return code
    answer = answer_of(completion)
    return answer if answer and len(answer.split()) <= MAX_NAME_WORDS else None
