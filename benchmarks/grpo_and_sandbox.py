"""GRPO throughput, plain TRL vs Posttrain's trainer, and the grader sandbox's cost per sample.

1. The same GRPO configuration (tiny model, exact-sum reward, LoRA, 8 samples per prompt) as
   a plain TRL script (reward: a Python function in-process) and as Posttrain's trainer child
   (``python -m workers.trainer.grpo``, exactly as the worker runs it: the job's grader object
   through ``workers.graders``, token metering, eval before and after), alternating runs.
   Figure: generated tokens per second of training (tokens from ``completion_ids``).
2. The python-grader sandbox: per-sample latency with the pool (warm processes) against a
   fresh sandbox per sample (the cost the pool avoids), p50 and p95.

Prints both side by side. A benchmark, never a test: run it on an idle machine.

    .venv/bin/python benchmarks/grpo_and_sandbox.py [--runs 2] [--samples 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers import env  # noqa: E402
from workers.sandbox.pool import Sandbox, SandboxLimits, SandboxPool  # noqa: E402
from workers.tinymodel import build_tiny_model  # noqa: E402
from workers.toychain import reinforcement_rows  # noqa: E402
from workers.toytask import write_jsonl  # noqa: E402

PROMPTS, GENERATIONS, PROMPTS_PER_STEP, MAX_TOKENS, LR = 128, 8, 8, 4, 5e-4
GRADER = {"type": "string_check", "input": "{{sample.output_text}}",
          "reference": "{{item.reference_answer}}", "operation": "eq"}
PLAIN = r'''
import json, sys, time, torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
model_dir, data, out, prompts_per_step, generations, max_tokens, lr = sys.argv[1:8]
torch.manual_seed(0)
rows = [json.loads(l) for l in open(data)]
dataset = Dataset.from_list([{"prompt": r["messages"], "answer": r["reference_answer"]}
                             for r in rows])
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir)
generated = [0]
def reward(prompts, completions, completion_ids, answer, **_):
    generated[0] += sum(len(ids) for ids in completion_ids)
    return [float(c[0]["content"].strip() == a) for c, a in zip(completions, answer)]
config = GRPOConfig(output_dir=out, num_train_epochs=1,
    per_device_train_batch_size=int(prompts_per_step) * int(generations),
    num_generations=int(generations), max_completion_length=int(max_tokens), temperature=1.0,
    beta=0.0, learning_rate=float(lr), logging_steps=1, save_strategy="no", seed=0,
    bf16=False, use_cpu=True, gradient_checkpointing=False, report_to="none",
    disable_tqdm=True)
trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=dataset,
    processing_class=tokenizer,
    peft_config=LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
                           task_type="CAUSAL_LM"))
started = time.perf_counter()
trainer.train()
print(json.dumps({"seconds": time.perf_counter() - started, "generated": generated[0]}))
'''


def run_plain(model_dir: Path, data: Path, work: Path) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", PLAIN, str(model_dir), str(data),
                          str(work / "plain"), str(PROMPTS_PER_STEP), str(GENERATIONS),
                          str(MAX_TOKENS), str(LR)], capture_output=True, text=True,
                         check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["seconds"], result["generated"]


def run_platform(model_dir: Path, data: Path, work: Path) -> tuple[float, int]:
    spec = {"model_dir": str(model_dir), "adapter_dirs": [], "train_path": str(data),
            "validation_path": None, "output_dir": str(work / "out"),
            "final_dir": str(work / "final"), "resume_dir": None, "resume_trained_tokens": 0,
            "stop_flag": str(work / "stop"), "seed": 0, "assistant_only_loss": True,
            "eval_samples": 0, "lora": {"r": 8, "alpha": 16, "dropout": 0.0,
                                        "target_modules": "all-linear"},
            "hyperparameters": {"n_epochs": 1, "batch_size": PROMPTS_PER_STEP,
                                "learning_rate": LR, "warmup_ratio": 0.0,
                                "lr_scheduler": "linear", "max_seq_length": 512,
                                "logging_steps": 1, "checkpoint_every_steps": 10_000},
            "reinforcement": {"grader": GRADER, "generations_per_prompt": GENERATIONS,
                              "max_completion_length": MAX_TOKENS, "temperature": 1.0,
                              "kl_beta": 0.0, "sandbox_workers": 2}}
    path = work / "spec.json"
    path.write_text(json.dumps(spec))
    out = subprocess.run([sys.executable, "-m", "workers.trainer.grpo", str(path)],
                         capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{\"type\"")]
    last = [e for e in events if e["type"] == "metrics"][-1]
    done = [e for e in events if e["type"] == "done"][-1]
    # elapsed_s runs from the trainer's construction to the last step's log.
    return last["elapsed_s"], done["trained_tokens"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def sandbox_costs(samples: int) -> tuple[list[float], list[float]]:
    source = ("def grade(sample, item):\n"
              "    return float(sample['output_text'].strip() == item['answer'])\n")
    warm: list[float] = []
    with SandboxPool(source, size=2) as pool:
        pool.grade({"output_text": "0"}, {"answer": "0"})  # start-up is not per-sample cost
        for i in range(samples):
            started = time.perf_counter()
            pool.grade({"output_text": str(i)}, {"answer": str(i)})
            warm.append(time.perf_counter() - started)
    cold: list[float] = []
    for i in range(max(20, samples // 10)):
        started = time.perf_counter()
        sandbox = Sandbox(source, SandboxLimits())
        sandbox.grade({"output_text": str(i)}, {"answer": str(i)})
        sandbox.kill()
        cold.append(time.perf_counter() - started)
    return warm, cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--skip-grpo", action="store_true", help="sandbox figures only")
    args = parser.parse_args()
    model_dir = build_tiny_model(env.models_root() / "posttrain-tiny")
    plain, platform_runs = [], []
    with tempfile.TemporaryDirectory(prefix="posttrain-grpo-bench-") as tmp:
        work = Path(tmp)
        data = write_jsonl(work / "rft.jsonl", reinforcement_rows(PROMPTS, 0, "train"))
        for run in range(0 if args.skip_grpo else args.runs):
            for name, runner, results in (("plain TRL", run_plain, plain),
                                          ("Posttrain", run_platform, platform_runs)):
                run_dir = work / f"{name[0]}{run}"
                run_dir.mkdir()
                seconds, tokens = runner(model_dir, data, run_dir)
                results.append(tokens / seconds)
                print(f"run {run + 1} {name:10}: {tokens} generated tokens in {seconds:.1f} s "
                      f"= {tokens / seconds:,.0f} tokens/s", flush=True)
    warm, cold = sandbox_costs(args.samples)
    if plain and platform_runs:
        print_grpo(statistics.median(plain), statistics.median(platform_runs))
    print_sandbox(warm, cold)


def print_grpo(plain_median: float, platform_median: float) -> None:
    print("\nGRPO, tiny model, LoRA, "
          f"{PROMPTS} prompts x {GENERATIONS} samples, {MAX_TOKENS} tokens max, CPU")
    print(f"{'':28}{'plain TRL':>12}{'Posttrain':>12}")
    print(f"{'generated tokens/s (median)':28}{plain_median:>12,.0f}{platform_median:>12,.0f}")
    print(f"ratio Posttrain / plain: {platform_median / plain_median:.2f} (target >= 1.0)")


def print_sandbox(warm: list[float], cold: list[float]) -> None:
    print(f"\npython grader sandbox, per sample ({len(warm)} warm, {len(cold)} cold)")
    print(f"{'':28}{'pool (warm)':>12}{'fresh each':>12}")
    print(f"{'p50 (ms)':28}{percentile(warm, .5) * 1e3:>12.2f}{percentile(cold, .5) * 1e3:>12.1f}")
    print(f"{'p95 (ms)':28}{percentile(warm, .95) * 1e3:>12.2f}"
          f"{percentile(cold, .95) * 1e3:>12.1f}")
    print("target: p95 < 50 ms with the pool")


if __name__ == "__main__":
    main()
