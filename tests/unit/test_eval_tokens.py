"""Eval tokens: the counting rule (``workers.trainer.eval_plan``) as the trainers apply it.

Generation evals count each prompt's real tokens plus the tokens generated for it up to and
including its stop token; log-probability evals count every scored sequence's real tokens.
"""

from __future__ import annotations

import pytest
import torch

from workers.trainer import eval_plan
from workers.trainer.evaluation import exact_match
from workers.trainer.grpo import greedy_texts

STOP = 0


class FakeTokenizer:
    """Characters are tokens (code points); the chat template is ``<content>:``."""

    eos_token_id = pad_token_id = STOP
    padding_side = "right"

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False,
                            return_dict=False):
        text = "".join(m["content"] for m in messages) + (":" if add_generation_prompt else "")
        return {"input_ids": [ord(c) for c in text]} if tokenize else text

    def __call__(self, texts, return_tensors, padding, add_special_tokens):
        width = max(len(t) for t in texts)
        ids = torch.zeros((len(texts), width), dtype=torch.long)
        mask = torch.zeros((len(texts), width), dtype=torch.long)
        for row, text in enumerate(texts):  # left padding, as the evals ask
            ids[row, width - len(text):] = torch.tensor([ord(c) for c in text])
            mask[row, width - len(text):] = 1
        return _Batch(input_ids=ids, attention_mask=mask)

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i != STOP)


class _Batch(dict):
    def to(self, device):
        return self

    def __getattr__(self, name):
        return self[name]


class FakeModel(torch.nn.Module):
    """Answers each prompt with a scripted reply; the batch runs until its longest reply."""

    def __init__(self, replies: dict[str, list[int]]) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.replies = replies

    def generate(self, input_ids, attention_mask, max_new_tokens, **_):
        prompts = ["".join(chr(int(t)) for t, m in zip(row, mask, strict=True) if m)
                   for row, mask in zip(input_ids, attention_mask, strict=True)]
        answers = [self.replies[p][:max_new_tokens] for p in prompts]
        steps = max(len(a) for a in answers)
        new = torch.full((len(answers), steps), STOP, dtype=torch.long)
        for row, answer in enumerate(answers):
            new[row, :len(answer)] = torch.tensor(answer, dtype=torch.long)
        return torch.cat([input_ids, new], dim=1)


def _ids(text: str) -> list[int]:
    return [ord(c) for c in text]


def test_exact_match_counts_prompts_and_answers_up_to_their_stop_token():
    rows = [{"messages": [{"role": "user", "content": "1+1="},
                          {"role": "assistant", "content": "2"}]},
            {"messages": [{"role": "user", "content": "10+10="},
                          {"role": "assistant", "content": "20"}]},
            {"messages": [{"role": "user", "content": "3+4="},
                          {"role": "assistant", "content": "7"}]}]
    model = FakeModel({"1+1=:": [*_ids("2"), STOP],          # 2 tokens, stop included
                       "10+10=:": [*_ids("20"), STOP],       # 3 tokens
                       "3+4=:": _ids("123456789")})         # never stops: the budget, 8
    meter = eval_plan.EvalMeter()

    score = exact_match(model, FakeTokenizer(), rows, meter=meter)

    assert score == pytest.approx(2 / 3)
    prompts = len("1+1=:") + len("10+10=:") + len("3+4=:")  # padding not counted
    assert meter.tokens == {"before": prompts + 2 + 3 + 8}


def test_each_segment_is_counted_apart_and_batches_add_up():
    rows = [{"messages": [{"role": "user", "content": f"{i}="},
                          {"role": "assistant", "content": "x"}]} for i in range(5)]
    model = FakeModel({f"{i}=:": [*_ids("x"), STOP] for i in range(5)})
    meter = eval_plan.EvalMeter()

    meter.segment = "step-10"
    exact_match(model, FakeTokenizer(), rows, meter=meter, batch_size=2)
    meter.segment = "after"
    exact_match(model, FakeTokenizer(), rows[:1], meter=meter)

    assert meter.tokens == {"step-10": 5 * (3 + 2), "after": 3 + 2}
    assert meter.total == 30


def test_grpo_greedy_answers_are_counted_by_the_same_rule():
    prompts = [[{"role": "user", "content": "ab"}], [{"role": "user", "content": "abcd"}]]
    model = FakeModel({"ab:": [*_ids("ok"), STOP], "abcd:": _ids("long answer")})
    meter = eval_plan.EvalMeter(segment="after")

    texts = greedy_texts(model, FakeTokenizer(), prompts, max_new_tokens=4, meter=meter)

    assert texts == ["ok", "long"]
    assert meter.tokens == {"after": len("ab:") + 3 + len("abcd:") + 4}


def test_preference_eval_counts_every_scored_sequence(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workers import env
    from workers.tinymodel import build_tiny_model
    from workers.trainer.preference_eval import pair_logprobs

    folder = build_tiny_model(env.models_root() / "posttrain-tiny")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    rows = [{"prompt": [{"role": "user", "content": f"{a}+{a}="}],
             "chosen": [{"role": "assistant", "content": str(2 * a)}],
             "rejected": [{"role": "assistant", "content": str(2 * a + 11)}]}
            for a in (3, 45, 7)]
    meter = eval_plan.EvalMeter()

    pair_logprobs(model, tokenizer, rows, meter=meter)

    def length(messages):
        return len(tokenizer.apply_chat_template(messages, tokenize=True,
                                                 return_dict=True)["input_ids"])

    expected = sum(length(r["prompt"] + r["chosen"]) + length(r["prompt"] + r["rejected"])
                   for r in rows)
    assert meter.tokens == {"before": expected}


def test_a_run_saves_every_n_steps_and_at_its_last_step():
    assert eval_plan.checkpoint_steps(steps=21, every=3) == [3, 6, 9, 12, 15, 18, 21]
    assert eval_plan.checkpoint_steps(steps=15, every=2) == [2, 4, 6, 8, 10, 12, 14, 15]
    assert eval_plan.checkpoint_steps(steps=0, every=1) == []
    assert eval_plan.total_steps(rows=33, per_step=16, epochs=2, world_size=2) == 2 * 2
    assert eval_plan.step_intervals(steps=1128) == (11, 113)


def test_the_estimate_reads_exactly_and_bounds_each_answer_by_its_budget():
    rows = [(10, 1)] * 100 + [(20, 1)] * 10
    estimate = eval_plan.estimate_eval_tokens(rows=rows, saves=[5, 10], max_new_tokens=8)

    full, first_64 = 100 * 10 + 10 * 20, 64 * 10
    assert estimate.read == 2 * full + 2 * first_64
    assert estimate.maximum == estimate.read + 8 * (2 * 110 + 2 * 64)
    assert estimate.segments == ["before", "step-5", "step-10", "after"]


def test_a_log_probability_eval_has_no_answers_to_bound():
    estimate = eval_plan.estimate_eval_tokens(rows=[(30, 0)] * 3, saves=[1],
                                              max_new_tokens=8)
    assert estimate.read == estimate.maximum == 3 * 30 * 3


def test_a_workload_follows_the_devices_and_the_method():
    workload = eval_plan.EvalWorkload(rows=((5, 1),), train_rows=64, per_step=4, epochs=1,
                                      max_new_tokens=2)
    assert workload.estimate(1).segments[1:3] == ["step-2", "step-4"]   # 16 steps
    assert workload.estimate(2).segments[1:3] == ["step-1", "step-2"]   # 8 steps


def _event(job, seq: int, type_: str, data: dict):
    import time

    from workers import contract

    return contract.JobEvent(job_id=job.id, attempt=1, seq=seq, type=type_, message=type_,
                             data=data, created_at=time.time())


def test_eval_tokens_are_one_usage_row_per_segment_billed_once_whatever_the_replays(
        alice, make_job, claim_attempt):
    from decimal import Decimal

    from django.utils import timezone

    from posttrain_server.billing.models import PriceBook, UsageRecord
    from posttrain_server.jobs.models import FineTuningJob
    from posttrain_server.jobs.services import event_apply
    from workers import contract
    PriceBook.objects.create(version="eval-priced", effective_at=timezone.now(),
                             token_rates={"eval_tokens": {"*": {"tiny": "1.00"}}},
                             gpu_hour_rates={"cpu": "0", "blackwell": "0", "rubin": "0"})
    job = make_job(alice.organization)
    claim_attempt(job)
    checkpoint = contract.CheckpointData(step=5, key="k/step-5.tar", trained_tokens=10,
                                         metrics={"eval_exact_match": 0.5}, eval_tokens=300)
    finished = contract.FinishedData(
        status="succeeded", trained_tokens=10, device_seconds=1.0, eval_metric="exact_match",
        eval_before=0.0, eval_after=0.5, adapter_key="k/model.tar", adapter_kind="lora",
        eval_tokens={"before": 1000, "step-5": 300, "after": 900}, eval_seconds=0.5,
        train_seconds=0.25)

    assert event_apply(event=_event(job, 0, "checkpoint", checkpoint.model_dump()))
    # Metered on arrival, before the attempt ends.
    assert UsageRecord.objects.get(job=job, kind="eval_tokens").quantity == 300
    for _ in range(2):  # a redelivered result changes nothing
        event_apply(event=_event(job, 1, "finished", finished.model_dump()))

    keys = sorted(UsageRecord.objects.filter(job=job, kind="eval_tokens")
                  .values_list("idempotency_key", "quantity"))
    assert keys == [(f"{job.id}:1:eval_tokens:after", 900),
                    (f"{job.id}:1:eval_tokens:before", 1000),
                    (f"{job.id}:1:eval_tokens:step-5", 300)]
    job = FineTuningJob.objects.get(id=job.id)
    assert job.eval_tokens == 2200
    assert job.eval_seconds == Decimal("0.500") and job.train_seconds == Decimal("0.250")
    assert job.checkpoints.get().metrics == {"eval_exact_match": 0.5}
    assert job.cost_tokens_by_kind["eval_tokens"] == "0.002200"
    assert job.cost_tokens == Decimal("0.002200")
    body = alice.client.get(f"/v1/fine_tuning/jobs/{job.id}").json()
    assert body["usage"]["eval_tokens"] == 2200
    assert body["cost"]["tokens_by_kind"]["eval_tokens"] == "0.002200"


def test_a_paused_attempt_bills_its_eval_and_rollout_tokens(alice, make_job, claim_attempt):
    from posttrain_server.billing.models import UsageRecord
    from posttrain_server.jobs.services import event_apply
    from workers import contract

    job = make_job(alice.organization)
    claim_attempt(job)
    alice.client.post(f"/v1/fine_tuning/jobs/{job.id}/pause")
    paused = contract.FinishedData(status="paused", stop_reason="paused", trained_tokens=10,
                                   rollout_tokens=40, device_seconds=1.0,
                                   eval_tokens={"before": 700})

    assert event_apply(event=_event(job, 0, "finished", paused.model_dump()))

    kinds = dict(UsageRecord.objects.filter(job=job).values_list("kind", "quantity"))
    assert kinds["eval_tokens"] == 700 and kinds["rollout_tokens"] == 40


def test_the_budget_follows_eval_tokens_at_the_price_books_rate(alice, make_job):
    from django.utils import timezone

    from posttrain_server.billing.models import PriceBook
    from posttrain_server.billing.services import budget_spec

    PriceBook.objects.create(version="eval-priced", effective_at=timezone.now(),
                             token_rates={"eval_tokens": {"*": {"tiny": "2.00"}}},
                             gpu_hour_rates={"cpu": "0", "blackwell": "0", "rubin": "0"})
    job = make_job(alice.organization, max_cost="1")

    budget = budget_spec(job=job)

    assert budget is not None and budget.eval_token_rate_per_million == "2.00"
    assert budget.reached(tokens=0, seconds=0, eval_tokens=499_999) is False
    assert budget.reached(tokens=0, seconds=0, eval_tokens=500_000) is True  # $1 of evals
