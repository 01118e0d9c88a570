"""The reinforcement (GRPO) trainer: ``python -m workers.trainer.grpo SPEC.json``.

Rows are OpenAI's RFT format: a conversation ending with a user turn, plus any keys a grader
reads as ``{{item.*}}``. TRL's ``GRPOTrainer`` samples ``generations_per_prompt`` answers per
prompt; the job's grader (``workers.graders``) scores each one as the reward, python graders
only inside the sandbox pool. A grader error scores the range's low end and is counted.

Metering, exact: rollout tokens are prompt tokens (the chat template's, counted once per
row) plus the ``completion_ids`` of every sample; trained tokens are the generated tokens,
the ones the policy loss is computed on. Eval: the mean grader score of greedy answers to the
held-out prompts, before and after, and on the first ones at each checkpoint; eval tokens are
the prompts plus the greedy answers' tokens (``eval_plan``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers.trainer_callback import PrinterCallback

from workers.graders.scoring import Scorer
from workers.graders.templates import sample_of
from workers.trainer import eval_plan
from workers.trainer.sft import (
    IS_MAIN,
    WORLD_SIZE,
    PlatformCallback,
    emit,
    eval_usage,
    load_model,
    split_eval,
    timed_eval,
    train_timed,
)

EVAL_METRIC = "mean_grader_score"


class Meter:
    """Rollout and trained tokens, and grader errors, counted as the reward function sees
    them (called from TRL's training loop, read by the callback).

    Under torchrun each rank's reward function sees only its own completions, so the callback
    sums the counts over ranks at every step end (``gather``), where every rank takes part.
    """

    def __init__(self) -> None:
        self.rollout_tokens = self.generated_tokens = self.grader_errors = 0
        self.last_error: str | None = None
        self.lock = threading.Lock()
        self.totals: tuple[int, int, int] = (0, 0, 0)  # generated, rollout, errors: all ranks

    def gather(self, device: Any) -> None:
        counts = (self.generated_tokens, self.rollout_tokens, self.grader_errors)
        if WORLD_SIZE > 1:
            import torch.distributed as dist

            tensor = torch.tensor(counts, dtype=torch.long, device=device)
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
            counts = tuple(int(x) for x in tensor.tolist())
        self.totals = counts  # type: ignore[assignment]


class GrpoCallback(PlatformCallback):
    reported_logs = {"reward": "train_mean_reward", "reward_std": "train_reward_std",
                     "kl": "train_kl"}

    def __init__(self, spec: dict[str, Any], meter: Meter) -> None:
        super().__init__(spec)
        self.meter = meter

    def attempt_tokens(self) -> int:
        return self.meter.totals[0]

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        self.meter.gather(args.device)  # on every rank, every step: one collective
        return super().on_step_end(args, state, control, **kwargs)


def load_prompts(path: str | None, tokenizer: Any) -> list[dict[str, Any]]:
    if not path:
        return []
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            item = json.loads(line)
            prompt = [{"role": m["role"], "content": m["content"]} for m in item["messages"]]
            prompt_tokens = len(tokenizer.apply_chat_template(
                prompt, tokenize=True, return_dict=True, add_generation_prompt=True
            )["input_ids"])
            rows.append({"prompt": prompt, "item_json": json.dumps(item),
                         "prompt_tokens": prompt_tokens})
    return rows


def _text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", ...}]
        return "".join(str(m.get("content", "")) for m in completion)
    return str(completion)


def reward_function(scorer: Scorer, meter: Meter) -> Any:
    def grader_reward(prompts: list[Any], completions: list[Any],
                      completion_ids: list[list[int]], item_json: list[str],
                      prompt_tokens: list[int], **_: Any) -> list[float]:
        pairs = [(sample_of(_text(c).strip()), json.loads(item))
                 for c, item in zip(completions, item_json, strict=True)]
        grades = scorer.grade_many(pairs)
        generated = sum(len(ids) for ids in completion_ids)
        with meter.lock:
            meter.generated_tokens += generated
            meter.rollout_tokens += generated + sum(prompt_tokens)
            for grade in grades:
                if grade.error is not None:
                    meter.grader_errors += 1
                    meter.last_error = grade.error
        return [grade.score for grade in grades]

    return grader_reward


@torch.inference_mode()
def greedy_texts(model: Any, tokenizer: Any, prompts: list[list[dict[str, str]]],
                 max_new_tokens: int, batch_size: int = 64,
                 meter: eval_plan.EvalMeter | None = None) -> list[str]:
    """Greedy answers; ``meter`` counts real prompt tokens + tokens generated up to the stop."""
    device = next(model.parameters()).device
    was_training, side = model.training, tokenizer.padding_side
    model.eval()
    tokenizer.padding_side = "left"
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    texts: list[str] = []
    try:
        for start in range(0, len(prompts), batch_size):
            chunk = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                     for p in prompts[start:start + batch_size]]
            batch = tokenizer(chunk, return_tensors="pt", padding=True,
                              add_special_tokens=False).to(device)
            output = model.generate(**batch, do_sample=False, max_new_tokens=max_new_tokens,
                                    eos_token_id=eos, pad_token_id=pad)
            answers = output[:, batch["input_ids"].shape[1]:].tolist()
            if meter is not None:
                meter.add(int(batch["attention_mask"].sum()) + sum(
                    eval_plan.generated_length(ids, {eos, pad}) for ids in answers))
            for ids in answers:
                cut = next((i for i, t in enumerate(ids) if t in {eos, pad}), len(ids))
                texts.append(tokenizer.decode(ids[:cut], skip_special_tokens=True).strip())
    finally:
        tokenizer.padding_side = side
        if was_training:
            model.train()
    return texts


def mean_score(model: Any, tokenizer: Any, rows: list[dict[str, Any]], scorer: Scorer,
               max_new_tokens: int, meter: eval_plan.EvalMeter | None = None
               ) -> tuple[float, int]:
    texts = greedy_texts(model, tokenizer, [row["prompt"] for row in rows], max_new_tokens,
                         meter=meter)
    grades = scorer.grade_many([(sample_of(text), json.loads(row["item_json"]))
                                for text, row in zip(texts, rows, strict=True)])
    return (sum(g.score for g in grades) / len(grades),
            sum(g.error is not None for g in grades))


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    hyper, rl = spec["hyperparameters"], spec["reinforcement"]
    seed = int(spec["seed"])
    random.seed(seed)
    torch.manual_seed(seed)
    on_gpu = torch.cuda.is_available()
    bf16 = on_gpu and torch.cuda.is_bf16_supported()
    model, tokenizer = load_model(spec, torch.bfloat16 if bf16 else torch.float32)
    if on_gpu:
        model = model.to(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}")
    train_rows, eval_rows = split_eval(load_prompts(spec["train_path"], tokenizer),
                                       load_prompts(spec.get("validation_path"), tokenizer),
                                       int(spec["eval_samples"]), seed)
    if not IS_MAIN:
        eval_rows = []  # under torchrun rank 0 scores; the others only train
    generations = int(rl["generations_per_prompt"])
    max_tokens = int(rl["max_completion_length"])
    meter = Meter()
    callback = GrpoCallback(spec, meter)
    evals = callback.eval_meter
    result: dict[str, Any] = {"eval_metric": EVAL_METRIC if eval_rows else None}
    with Scorer(rl["grader"], sandbox_workers=int(rl.get("sandbox_workers", 2))) as scorer:
        if eval_rows:
            before, errors = timed_eval(evals, eval_plan.BEFORE, lambda: mean_score(
                model, tokenizer, eval_rows, scorer, max_tokens, evals))
            result["eval_before"] = before
            meter.grader_errors += errors
            emit("eval", phase="before", metric=EVAL_METRIC, score=before,
                 samples=len(eval_rows))
        lora = spec.get("lora")
        peft_config = None
        if lora:
            peft_config = LoraConfig(r=lora["r"], lora_alpha=lora["alpha"],
                                     lora_dropout=lora["dropout"],
                                     target_modules=lora["target_modules"],
                                     task_type="CAUSAL_LM")
        prompts_per_step = int(hyper["batch_size"])
        total_steps = max(1, eval_plan.total_steps(rows=len(train_rows),
                                                   per_step=prompts_per_step,
                                                   epochs=hyper["n_epochs"],
                                                   world_size=WORLD_SIZE))
        logging_steps, checkpoint_steps = eval_plan.step_intervals(
            steps=total_steps, logging_steps=hyper.get("logging_steps") or 0,
            checkpoint_every_steps=hyper.get("checkpoint_every_steps") or 0)
        config = GRPOConfig(
            output_dir=spec["output_dir"],
            num_train_epochs=hyper["n_epochs"],
            # TRL counts the batch in completions: prompts per step x generations per prompt.
            per_device_train_batch_size=prompts_per_step * generations,
            num_generations=generations,
            max_completion_length=max_tokens,
            temperature=float(rl["temperature"]),
            beta=float(rl["kl_beta"]),
            learning_rate=hyper["learning_rate"],
            lr_scheduler_type=hyper["lr_scheduler"],
            warmup_steps=float(hyper["warmup_ratio"]),
            logging_steps=logging_steps,
            save_strategy="steps",
            save_steps=checkpoint_steps,
            seed=seed,
            data_seed=seed,
            bf16=bf16,
            use_cpu=not on_gpu,
            gradient_checkpointing=False,
            report_to="none",
            disable_tqdm=True,
            dataloader_num_workers=0,
            log_completions=False,
        )
        if eval_rows:
            subset = eval_rows[:eval_plan.CHECKPOINT_EVAL_SAMPLES]

            def checkpoint_eval(scored: Any) -> dict[str, float]:
                score, errors = mean_score(scored, tokenizer, subset, scorer, max_tokens, evals)
                meter.grader_errors += errors
                return {f"eval_{EVAL_METRIC}": score, "eval_samples": float(len(subset))}

            callback.checkpoint_eval = checkpoint_eval
        trainer = GRPOTrainer(model=model, reward_funcs=reward_function(scorer, meter),
                              args=config, train_dataset=Dataset.from_list(train_rows),
                              processing_class=tokenizer, peft_config=peft_config,
                              callbacks=[callback])
        callback.trainer = trainer
        trainer.remove_callback(PrinterCallback)  # stdout carries our JSON lines only
        train_seconds = train_timed(trainer, callback, spec.get("resume_dir"))
        meter.gather(trainer.args.device)  # every rank: the counts of the last step too
        generated, rollout, meter.grader_errors = meter.totals  # rank 0 reports all ranks
        result.update(trained_tokens=generated, steps=trainer.state.global_step,
                      train_seconds=train_seconds,
                      stopped=callback.stopped, stop_reason=callback.stop_reason,
                      stop_message=callback.stop_message, rollout_tokens=rollout)
        if not callback.stopped:
            final_dir = Path(spec["final_dir"])
            trainer.save_model(str(final_dir))  # writes on the main process only
            if IS_MAIN:
                tokenizer.save_pretrained(str(final_dir))
            result["final_dir"] = str(final_dir)
            if eval_rows:
                after, errors = timed_eval(evals, eval_plan.AFTER, lambda: mean_score(
                    trainer.model, tokenizer, eval_rows, scorer, max_tokens, evals))
                result["eval_after"] = after
                meter.grader_errors += errors
                emit("eval", phase="after", metric=EVAL_METRIC, score=after,
                     samples=len(eval_rows))
    result["grader_errors"] = meter.grader_errors
    result.update(eval_usage(evals))
    if meter.grader_errors:
        emit("warning", message=f"{meter.grader_errors} samples could not be graded and "
             f"scored the range's low end; last error: {meter.last_error}")
    return result


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    emit("done", **run(spec))


if __name__ == "__main__":
    main()
