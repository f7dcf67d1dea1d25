"""Run under `torchrun --nproc_per_node 2` with <model> <out> <rows per rank> <num_generations> <set_size>
[<rank whose judge raises>].

Each rank writes what its loss saw and the batch it computed the advantages from to <out>/rank<k>.pt; with a failing
rank, each writes the error training stopped with to <out>/rank<k>.err.
"""

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch
from tiny import row_keys, toy_dataset
from transformers import AutoTokenizer

from poly_epo_trl import PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.judges import JudgeFailing

torch.set_num_threads(1)


def digit_fraction(prompts, completions, **kwargs):
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]


class Recording(PolyEPOTrainer):
    def _compute_loss(self, model, inputs):
        self.seen.append((row_keys(self.processing_class, inputs), inputs["advantages"].detach().cpu()))
        return super()._compute_loss(model, inputs)


def main(model_dir: str, out: str, rows_per_rank: int, num_generations: int, set_size: int, fail_rank: int) -> None:
    args = PolyEPOConfig(
        output_dir=out,
        per_device_train_batch_size=rows_per_rank,
        num_generations=num_generations,
        set_size=set_size,
        max_completion_length=6,
        max_steps=2,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
        logging_steps=1,
    )
    trainer = Recording(
        model=model_dir,
        reward_funcs=digit_fraction,
        args=args,
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="answer:text",
    )
    trainer.seen = []
    judged = []
    submit_groups = trainer.judging.pipeline.submit_groups
    rank = trainer.accelerator.process_index

    def counting(groups):
        judged.append(len(groups))
        if rank == fail_rank:
            raise ConnectionError("the judge server went away")
        return submit_groups(groups)

    trainer.judging.pipeline.submit_groups = counting
    try:
        trainer.train()
    except JudgeFailing as error:
        with open(os.path.join(out, f"rank{rank}.err"), "w") as handle:
            handle.write(str(error))
        # Both ranks stopped with the error. Leave the group together, then exit without interpreter teardown: a
        # group left to teardown after the peer stopped aborted rank 0 once in CI ("terminate called without an
        # active exception"), and rank 0 hung once after leaving it alone while rank 1 had already exited.
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    batch = trainer.last_set_batch
    torch.save(
        {
            "seen": trainer.seen,
            "rewards": batch.rewards.cpu(),
            "cluster_ids": batch.cluster_ids.cpu(),
            "advantages": batch.advantages.cpu(),
            "completions": batch.completions,
            "prompts": batch.prompts,
            "judged_groups": judged,
            "rank": trainer.accelerator.process_index,
            "world": trainer.accelerator.num_processes,
        },
        os.path.join(out, f"rank{trainer.accelerator.process_index}.pt"),
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), int(sys.argv[6]) if len(sys.argv) > 6 else -1)
