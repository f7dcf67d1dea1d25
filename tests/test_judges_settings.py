"""One judge configuration: every judge setting a training recipe gives, ``poly-epo eval`` and
``poly-epo judge-agreement`` take with the same name, the same check and the same resulting judge."""

import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from poly_epo_trl.assembly import AgreementArguments, EvalArguments
from poly_epo_trl.commands import agreement, train
from poly_epo_trl.commands import eval as evaluate
from poly_epo_trl.constants import DEGENERATE_CLUSTER_ID
from poly_epo_trl.judges import JudgeSettings, OpenAICompatibleJudge, ServerOptions
from poly_epo_trl.recipe import RecipeError
from poly_epo_trl.trainer import PolyEPOConfig

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "recipes" / "tiny" / "poly_epo" / "config_cpu.yaml"
EVAL = ROOT / "recipes" / "tiny" / "eval" / "config_demo.yaml"
# a value other than the default for every judge setting
CHANGED = {
    "judge": "openai",
    "judge_base_url": "http://127.0.0.1:9/v1",
    "judge_model": "judge-model",
    "judge_api_key_env": "MY_JUDGE_KEY",
    "judge_max_concurrency": 7,
    "judge_initial_concurrency": 3,
    "judge_fallback": "skip",
    "judge_max_fallback_frac": 0.25,
    "judge_fallback_patience": 5,
    "judge_max_outage_seconds": 30.0,
    "judge_template": "code",
    "judge_cache_dir": "CACHE",
    "judge_max_tokens": 99,
    "judge_max_response_chars": 500,
    "judge_tool_result_chars": 50,
    "judge_max_responses_per_request": 4,
    "judge_temperature": 0.3,
    "judge_structured_output": "guided_json",
    "judge_extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
    "judge_stream": False,
    "judge_timeout": 9.0,
    "judge_connect_timeout": 2.0,
    "judge_retry_budget": 11.0,
}


def recipe(base: Path, tmp_path: Path, **changes) -> list[str]:
    settings = {**yaml.safe_load(base.read_text()), **changes, "output_dir": str(tmp_path / base.stem)}
    path = tmp_path / f"{base.stem}.yaml"
    path.write_text(yaml.safe_dump(settings))
    return ["--config", str(path)]


def test_the_judge_settings_are_one_set_of_fields():
    names = {f.name for f in dataclasses.fields(JudgeSettings)}
    assert set(CHANGED) == names  # a new setting is tried below too
    for owner in (PolyEPOConfig, EvalArguments, AgreementArguments):
        assert names <= {f.name for f in dataclasses.fields(owner)}, owner


def test_every_judge_setting_of_a_training_recipe_works_in_eval_and_agreement(tmp_path):
    changed = {**CHANGED, "judge_cache_dir": str(tmp_path / "cache")}
    _, training, _ = train.parse(recipe(TRAIN, tmp_path, **changed))
    for parse in (evaluate.parse, agreement.parse):
        args = parse(recipe(EVAL, tmp_path, **changed))
        for name, value in changed.items():
            assert getattr(args, name) == getattr(training, name) == value, name
        assert args.judge_spec() == replace(training.judge_spec(), degenerate_cluster_id=DEGENERATE_CLUSTER_ID)
        pipelines = [args.make_judge(), training.make_judge()]
        for pipeline in pipelines:
            assert isinstance(pipeline.judge, OpenAICompatibleJudge)
        seen = [
            (j.base_url, j.model, j.api_key_env, j.max_concurrency, p.fallback, p.max_outage_seconds, j.retry)
            for p, j in ((p, p.judge) for p in pipelines)
        ]
        assert seen[0] == seen[1]
        assert seen[0][:6] == ("http://127.0.0.1:9/v1", "judge-model", "MY_JUDGE_KEY", 7, "skip", 30.0)


@pytest.mark.parametrize(
    "name, value",
    [
        ("judge_temperature", 5),
        ("judge_fallback", "sometimes"),
        ("judge_max_responses_per_request", 1),
        ("judge_base_url", "http://user:secret@host/v1"),
        ("judge_template", "no/such/template.txt"),
    ],
)
def test_a_bad_judge_setting_stops_training_and_eval_with_the_same_message(tmp_path, name, value):
    messages = []
    for parse, base in ((lambda argv: train.parse(argv), TRAIN), (evaluate.parse, EVAL)):
        with pytest.raises(RecipeError) as error:
            parse(recipe(base, tmp_path, **{name: value}))
        messages.append(str(error.value))
    assert name in messages[0] and messages[0] == messages[1]


def test_eval_judges_with_a_training_recipes_judge_block_and_stops_cleanly_when_the_judge_refuses(
    tmp_path, monkeypatch, capsys, caplog
):
    """``poly-epo eval`` against a real server that wants an API key, named by judge_api_key_env as training names
    it: without the key, the run stops with the server's reason and exit 1, no traceback, its samples kept; with
    it, the same command resumes without sampling again and judges every group (in parts of 4, cached)."""
    from judge_server import ServerProcess

    with ServerProcess(slots=1, latency=0.01, api_key="sekret-123", model="judge-m") as server:
        judge_block = {
            "judge": "openai",
            "judge_base_url": f"http://127.0.0.1:{server.port}/v1",
            "judge_model": "judge-m",
            "judge_api_key_env": "MY_JUDGE_KEY",
            "judge_cache_dir": str(tmp_path / "cache"),
            "judge_max_responses_per_request": 4,
            "judge_retry_budget": 2.0,
        }
        argv = recipe(EVAL, tmp_path, **judge_block, num_samples=8, max_problems=3, judge_samples=None)
        monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
        with pytest.raises(SystemExit) as stop:
            evaluate.main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 1 and "Traceback" not in err, err
        assert "export it as $MY_JUDGE_KEY" in err and "the same command resumes" in err
        monkeypatch.setenv("MY_JUDGE_KEY", "sekret-123")
        refused = server.stats().get("completed", 0)
        with caplog.at_level("INFO", logger="poly_epo_trl.evaluation"):
            report = evaluate.main(argv)
        assert server.stats()["completed"] - refused == 3 * 2  # 3 groups of 8, each in 2 parts of 4
    problems = report["problems"][next(iter(report["problems"]))]
    assert len(problems) == 3 and all(p["distinct_correct_clusters"] >= 0 for p in problems)
    assert "resuming with 3 sampled and 0 scored of 3 problems" in caplog.text


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("judge_timeout", 0, "judge_timeout must be positive"),
        ("judge_connect_timeout", -1, "judge_connect_timeout must be positive"),
        ("judge_retry_budget", -5, "judge_retry_budget must be non-negative"),
        ("judge_max_concurrency", 0, "judge_max_concurrency must be at least 1"),
        ("judge_initial_concurrency", 0, "judge_initial_concurrency must be at least 1"),
        ("judge_max_tokens", 0, "judge_max_tokens must be at least 1"),
        ("judge_temperature", -0.1, "judge_temperature must be within"),
        ("judge_structured_output", "grammar", "judge_structured_output must be one of"),
        ("judge_max_fallback_frac", 1.5, "judge_max_fallback_frac must be within"),
        ("judge_fallback_patience", 0, "judge_fallback_patience must be at least 1"),
        ("judge_extra_body", "{not json", "judge_extra_body is not JSON"),
        ("judge_extra_body", "[1, 2]", "judge_extra_body must be a mapping"),
        ("judge_base_url", "localhost:8000/v1", "is not an http"),
    ],
)
def test_judge_settings_are_checked(tmp_path, field, value, message):
    from poly_epo_trl import PolyEPOConfig

    with pytest.raises(ValueError, match=message):
        PolyEPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, **{field: value})


def test_judge_settings_reach_the_judge(tmp_path):
    from poly_epo_trl import PolyEPOConfig

    config = PolyEPOConfig(
        output_dir=str(tmp_path),
        report_to="none",
        use_cpu=True,
        judge="openai",
        judge_base_url="http://host:1/api/v1",
        judge_model="org/judge",
        judge_max_tokens=200,
        judge_temperature=0.3,
        judge_extra_body='{"chat_template_kwargs": {"enable_thinking": false}}',
        judge_retry_budget=30,
        judge_initial_concurrency=2,
        judge_max_concurrency=4,
        judge_max_response_chars=500,
        judge_max_responses_per_request=6,
    )
    judge = config.make_judge().judge
    assert (judge.max_response_chars, judge.max_responses_per_request) == (500, 6)
    assert (judge.base_url, judge.model, judge.max_tokens, judge.temperature) == (
        "http://host:1/api/v1",
        "org/judge",
        200,
        0.3,
    )
    assert judge.extra_body == {"chat_template_kwargs": {"enable_thinking": False}}
    assert judge.retry.budget == 30 and judge.limiter.limit == 2 and judge.limiter.maximum == 4


@pytest.mark.parametrize(
    "settings",
    [
        {"judge": "openai", "judge_base_url": "http://user:s3cret@host:8000/v1"},
        {"judge": "openai:http://user:s3cret@host:8000/v1/m"},
        {"judge": "answer,openai:http://host:8000/v1/m?api_key=s3cret"},
    ],
)
def test_credentials_in_judge_urls_are_refused_and_never_echoed(tmp_path, settings):
    from poly_epo_trl import PolyEPOConfig

    with pytest.raises(ValueError, match="carries credentials") as error:
        PolyEPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, **settings)
    assert "s3cret" not in str(error.value) and "judge_api_key_env" in str(error.value)
    with pytest.raises(ValueError, match="carries credentials"):
        OpenAICompatibleJudge(ServerOptions("http://user:s3cret@host:8000/v1", "m"))
