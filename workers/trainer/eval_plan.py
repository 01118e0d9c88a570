"""Which evals a job runs and how their tokens are counted: the rule trainers and estimates share.

Kept free of torch/transformers (like ``holdout``) so the platform can import it to predict,
before a job runs, the eval tokens the trainer will meter.

**The plan.** Every job scores the starting model on its held-out rows (segment ``before``),
each checkpoint the schedule saves on the first ``CHECKPOINT_EVAL_SAMPLES`` of those rows
(segment ``step-<N>``; a cheap trend line, not a second full eval), and the result on all of
them (segment ``after``). Checkpoints written on the way out (cancel, pause, drain, budget) are
not scored, so stopping stays quick.

**The counting rule (eval tokens).** The real, non-padding tokens each eval passes through
the model, the same notion as trained tokens:

- a *generation* eval (greedy answers: SFT's exact match, DPO's exact match on a reference
  answer, RL's grader score) counts each prompt's tokens under the chat template plus the
  tokens generated for it, up to and including its first end-of-turn (or pad) token, or the
  whole budget if it never stops; padding of finished rows is not counted;
- a *log-probability* eval (DPO's preference accuracy) counts the tokens of every sequence it
  scores (prompt + preferred answer, prompt + non-preferred answer).

Prompts and scored sequences are known before the run, so an estimate predicts them exactly;
the generated part depends on the model's answers, so an estimate bounds it by the budget
(``max_new_tokens`` per answer): the bill's eval tokens lie between the estimate's
``eval_tokens_read`` and ``eval_tokens``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

# How many held-out rows each checkpoint is scored on (the first ones): one generation batch,
# ~0.4 s per checkpoint for the tiny model on a 2-core CPU.
CHECKPOINT_EVAL_SAMPLES = 64
# Greedy answer budget of exact-match evals (SFT, DPO's reference answer).
EXACT_MATCH_MAX_NEW_TOKENS = 8
BEFORE, AFTER = "before", "after"


def checkpoint_segment(step: int) -> str:
    return f"step-{step}"


def total_steps(*, rows: int, per_step: int, epochs: int, world_size: int = 1) -> int:
    """Optimizer steps of a run: rows are split over ranks, each rank takes ``per_step``."""
    return math.ceil(rows / (per_step * world_size)) * epochs if rows else 0


def step_intervals(*, steps: int, logging_steps: int = 0, checkpoint_every_steps: int = 0
                   ) -> tuple[int, int]:
    """(logging, checkpoint) intervals; 0 means ~100 logs and ~10 checkpoints per job.

    Scaling with the job keeps a 15-step test and a 100k-step run equally observable.
    """
    logging = logging_steps or max(1, steps // 100)
    checkpoint = checkpoint_every_steps or max(1, math.ceil(steps / 10))
    return logging, checkpoint


def checkpoint_steps(*, steps: int, every: int) -> list[int]:
    """The steps a full run saves at: every ``every`` steps, and the last step."""
    saved = list(range(every, steps + 1, every))
    if steps and (not saved or saved[-1] != steps):
        saved.append(steps)
    return saved


@dataclass
class EvalMeter:
    """Eval tokens by segment, as the trainer counts them (and reports them to be billed)."""

    tokens: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    segment: str = BEFORE

    def add(self, count: int) -> None:
        self.tokens[self.segment] = self.tokens.get(self.segment, 0) + int(count)

    @property
    def total(self) -> int:
        return sum(self.tokens.values())


def generated_length(ids: Sequence[int], stop_ids: set[int]) -> int:
    """Tokens one greedy answer really produced: up to and including its first stop token."""
    for index, token in enumerate(ids):
        if token in stop_ids:
            return index + 1
    return len(ids)


@dataclass(frozen=True)
class EvalTokensEstimate:
    """What an estimate says about eval tokens: ``read`` is exact, ``maximum`` a bound."""

    read: int  # prompts and scored sequences: exactly what the bill will count
    maximum: int  # read + every answer using its whole generation budget
    segments: list[str]

    def as_dict(self) -> dict:
        return {"eval_tokens": self.maximum, "eval_tokens_read": self.read,
                "eval_segments": self.segments}


@dataclass(frozen=True)
class EvalWorkload:
    """Everything an estimate needs to predict a full run's eval tokens on ``devices``."""

    rows: tuple[tuple[int, int], ...]  # per held-out row: (tokens read, answers generated)
    train_rows: int
    per_step: int  # rows (prompts for RL) per optimizer step on one device
    epochs: int
    max_new_tokens: int
    checkpoint_every_steps: int = 0

    def estimate(self, devices: int = 1) -> EvalTokensEstimate:
        """Every method splits its rows (RL: prompts) over the devices."""
        steps = total_steps(rows=self.train_rows, per_step=self.per_step, epochs=self.epochs,
                            world_size=devices)
        _, every = step_intervals(steps=steps,
                                  checkpoint_every_steps=self.checkpoint_every_steps)
        return estimate_eval_tokens(rows=self.rows, saves=checkpoint_steps(steps=steps,
                                                                           every=every),
                                    max_new_tokens=self.max_new_tokens)


def estimate_eval_tokens(*, rows: Sequence[tuple[int, int]], saves: Sequence[int],
                         max_new_tokens: int) -> EvalTokensEstimate:
    """Eval tokens of a full run, from each held-out row's (read tokens, answers generated).

    ``rows``: per held-out row, in the order the trainer scores them, the tokens the evals
    read for it and how many greedy answers they generate for it (0 or 1).
    ``saves``: the checkpoint steps of the run (each scored on the first rows).
    """
    if not rows:
        return EvalTokensEstimate(read=0, maximum=0, segments=[])

    def pass_cost(subset: Sequence[tuple[int, int]]) -> tuple[int, int]:
        read = sum(r for r, _ in subset)
        return read, read + max_new_tokens * sum(g for _, g in subset)

    full = pass_cost(rows)
    partial = pass_cost(rows[:CHECKPOINT_EVAL_SAMPLES])
    segments = [BEFORE, *(checkpoint_segment(s) for s in saves), AFTER]
    read = 2 * full[0] + len(saves) * partial[0]
    maximum = 2 * full[1] + len(saves) * partial[1]
    return EvalTokensEstimate(read=read, maximum=maximum, segments=segments)
