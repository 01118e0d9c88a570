"""The DPO trainer: ``python -m workers.trainer.dpo SPEC.json``, same protocol as SFT's.

Preference rows (OpenAI's format) become TRL's conversational ``prompt``/``chosen``/
``rejected`` columns; TRL's ``DPOTrainer`` trains, LoRA unless full fine-tuning was asked.
The reference model is the starting model: with LoRA, TRL uses the base with the adapter
disabled (no second copy); with full fine-tuning, a frozen copy of the starting weights.

Eval on held-out pairs, before and after: preference accuracy (``preference_eval``), and
greedy answer match when the rows carry a ``reference_answer``; each checkpoint on the first
held-out pairs (``eval_plan``). Trained tokens are TRL's count of real tokens of chosen +
rejected sequences; eval tokens are every scored sequence plus greedy prompts and answers.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers.trainer_callback import PrinterCallback

from workers.trainer import eval_plan
from workers.trainer.evaluation import exact_match
from workers.trainer.preference_eval import (
    implicit_reward_accuracy,
    pair_logprobs,
    preference_accuracy,
)
from workers.trainer.sft import (
    IS_MAIN,
    PlatformCallback,
    emit,
    eval_usage,
    load_model,
    split_eval,
    step_intervals,
    timed_eval,
    train_timed,
)

EVAL_METRIC = "preference_accuracy"


class DpoCallback(PlatformCallback):
    reported_logs = {"rewards/accuracies": "train_reward_accuracy",
                     "rewards/margins": "train_reward_margin"}


def _message(message: dict[str, Any]) -> dict[str, str]:
    return {"role": message["role"], "content": message["content"]}


def load_pairs(path: str | None) -> list[dict[str, Any]]:
    """TRL's conversational preference rows; the reference answer is kept for eval only."""
    if not path:
        return []
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            pair = {"prompt": [_message(m) for m in row["input"]["messages"]],
                    "chosen": [_message(row["preferred_output"][0])],
                    "rejected": [_message(row["non_preferred_output"][0])]}
            if isinstance(row.get("reference_answer"), str):
                pair["reference_answer"] = row["reference_answer"]
            rows.append(pair)
    return rows


def _answer_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat rows for answer match, when every held-out pair carries a reference answer."""
    if not rows or not all("reference_answer" in row for row in rows):
        return []
    return [{"messages": [*row["prompt"], {"role": "assistant",
                                           "content": row["reference_answer"]}]}
            for row in rows]


def _score(model: Any, tokenizer: Any, eval_rows: list[dict[str, Any]],
           answer_rows: list[dict[str, Any]], meter: eval_plan.EvalMeter
           ) -> tuple[float, list[float], list[float], float | None]:
    chosen, rejected = pair_logprobs(model, tokenizer, eval_rows, meter=meter)
    match = exact_match(model, tokenizer, answer_rows, meter=meter) if answer_rows else None
    return preference_accuracy(chosen, rejected), chosen, rejected, match


def _checkpoint_eval(tokenizer: Any, eval_rows: list[dict[str, Any]],
                     answer_rows: list[dict[str, Any]], meter: eval_plan.EvalMeter) -> Any:
    """The same scores on the first held-out pairs, as checkpoint metrics."""
    rows = eval_rows[:eval_plan.CHECKPOINT_EVAL_SAMPLES]
    answers = answer_rows[:eval_plan.CHECKPOINT_EVAL_SAMPLES]

    def scores(model: Any) -> dict[str, float]:
        accuracy, _, _, match = _score(model, tokenizer, rows, answers, meter)
        metrics = {f"eval_{EVAL_METRIC}": accuracy, "eval_samples": float(len(rows))}
        if match is not None:
            metrics["eval_exact_match"] = match
        return metrics

    return scores


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from peft import LoraConfig
    from trl import DPOConfig, DPOTrainer

    hyper, dpo = spec["hyperparameters"], spec.get("dpo") or {}
    seed = int(spec["seed"])
    random.seed(seed)
    torch.manual_seed(seed)
    on_gpu = torch.cuda.is_available()
    bf16 = on_gpu and torch.cuda.is_bf16_supported()
    model, tokenizer = load_model(spec, torch.bfloat16 if bf16 else torch.float32)
    if on_gpu:
        model = model.to(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}")

    train_rows, eval_rows = split_eval(load_pairs(spec["train_path"]),
                                       load_pairs(spec.get("validation_path")),
                                       int(spec["eval_samples"]), seed)
    if not IS_MAIN:
        eval_rows = []  # under torchrun rank 0 scores; the others only train
    answer_rows = _answer_rows(eval_rows)
    result: dict[str, Any] = {"eval_metric": EVAL_METRIC if eval_rows else None}
    before_lp: tuple[list[float], list[float]] = ([], [])
    callback = DpoCallback(spec)
    meter = callback.eval_meter
    if eval_rows:
        accuracy, chosen, rejected, match = timed_eval(
            meter, eval_plan.BEFORE,
            lambda: _score(model, tokenizer, eval_rows, answer_rows, meter))
        before_lp = (chosen, rejected)
        result["eval_before"] = accuracy
        emit("eval", phase="before", metric=EVAL_METRIC, score=accuracy,
             samples=len(eval_rows))
        if match is not None:
            result["eval_more"] = {"exact_match": {"before": match}}
            emit("eval", phase="before", metric="exact_match", score=match,
                 samples=len(answer_rows))

    lora = spec.get("lora")
    peft_config = None
    if lora:
        peft_config = LoraConfig(r=lora["r"], lora_alpha=lora["alpha"],
                                 lora_dropout=lora["dropout"],
                                 target_modules=lora["target_modules"], task_type="CAUSAL_LM")
    sft_weight = float(dpo.get("sft_weight", 0.0))
    losses = {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, sft_weight]} \
        if sft_weight > 0 else {"loss_type": ["sigmoid"]}
    logging_steps, checkpoint_steps = step_intervals(hyper, len(train_rows))
    config = DPOConfig(
        output_dir=spec["output_dir"],
        num_train_epochs=hyper["n_epochs"],
        per_device_train_batch_size=hyper["batch_size"],
        learning_rate=hyper["learning_rate"],
        lr_scheduler_type=hyper["lr_scheduler"],
        warmup_steps=float(hyper["warmup_ratio"]),
        logging_steps=logging_steps,
        save_strategy="steps",
        save_steps=checkpoint_steps,
        seed=seed,
        data_seed=seed,
        max_length=hyper["max_seq_length"],
        beta=float(dpo.get("beta", 0.1)),
        **losses,
        bf16=bf16,
        use_cpu=not on_gpu,
        gradient_checkpointing=False,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    if eval_rows:
        callback.checkpoint_eval = _checkpoint_eval(tokenizer, eval_rows, answer_rows, meter)
    trainer = DPOTrainer(model=model, args=config,
                         train_dataset=Dataset.from_list(
                             [{k: row[k] for k in ("prompt", "chosen", "rejected")}
                              for row in train_rows]),
                         processing_class=tokenizer, peft_config=peft_config,
                         callbacks=[callback])
    callback.trainer = trainer
    trainer.remove_callback(PrinterCallback)  # stdout carries our JSON lines only
    train_seconds = train_timed(trainer, callback, spec.get("resume_dir"))
    result.update(trained_tokens=callback.attempt_tokens(), steps=trainer.state.global_step,
                  train_seconds=train_seconds,
                  stopped=callback.stopped, stop_reason=callback.stop_reason,
                  stop_message=callback.stop_message)
    if callback.stopped:
        return {**result, **eval_usage(meter)}
    final_dir = Path(spec["final_dir"])
    trainer.save_model(str(final_dir))  # writes on the main process only
    if IS_MAIN:
        tokenizer.save_pretrained(str(final_dir))
    if eval_rows:
        accuracy, chosen, rejected, match = timed_eval(
            meter, eval_plan.AFTER,
            lambda: _score(trainer.model, tokenizer, eval_rows, answer_rows, meter))
        result["eval_after"] = accuracy
        emit("eval", phase="after", metric=EVAL_METRIC, score=accuracy, samples=len(eval_rows))
        more = result.setdefault("eval_more", {})
        more["implicit_reward_accuracy"] = {
            "after": implicit_reward_accuracy(chosen, rejected, *before_lp)}
        if match is not None:
            more["exact_match"]["after"] = match
            emit("eval", phase="after", metric="exact_match", score=match,
                 samples=len(answer_rows))
    result["final_dir"] = str(final_dir)
    return {**result, **eval_usage(meter)}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    emit("done", **run(spec))


if __name__ == "__main__":
    main()
