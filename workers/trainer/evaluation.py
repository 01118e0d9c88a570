"""Held-out evaluation by greedy exact match on chat rows.

Exact match of the final assistant turn is the simplest score that a user can trust for
verifiable tasks (such as the addition toy task): it is what the demo and the benchmark
report before and after training. Generation is batched with left padding so that every
prompt ends at the same position and new tokens are appended right after it.
"""

from __future__ import annotations

from typing import Any

import torch

from workers.trainer.eval_plan import EXACT_MATCH_MAX_NEW_TOKENS, EvalMeter, generated_length


def _prompt_and_reference(tokenizer: Any, row: dict[str, Any]) -> tuple[str, str]:
    messages = row["messages"]
    if not messages or messages[-1].get("role") != "assistant":
        raise ValueError("each row must end with an assistant message")
    prompt = tokenizer.apply_chat_template(
        messages[:-1], tokenize=False, add_generation_prompt=True
    )
    return prompt, str(messages[-1]["content"]).strip()


def _completion_text(tokenizer: Any, ids: list[int], stop_ids: set[int]) -> str:
    """Decode up to the first end-of-turn / pad token; specials after it are not content."""
    for index, token in enumerate(ids):
        if token in stop_ids:
            ids = ids[:index]
            break
    return tokenizer.decode(ids, skip_special_tokens=True).strip()


@torch.inference_mode()
def exact_match(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    batch_size: int = 64,
    max_new_tokens: int = EXACT_MATCH_MAX_NEW_TOKENS,
    meter: EvalMeter | None = None,
) -> float:
    """Fraction of rows whose greedy completion equals the last assistant message.

    ``meter`` counts the eval tokens (``eval_plan``'s rule): each prompt's real tokens plus
    the tokens generated for it up to and including its stop token.

    Works with plain ``transformers`` models and PEFT-wrapped ones (both expose
    ``generate``). The model's train/eval mode and the tokenizer's padding side are restored
    afterwards, so this can run in the middle of training.
    """
    if not rows:
        return 0.0
    pairs = [_prompt_and_reference(tokenizer, row) for row in rows]
    eos_id = tokenizer.eos_token_id
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id
    stop_ids = {i for i in (eos_id, pad_id) if i is not None}
    device = next(model.parameters()).device

    was_training = model.training
    padding_side = tokenizer.padding_side
    model.eval()
    tokenizer.padding_side = "left"
    correct = 0
    try:
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            batch = tokenizer(
                [prompt for prompt, _ in chunk],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            ).to(device)
            output = model.generate(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                do_sample=False,
                max_new_tokens=max_new_tokens,
                eos_token_id=eos_id,
                pad_token_id=pad_id,
            )
            new_tokens = output[:, batch["input_ids"].shape[1] :].tolist()
            if meter is not None:
                meter.add(int(batch["attention_mask"].sum())
                          + sum(generated_length(ids, stop_ids) for ids in new_tokens))
            for ids, (_, reference) in zip(new_tokens, chunk, strict=True):
                correct += _completion_text(tokenizer, ids, stop_ids) == reference
    finally:
        tokenizer.padding_side = padding_side
        if was_training:
            model.train()
    return correct / len(rows)
