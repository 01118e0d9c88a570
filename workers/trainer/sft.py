"""The supervised fine-tuning trainer: one self-contained run, top to bottom.

Runs as a child process of the worker: ``python -m workers.trainer.sft SPEC.json``. It reads
its whole configuration from the spec file, prints one JSON object per line on stdout
(metrics, checkpoint, eval, done) and logs everything else to stderr. It knows nothing of
the platform, the broker or storage; the worker process handles those.

Steps: load the starting model (merging earlier adapters), score it on held-out examples,
train with TRL's ``SFTTrainer`` (PEFT LoRA unless full fine-tuning was asked), checkpoint
every N steps (each scored on the first held-out examples) and whenever the stop flag appears
(cancel), score the result, save it. Every eval's tokens are counted by segment
(``eval_plan``) and reported for billing.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from transformers.trainer_callback import PrinterCallback

from workers import contract
from workers.trainer import eval_plan
from workers.trainer.evaluation import exact_match
from workers.trainer.holdout import split_eval

EVAL_METRIC = "exact_match"
# Under torchrun every rank runs this file; only rank 0 reports and evaluates, so usage and
# events are written once (TRAINING_NOTES.md: every rank calls the logging callbacks).
RANK = int(os.environ.get("RANK", "0"))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", "1"))
IS_MAIN = RANK == 0


def emit(kind: str, **data: Any) -> None:
    if IS_MAIN:
        print(json.dumps({"type": kind, **data}), flush=True)


def load_rows(path: str | None) -> list[dict[str, Any]]:
    if not path:
        return []
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                # Only role and content reach the chat template; other keys (OpenAI's
                # per-message weight, tool fields) would break strict templates.
                rows.append({"messages": [{"role": m["role"], "content": m["content"]}
                                          for m in row["messages"]]})
    return rows


# Scores a checkpoint's model on the first held-out rows: (metrics by name, e.g.
# {"eval_exact_match": 0.8}); the caller has set the meter's segment.
CheckpointEval = Callable[[Any], dict[str, float]]


def timed_eval(meter: eval_plan.EvalMeter, segment: str, run_eval: Callable[[], Any]) -> Any:
    """Run one eval pass under its usage segment, adding its wall time to the meter."""
    meter.segment = segment
    started = time.monotonic()
    try:
        return run_eval()
    finally:
        meter.seconds += time.monotonic() - started


def train_timed(trainer: Any, callback: PlatformCallback, resume_dir: str | None) -> float:
    """Run training; return its seconds without the checkpoint evals inside it, so pool
    calibration can fit training throughput from training time alone."""
    evals_before, started = callback.eval_meter.seconds, time.monotonic()
    trainer.train(resume_from_checkpoint=resume_dir)
    return round(time.monotonic() - started - (callback.eval_meter.seconds - evals_before), 3)


class PlatformCallback(TrainerCallback):
    """Reports metrics and checkpoints (scored when a checkpoint eval is set), and stops
    cooperatively when the flag file appears."""

    # TRL log keys reported besides the loss, by the name the platform shows them under.
    reported_logs = {"mean_token_accuracy": "train_mean_token_accuracy"}

    def __init__(self, spec: dict[str, Any]) -> None:
        self.stop_flag = Path(spec["stop_flag"])
        self.resume_tokens = int(spec.get("resume_trained_tokens", 0))
        self.started = time.monotonic()
        self.stopped = False
        self.stop_reason: str | None = None
        self.stop_message = ""
        self.budget = (contract.BudgetSpec.model_validate(spec["budget"])
                       if spec.get("budget") else None)
        self.attempt_started_at = float(spec.get("attempt_started_at") or time.time())
        self.trainer: Any = None
        self.last_metrics: dict[str, float] = {}
        self.eval_meter = eval_plan.EvalMeter()
        self.checkpoint_eval: CheckpointEval | None = None

    def attempt_tokens(self) -> int:
        # TRL counts real (non-padding) tokens, gathered over ranks; it restarts at 0 on
        # resume, which is what we want per attempt (TRAINING_NOTES.md).
        return int(getattr(self.trainer, "_total_train_tokens", 0))

    def agreed(self, stop: bool, device: Any) -> bool:
        """Stop if any rank wants to: one rank stopping alone would hang the others."""
        if WORLD_SIZE > 1:
            import torch.distributed as dist

            flag = torch.tensor(int(stop), device=device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            stop = bool(flag.item())
        return stop

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        if self.stopped:
            return control
        reason = None
        if self.stop_flag.exists():
            reason = self.stop_flag.read_text().strip() or "stop"
        elif self.budget is not None:
            tokens, seconds = self.attempt_tokens(), time.time() - self.attempt_started_at
            evals = self.eval_meter.total  # rank 0's; it alone scores
            if self.budget.reached(tokens=tokens, seconds=seconds, eval_tokens=evals):
                spent = self.budget.spent(tokens=tokens, seconds=seconds, eval_tokens=evals)
                reason = "budget"
                self.stop_message = (f"Paused at step {state.global_step}: the estimated "
                                     f"spend ${spent:.6f} reached max_cost "
                                     f"${self.budget.max_cost}")
        if self.agreed(reason is not None, args.device):
            self.stopped = True
            self.stop_reason = reason if reason not in {None, "stop"} else None
            control.should_training_stop = True
            control.should_save = True
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return control
        tokens = self.attempt_tokens()
        self.last_metrics = {"train_loss": float(logs["loss"])}
        for key, name in self.reported_logs.items():
            if key in logs:
                self.last_metrics[name] = float(logs[key])
        emit("metrics", step=state.global_step, total_steps=state.max_steps,
             epoch=round(float(state.epoch or 0), 4),
             learning_rate=float(logs.get("learning_rate", 0.0)),
             trained_tokens=self.resume_tokens + tokens, attempt_trained_tokens=tokens,
             elapsed_s=round(time.monotonic() - self.started, 3), **self.last_metrics)
        return control

    def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        if state.is_world_process_zero:
            metrics, eval_tokens = dict(self.last_metrics), 0
            # A checkpoint written on the way out (cancel, pause, budget) is not scored:
            # stopping stays quick.
            if self.checkpoint_eval is not None and not self.stopped:
                segment = eval_plan.checkpoint_segment(state.global_step)
                model = kwargs.get("model") or self.trainer.model
                metrics.update(timed_eval(self.eval_meter, segment,
                                          lambda: self.checkpoint_eval(model)))
                eval_tokens = self.eval_meter.tokens.get(segment, 0)
            emit("checkpoint", step=state.global_step,
                 dir=str(Path(args.output_dir) / f"checkpoint-{state.global_step}"),
                 trained_tokens=self.resume_tokens + self.attempt_tokens(),
                 metrics=metrics, eval_tokens=eval_tokens)
        return control


def step_intervals(hyper: dict[str, Any], train_rows: int) -> tuple[int, int]:
    """(logging, checkpoint) step intervals (``eval_plan``'s rule, which estimates share)."""
    total = eval_plan.total_steps(rows=train_rows, per_step=hyper["batch_size"],
                                  epochs=hyper["n_epochs"], world_size=WORLD_SIZE)
    return eval_plan.step_intervals(steps=total,
                                    logging_steps=hyper.get("logging_steps") or 0,
                                    checkpoint_every_steps=hyper.get("checkpoint_every_steps")
                                    or 0)


def load_model(spec: dict[str, Any], dtype: torch.dtype) -> tuple[Any, Any]:
    tokenizer = AutoTokenizer.from_pretrained(spec["model_dir"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(spec["model_dir"], dtype=dtype)
    for adapter_dir in spec.get("adapter_dirs", []):
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter_dir).merge_and_unload()
    return model, tokenizer


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    hyper = spec["hyperparameters"]
    seed = int(spec["seed"])
    random.seed(seed)
    torch.manual_seed(seed)
    on_gpu = torch.cuda.is_available()
    bf16 = on_gpu and torch.cuda.is_bf16_supported()
    model, tokenizer = load_model(spec, torch.bfloat16 if bf16 else torch.float32)
    if on_gpu:
        model = model.to(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}")

    train_rows, eval_rows = split_eval(load_rows(spec["train_path"]),
                                       load_rows(spec.get("validation_path")),
                                       int(spec["eval_samples"]), seed)
    result: dict[str, Any] = {"eval_metric": EVAL_METRIC if eval_rows and IS_MAIN else None}
    if not IS_MAIN:
        eval_rows = []  # rank 0 scores; the others only train
    callback = PlatformCallback(spec)
    meter = callback.eval_meter
    if eval_rows:
        before = timed_eval(meter, eval_plan.BEFORE,
                            lambda: exact_match(model, tokenizer, eval_rows, meter=meter))
        result["eval_before"] = before
        emit("eval", phase="before", metric=EVAL_METRIC, score=before, samples=len(eval_rows))

    lora = spec.get("lora")
    peft_config = None
    if lora:
        peft_config = LoraConfig(r=lora["r"], lora_alpha=lora["alpha"],
                                 lora_dropout=lora["dropout"],
                                 target_modules=lora["target_modules"], task_type="CAUSAL_LM")
    assistant_only = bool(spec.get("assistant_only_loss", True))
    if assistant_only and "{% generation %}" not in (tokenizer.chat_template or ""):
        assistant_only = False
        emit("warning", message="The model's chat template has no generation markers: "
             "training on every token instead of assistant turns only")
    logging_steps, checkpoint_steps = step_intervals(hyper, len(train_rows))
    config = SFTConfig(
        output_dir=spec["output_dir"],
        num_train_epochs=hyper["n_epochs"],
        per_device_train_batch_size=hyper["batch_size"],
        learning_rate=hyper["learning_rate"],
        lr_scheduler_type=hyper["lr_scheduler"],
        warmup_steps=float(hyper["warmup_ratio"]),  # a float below 1 is a ratio
        logging_steps=logging_steps,
        save_strategy="steps",
        save_steps=checkpoint_steps,
        seed=seed,
        data_seed=seed,
        max_length=hyper["max_seq_length"],
        # CPU settings from TRAINING_NOTES.md: bf16 off, no gradient checkpointing on small
        # models, packing off (slower without flash attention).
        bf16=bf16,
        use_cpu=not on_gpu,
        activation_checkpointing=False,
        packing=False,
        assistant_only_loss=assistant_only,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    if eval_rows:
        subset = eval_rows[:eval_plan.CHECKPOINT_EVAL_SAMPLES]
        callback.checkpoint_eval = lambda scored: {
            f"eval_{EVAL_METRIC}": exact_match(scored, tokenizer, subset, meter=meter),
            "eval_samples": float(len(subset))}
    trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(train_rows),
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
        after = timed_eval(meter, eval_plan.AFTER,
                           lambda: exact_match(trainer.model, tokenizer, eval_rows, meter=meter))
        result["eval_after"] = after
        emit("eval", phase="after", metric=EVAL_METRIC, score=after, samples=len(eval_rows))
    result["final_dir"] = str(final_dir)
    return {**result, **eval_usage(meter)}


def eval_usage(meter: eval_plan.EvalMeter) -> dict[str, Any]:
    """The ``done`` line's eval usage: tokens by segment (billed) and seconds (calibration)."""
    return {"eval_tokens": dict(meter.tokens), "eval_seconds": round(meter.seconds, 3)}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run(spec)
    emit("done", **result)


if __name__ == "__main__":
    main()
