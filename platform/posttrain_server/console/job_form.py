"""The new-job form: fields a person fills in, turned into the API's request body.

The form only shapes input. Every rule (ranges, files, models, pools, graders, budgets) is
applied by the API's own serializer and ``jobs.services``, so the console can never accept a
job the API would refuse, or refuse one it would take.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django import forms

from posttrain_server.api.errors import ApiError, first_validation_error
from posttrain_server.files.models import FileStatus
from posttrain_server.files.selectors import file_list
from posttrain_server.jobs import estimates, services
from posttrain_server.jobs.base_models import BUILTIN_MODELS
from posttrain_server.jobs.hyperparameters import AUTO_RULES, DPO_DEFAULTS, REINFORCEMENT_DEFAULTS
from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.jobs.selectors import fine_tuned_models
from posttrain_server.jobs.serializers import JobCreateSerializer
from posttrain_server.pools.selectors import pool_list
from posttrain_server.tenancy.models import Organization

METHODS = [("supervised", "Supervised fine-tuning (SFT)"),
           ("dpo", "Direct preference optimization (DPO)"),
           ("reinforcement", "Reinforcement fine-tuning (GRPO with a grader)")]
COMMON_HYPER = ["n_epochs", "batch_size", "learning_rate_multiplier"]
METHOD_HYPER = {
    "supervised": COMMON_HYPER,
    "dpo": [*COMMON_HYPER, "beta", "sft_weight"],
    "reinforcement": [*COMMON_HYPER, "generations_per_prompt", "max_completion_length",
                      "temperature", "kl_beta"],
}
SAMPLE_GRADER = {"type": "string_check", "name": "exact answer",
                 "input": "{{sample.output_text}}", "reference": "{{item.reference_answer}}",
                 "operation": "eq"}


def _auto_help(name: str) -> str:
    if name in AUTO_RULES:
        return f"auto = {AUTO_RULES[name]}"
    default = {**DPO_DEFAULTS, **REINFORCEMENT_DEFAULTS}[name]
    return f"auto = {default}"


def _hyper_field(label: str, name: str) -> forms.CharField:
    return forms.CharField(label=label, required=False, initial="auto", max_length=32,
                           help_text=_auto_help(name))


class JobForm(forms.Form):
    method = forms.ChoiceField(choices=METHODS, initial="supervised")
    model = forms.ChoiceField(label="Starting model", help_text="A base model, or one of "
                              "your fine-tuned models to continue from it")
    training_file = forms.ChoiceField(label="Training file")
    validation_file = forms.ChoiceField(label="Validation file", required=False,
                                        help_text="Optional: scored before and after "
                                        "training (else a held-out slice of the training file)")
    n_epochs = _hyper_field("Epochs", "n_epochs")
    batch_size = _hyper_field("Batch size", "batch_size")
    learning_rate_multiplier = _hyper_field("Learning rate multiplier",
                                            "learning_rate_multiplier")
    beta = _hyper_field("Beta (DPO)", "beta")
    sft_weight = _hyper_field("SFT weight (DPO)", "sft_weight")
    grader = forms.CharField(label="Grader (JSON)", required=False,
                             widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
                             initial=json.dumps(SAMPLE_GRADER, indent=2),
                             help_text="OpenAI's grader object: string_check, "
                             "text_similarity, python or multi")
    generations_per_prompt = _hyper_field("Generations per prompt", "generations_per_prompt")
    max_completion_length = _hyper_field("Max completion tokens", "max_completion_length")
    temperature = _hyper_field("Temperature", "temperature")
    kl_beta = _hyper_field("KL beta", "kl_beta")
    training_type = forms.ChoiceField(label="Training type", initial="lora", choices=[
        ("lora", "LoRA adapter"), ("full", "Full fine-tuning")])
    pool = forms.ChoiceField(label="Pool", initial="auto")
    suffix = forms.CharField(label="Model name suffix", required=False, max_length=64)
    seed = forms.IntegerField(label="Seed", required=False, min_value=0,
                              help_text="Empty: a random seed")
    max_cost = forms.DecimalField(label="Cost cap (USD)", required=False, min_value=0,
                                  decimal_places=6, help_text="The job pauses when it reaches "
                                  "this cost; raise it and resume to go on")

    def __init__(self, *args: Any, organization: Organization, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        files = [(f.id, f"{f.filename} ({f.id}, {(f.validation or {}).get('example_count', '?')}"
                  f" {(f.validation or {}).get('format', '')} examples)")
                 for f in file_list(organization=organization).filter(
                     status=FileStatus.PROCESSED)]
        self.fields["training_file"].choices = files
        self.fields["validation_file"].choices = [("", "None"), *files]
        models = [(name, f"{name} (built in)") for name in BUILTIN_MODELS]
        models += [(job.fine_tuned_model, job.fine_tuned_model) for job in
                   fine_tuned_models(organization=organization).order_by("-finished_at")[:200]]
        self.fields["model"].choices = models
        self.fields["pool"].choices = [("auto", "auto: the cheapest with a worker online")] + [
            (p.name, f"{p.name} ({p.accelerator})") for p in pool_list(enabled_only=True)]

    def method_fields(self) -> dict[str, list[forms.BoundField]]:
        """The method-specific fields, for the template to show with their method."""
        return {
            "dpo": [self["beta"], self["sft_weight"]],
            "reinforcement": [self["grader"], self["generations_per_prompt"],
                              self["max_completion_length"], self["temperature"],
                              self["kl_beta"]],
        }


def _auto_or_number(raw: str) -> Any:
    text = (raw or "").strip()
    if text in ("", "auto"):
        return "auto"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text  # the API's serializer names the field and says what it expects


class FormRefusal(Exception):
    """The API refused the body: the message, and the form field it is about (or None)."""

    def __init__(self, message: str, field: str | None) -> None:
        super().__init__(message)
        self.message, self.field = message, field


def request_body(cleaned: dict[str, Any]) -> dict[str, Any]:
    """The same JSON a REST client would send for these form values."""
    method = cleaned["method"]
    block: dict[str, Any] = {"hyperparameters": {
        name: _auto_or_number(cleaned.get(name, "")) for name in METHOD_HYPER[method]}}
    if method == "reinforcement":
        try:
            block["grader"] = json.loads(cleaned.get("grader") or "null")
        except json.JSONDecodeError as exc:
            raise FormRefusal(f"The grader is not valid JSON: {exc}", "grader") from exc
    body: dict[str, Any] = {"model": cleaned["model"], "training_file": cleaned["training_file"],
                            "method": {"type": method, method: block},
                            "training_type": cleaned["training_type"], "pool": cleaned["pool"]}
    if cleaned.get("validation_file"):
        body["validation_file"] = cleaned["validation_file"]
    if cleaned.get("suffix"):
        body["suffix"] = cleaned["suffix"]
    if cleaned.get("seed") is not None:
        body["seed"] = cleaned["seed"]
    if isinstance(cleaned.get("max_cost"), Decimal):
        body["max_cost"] = str(cleaned["max_cost"])
    return body


def _field_for(param: str | None, form: forms.Form) -> str | None:
    """``method.dpo.hyperparameters.beta`` -> ``beta``; ``method.reinforcement.grader.x`` ->
    ``grader``: the form field a refusal is about."""
    if not param:
        return None
    parts = param.replace("[", ".").split(".")
    if "grader" in parts:
        return "grader"
    for part in reversed(parts):
        if part in form.fields:
            return part
    return None


def _validated(body: dict[str, Any], form: forms.Form) -> dict[str, Any]:
    serializer = JobCreateSerializer(data=body)
    if not serializer.is_valid():
        param, message = first_validation_error(serializer.errors)
        raise FormRefusal(f"{param}: {message}" if param else message, _field_for(param, form))
    return serializer.validated_data


def job_submit(*, organization: Organization, form: JobForm) -> FineTuningJob:
    body = request_body(form.cleaned_data)
    data = _validated(body, form)
    try:
        return services.job_create(organization=organization, data=data)
    except ApiError as exc:
        raise FormRefusal(exc.message, _field_for(exc.param, form)) from exc


def job_estimate(*, organization: Organization, form: JobForm) -> dict[str, Any]:
    data = _validated(request_body(form.cleaned_data), form)
    try:
        return estimates.job_estimate(organization=organization, data=data)
    except ApiError as exc:
        raise FormRefusal(exc.message, _field_for(exc.param, form)) from exc
