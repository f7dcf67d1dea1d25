"""What the judge decided, visible after the fact: the completions table's judge columns, the audit trail of judged
groups (through a resume), and the strategies LM judges describe."""

import json

import pandas as pd
import pytest
import torch
from tiny import save_tiny_model, small_config, toy_dataset
from transformers import AutoTokenizer

from poly_epo_trl import GRPODivTrainer, PolyEPOTrainer
from poly_epo_trl.judges import AnswerJudge, JudgeCache, JudgePipeline
from poly_epo_trl.judges.audit import AUDIT_FILE, JudgeAudit, audited, read_audit
from poly_epo_trl.tasks.sum_pair import pair_judge, sum_pair_reward
from poly_epo_trl.trainer.verdicts import JUDGE_COLUMNS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def trainer(model_dir, tmp_path, trainer_cls=PolyEPOTrainer, judge=pair_judge, **overrides):
    return trainer_cls(
        model=str(model_dir),
        reward_funcs=sum_pair_reward,
        args=small_config(tmp_path / "out", max_completion_length=6, log_completions=True, **overrides),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=judge,
    )


def by_group(values: list, size: int) -> list[list]:
    return [values[i : i + size] for i in range(0, len(values), size)]


@pytest.mark.parametrize("trainer_cls", [PolyEPOTrainer, GRPODivTrainer])
def test_the_completions_table_shows_what_the_judge_returned(trainer_cls, model_dir, tmp_path):
    run = trainer(model_dir, tmp_path, trainer_cls, judge="answer:text", max_steps=1)
    run.train()
    batch = run.last_set_batch
    extra = {name: list(values) for name, values in run._logs["extra"].items()}
    assert set(JUDGE_COLUMNS) <= set(extra)
    assert extra["cluster"] == batch.cluster_ids.flatten().tolist()
    assert extra["judge"] == ["answer"] * 8 and extra["fallback"] == [""] * 8
    # the answer judge names each cluster by its answer: one name per cluster, two clusters never share one
    names = {(c, s) for c, s in zip(extra["cluster"], extra["strategy"], strict=True) if c != 100}
    assert len({c for c, _ in names}) == len(names) == len({s for _, s in names})
    assert all(s.startswith("answer ") for _, s in names)
    rewards = batch.rewards.flatten().tolist()
    for cluster, correct in zip(extra["cluster"], extra["correct_cluster"], strict=True):
        members = [r for c, r in zip(extra["cluster"], rewards, strict=True) if c == cluster]
        assert correct == (cluster != 100 and max(members) >= 1.0)
    if trainer_cls is GRPODivTrainer:
        assert "diversity_bonus" in run._logs["rewards"]  # the bonus column stays
    # TRL writes the table it logs (to wandb, trackio, the console) to output_dir/completions: the columns are there
    (table,) = (tmp_path / "out" / "completions").glob("*.parquet")
    logged = pd.read_parquet(table)
    assert logged["cluster"].tolist() == extra["cluster"] and logged["strategy"].tolist() == extra["strategy"]


def test_a_fallback_group_says_which_fallback_and_why(model_dir, tmp_path):
    def broken(prompt, completions):
        raise ValueError("the judge's answer had 3 ids")

    run = trainer(model_dir, tmp_path, judge=broken, max_steps=1, judge_fallback="distinct")
    run.train()
    extra = run._logs["extra"]
    assert list(extra["fallback"]) == ["distinct: the judge's answer had 3 ids"] * 8
    assert list(extra["cluster"]) == list(range(8))
    (record,) = read_audit(tmp_path / "out")
    assert record["fallback"] == "distinct" and "3 ids" in record["cause"] and record["cluster_ids"] == list(range(8))


def test_the_audit_trail_holds_every_judged_group_once_through_a_resume(model_dir, tmp_path):
    first = trainer(model_dir, tmp_path, max_steps=2, save_strategy="steps", save_steps=1)
    first.train()
    path = tmp_path / "out" / AUDIT_FILE
    records = read_audit(path)
    assert [r["step"] for r in records] == [1, 2]
    batch = first.last_set_batch
    last = records[-1]
    assert last["cluster_ids"] == batch.cluster_ids[0].tolist()
    assert last["rewards"] == batch.rewards[0].tolist()
    assert last["advantages"] == pytest.approx(batch.advantages[0].tolist())
    assert last["completions"] == batch.completions and last["problem"] == batch.prompts[0]
    assert last["judge"] == "pair_judge" and last["fallback"] is None and last["seconds"] >= 0
    # as a kill leaves it: step 2 judged but the run resumes from checkpoint-1, and a line cut short
    with path.open("a") as handle:
        handle.write('{"step": 3, "mode": "tr')
    resumed = trainer(model_dir, tmp_path, max_steps=3)
    resumed.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-1"))
    again = read_audit(path)
    assert [r["step"] for r in again] == [1, 2, 3]
    assert again[0] == records[0]
    # the resumed run redid step 2 exactly (exact resume), so it judged the same group the same way
    assert again[1]["completions"] == records[1]["completions"]
    assert again[1]["cluster_ids"] == records[1]["cluster_ids"]
    assert path.read_text().endswith("}\n")


def test_a_fresh_run_starts_the_audit_anew_and_a_fraction_samples_the_same_groups(model_dir, tmp_path):
    trainer(model_dir, tmp_path, max_steps=2).train()
    assert len(read_audit(tmp_path / "out")) == 2
    trainer(model_dir, tmp_path, max_steps=1).train()
    assert [r["step"] for r in read_audit(tmp_path / "out")] == [1]
    trainer(model_dir, tmp_path, max_steps=1, judge_audit_fraction=0).train()
    assert read_audit(tmp_path / "out") == []
    picked = [audited("train", step, g, 0.25) for step in range(200) for g in range(8)]
    assert 0.2 < sum(picked) / len(picked) < 0.3
    assert picked == [audited("train", step, g, 0.25) for step in range(200) for g in range(8)]


def test_resume_at_keeps_what_the_checkpoint_saw(tmp_path):
    audit = JudgeAudit(tmp_path)
    audit.append([{"step": s, "mode": m} for s in (1, 2, 3) for m in ("train", "eval")])
    assert audit.resume_at(2) == 2
    kept = [(r["step"], r["mode"]) for r in read_audit(tmp_path)]
    assert kept == [(s, m) for s in (1, 2) for m in ("train", "eval")]
    assert audit.resume_at(0) == 4 and read_audit(tmp_path) == []


def test_answer_judge_names_its_strategies_and_the_cache_keeps_lm_descriptions(tmp_path):
    (result,) = JudgePipeline(AnswerJudge("boxed")).judge_groups(
        [("2+3?", ["\\boxed{5}", "no idea", "so \\boxed{5}", "\\boxed{6}"])]
    )
    assert result.labels == [0, 100, 0, 1] and result.strategies == ["answer 5", None, "answer 5", "answer 6"]
    cache = JudgeCache(tmp_path)
    cache.put("k", [0, 1], ["counts up", None])
    cache._connection().execute("INSERT INTO answers VALUES ('old', ?)", (json.dumps([0, 0]),))
    assert cache.get("k") == ([0, 1], ["counts up", None]) and cache.get("old") == ([0, 0], None)


def test_a_judge_that_describes_strategies_wrongly_is_a_judging_failure():
    from poly_epo_trl.judges import ClusteringJudge, Clusters

    class Miscounting(ClusteringJudge):
        name = "miscounting"

        async def acluster(self, prompt, completions):
            return Clusters([0] * len(completions), ["one"])

    (result,) = JudgePipeline(Miscounting(), fallback="distinct").judge_groups([("p", ["a", "b"])])
    assert result.fallback == "distinct" and "expected 2 strategies" in result.cause
    assert torch.tensor(result.labels).tolist() == [0, 1]


def test_judge_agreement_on_a_runs_audit_trail_reproduces_its_labels(model_dir, tmp_path, capsys):
    from poly_epo_trl.commands import agreement

    trainer(model_dir, tmp_path, max_steps=3).train()
    out = tmp_path / "agreement"
    report = agreement.main(
        ["--judged_groups", str(tmp_path / "out"), "--judges", "sum_pair", "distinct", "--output_dir", str(out)]
    )
    assert report["groups"] == 3
    recorded = {tuple(p["judges"]): p for p in report["pairs"]}
    same = recorded[("recorded", "sum_pair")]
    assert same["groups"] == 3 and same["ari"]["mean"] == 1.0 and same["degenerate_agreement"]["mean"] == 1.0
    assert report["judges"]["recorded"]["labels"] == report["judges"]["sum_pair"]["labels"]
    other = recorded[("recorded", "distinct")]
    assert other["groups"] == 3 and other["ari"]["mean"] < 1.0
    assert "recorded vs sum_pair" in capsys.readouterr().out
    assert (out / "agreement.png").exists()


def test_judge_agreement_refuses_an_empty_or_missing_trail(tmp_path, capsys):
    from poly_epo_trl.commands import agreement

    (tmp_path / AUDIT_FILE).write_text("")
    for path in (tmp_path, tmp_path / "nowhere.jsonl"):
        with pytest.raises(SystemExit) as stop:
            agreement.main(["--judged_groups", str(path), "--judges", "answer", "--output_dir", str(tmp_path / "a")])
        assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "no judged groups there" in err and "Traceback" not in err


@pytest.mark.parametrize("scale_rewards", ["none", "group"])
def test_dr_grpo_writes_its_groups_with_the_advantages_trl_trained_on(model_dir, tmp_path, scale_rewards):
    """Dr.GRPO (no judge, TRL's own advantage) writes every group to the trail like any method, judge null, with
    the advantages TRL computed: r - mean, divided by the group's std under scale_rewards: group, as TRL divides."""
    from poly_epo_trl.trainer import DrGRPOTrainer

    run = trainer(model_dir, tmp_path, DrGRPOTrainer, judge=None, max_steps=2, scale_rewards=scale_rewards)
    run.train()
    records = read_audit(tmp_path / "out" / AUDIT_FILE)
    assert [r["step"] for r in records] == [1, 2] and all(r["judge"] is None for r in records)
    for record in records:
        rewards = torch.tensor(record["rewards"], dtype=torch.float64)
        expected = rewards - rewards.mean()
        if scale_rewards == "group":
            expected = expected / (rewards.std() + 1e-4)
        assert record["advantages"] == pytest.approx(expected.tolist(), abs=1e-5)
    assert records[-1]["completions"] == run.last_set_batch.completions


def test_an_audit_judge_that_cannot_answer_stops_before_training(model_dir, tmp_path):
    """A spec for the audit judge is sent one probe group when the trainer is built, as the training judge is: a
    server that is not there stops the run in one line naming the audit judge, not as failed audits later."""
    spec = "openai:http://127.0.0.1:9/v1/judge-model"
    with pytest.raises(ValueError, match=r"The audit judge \(audit_judge='openai:http://127\.0\.0\.1:9/v1/judge-mo"):
        trainer(model_dir, tmp_path, audit_judge=spec, judge_retry_budget=1)
    quiet = PolyEPOTrainer(
        model=str(model_dir), reward_funcs=sum_pair_reward, train_dataset=toy_dataset(), judge=pair_judge,
        args=small_config(tmp_path / "quiet", audit_judge=spec, judge_retry_budget=1), check_judge=False,
    )  # fmt: skip
    assert quiet.judging.auditor is not None  # check_judge=False: built, not probed
