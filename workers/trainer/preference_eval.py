"""Scoring a model on preference pairs: does it rank the preferred answer above the other?

``preference_accuracy`` is the fraction of pairs where the model gives the preferred answer a
higher total log-probability than the non-preferred one. DPO's implicit reward is
``beta * (log p_model - log p_reference)``; measured against the starting model it is zero
for every answer before training (every pair a tie), so before/after would compare nothing.
The log-probability ranking is the same comparison with an indifferent reference, defined
before and after training alike; ``implicit_reward_accuracy`` (against the starting model) is
reported as well after training.
"""

from __future__ import annotations

from typing import Any

import torch

from workers.trainer.eval_plan import EvalMeter


def _answer_ids(tokenizer: Any, prompt: list[dict[str, str]], answer: str
                ) -> tuple[list[int], int]:
    """Token ids of prompt + answer under the chat template, and where the answer starts."""
    prompt_ids = tokenizer.apply_chat_template(prompt, tokenize=True, return_dict=True,
                                               add_generation_prompt=True)["input_ids"]
    full = tokenizer.apply_chat_template([*prompt, {"role": "assistant", "content": answer}],
                                         tokenize=True, return_dict=True)["input_ids"]
    return list(full), len(prompt_ids)


@torch.inference_mode()
def answer_logprobs(model: Any, tokenizer: Any, prompts: list[list[dict[str, str]]],
                    answers: list[str], *, batch_size: int = 64,
                    meter: EvalMeter | None = None) -> list[float]:
    """Sum of log-probabilities of each answer's tokens (end-of-turn included) given its
    prompt. ``meter`` counts the eval tokens: every scored sequence's real tokens."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    results: list[float] = []
    try:
        encoded = [_answer_ids(tokenizer, p, a) for p, a in zip(prompts, answers, strict=True)]
        for start in range(0, len(encoded), batch_size):
            chunk = encoded[start:start + batch_size]
            width = max(len(ids) for ids, _ in chunk)
            input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (ids, _) in enumerate(chunk):
                input_ids[row, :len(ids)] = torch.tensor(ids)
                mask[row, :len(ids)] = 1
            if meter is not None:
                meter.add(int(mask.sum()))
            logits = model(input_ids=input_ids.to(device),
                           attention_mask=mask.to(device)).logits.float()
            logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
            targets = input_ids[:, 1:].to(device)
            token_lp = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            for row, (ids, answer_start) in enumerate(chunk):
                results.append(float(token_lp[row, answer_start - 1:len(ids) - 1].sum()))
    finally:
        if was_training:
            model.train()
    return results


def pair_logprobs(model: Any, tokenizer: Any, rows: list[dict[str, Any]],
                  meter: EvalMeter | None = None) -> tuple[list[float], list[float]]:
    prompts = [row["prompt"] for row in rows]
    chosen = answer_logprobs(model, tokenizer, prompts, [r["chosen"][0]["content"] for r in rows],
                             meter=meter)
    rejected = answer_logprobs(model, tokenizer, prompts,
                               [r["rejected"][0]["content"] for r in rows], meter=meter)
    return chosen, rejected


def preference_accuracy(chosen: list[float], rejected: list[float]) -> float:
    if not chosen:
        return 0.0
    return sum(c > r for c, r in zip(chosen, rejected, strict=True)) / len(chosen)


def implicit_reward_accuracy(chosen: list[float], rejected: list[float],
                             ref_chosen: list[float], ref_rejected: list[float]) -> float:
    """DPO's own criterion: (log p - log p_ref) of the preferred answer above the other's."""
    if not chosen:
        return 0.0
    wins = sum((c - rc) > (r - rr) for c, r, rc, rr in
               zip(chosen, rejected, ref_chosen, ref_rejected, strict=True))
    return wins / len(chosen)
