"""Request shapes for jobs: types and ranges only. Rules that need the database are services'.

Serializers are strict: an unknown field is an error naming it, because a silently ignored
typo (``n_epoch``) would train something other than what the user asked for.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {unknown[0]: [f"Unknown parameter {unknown[0]!r}."]})
        return super().to_internal_value(data)


@extend_schema_field({"oneOf": [{"type": "string", "enum": ["auto"]}, {"type": "number"}]})
class AutoOrNumber(serializers.Field):
    """OpenAI's hyperparameter values: the string ``"auto"`` or a number in range."""

    def __init__(self, *, integer: bool, minimum: float, maximum: float, exclusive_min: bool =
                 False, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("default", "auto")
        super().__init__(**kwargs)
        self.integer, self.minimum, self.maximum = integer, minimum, maximum
        self.exclusive_min = exclusive_min

    def to_internal_value(self, data: Any) -> Any:
        if data == "auto":
            return "auto"
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError('Must be "auto" or a number.')
        if self.integer and (not float(data).is_integer()):
            raise serializers.ValidationError("Must be a whole number.")
        too_low = data <= self.minimum if self.exclusive_min else data < self.minimum
        if too_low or data > self.maximum:
            low = f"above {self.minimum}" if self.exclusive_min else f"at least {self.minimum}"
            raise serializers.ValidationError(f"Must be {low} and at most {self.maximum}.")
        return int(data) if self.integer else float(data)

    def to_representation(self, value: Any) -> Any:
        return value


class SupervisedHyperparameters(StrictSerializer):
    n_epochs = AutoOrNumber(integer=True, minimum=1, maximum=50)
    batch_size = AutoOrNumber(integer=True, minimum=1, maximum=512)
    learning_rate_multiplier = AutoOrNumber(integer=False, minimum=0, maximum=100,
                                            exclusive_min=True)


class SupervisedMethod(StrictSerializer):
    hyperparameters = SupervisedHyperparameters(required=False)


class DpoHyperparameters(SupervisedHyperparameters):
    beta = AutoOrNumber(integer=False, minimum=0, maximum=2, exclusive_min=True)
    sft_weight = AutoOrNumber(integer=False, minimum=0, maximum=10,
                              help_text="Posttrain extension: weight of an SFT term on the "
                              "preferred answer (0: plain DPO).")


class DpoMethod(StrictSerializer):
    hyperparameters = DpoHyperparameters(required=False)


class ReinforcementHyperparameters(SupervisedHyperparameters):
    eval_interval = AutoOrNumber(integer=True, minimum=0, maximum=10_000)
    eval_samples = AutoOrNumber(integer=True, minimum=0, maximum=5000)
    compute_multiplier = AutoOrNumber(integer=False, minimum=0, maximum=10, exclusive_min=True,
                                      help_text="Accepted for OpenAI compatibility; unused.")
    reasoning_effort = serializers.ChoiceField(
        choices=["default", "low", "medium", "high"], required=False,
        help_text="Accepted for OpenAI compatibility; unused.")
    generations_per_prompt = AutoOrNumber(integer=True, minimum=2, maximum=64,
                                          help_text="Posttrain extension: GRPO group size.")
    max_completion_length = AutoOrNumber(integer=True, minimum=1, maximum=4096,
                                         help_text="Posttrain extension: sampled tokens.")
    temperature = AutoOrNumber(integer=False, minimum=0, maximum=2, exclusive_min=True,
                               help_text="Posttrain extension: sampling temperature.")
    kl_beta = AutoOrNumber(integer=False, minimum=0, maximum=10,
                           help_text="Posttrain extension: KL penalty to the start model.")


@extend_schema_field(OpenApiTypes.OBJECT)
class GraderField(serializers.JSONField):
    """An OpenAI grader object; its rules are checked by ``workers.graders`` in services."""


class ReinforcementMethod(StrictSerializer):
    grader = GraderField()
    hyperparameters = ReinforcementHyperparameters(required=False)
    response_format = serializers.JSONField(required=False, allow_null=True,
                                            help_text="Accepted; unused by this server.")


class MethodSerializer(StrictSerializer):
    type = serializers.ChoiceField(choices=["supervised", "dpo", "reinforcement"])
    supervised = SupervisedMethod(required=False)
    dpo = DpoMethod(required=False)
    reinforcement = ReinforcementMethod(required=False)


class LoraSerializer(StrictSerializer):
    r = serializers.IntegerField(min_value=1, max_value=256, default=8)
    alpha = serializers.IntegerField(min_value=1, max_value=1024, default=16)
    dropout = serializers.FloatField(min_value=0, max_value=0.9, default=0.0)
    target_modules = serializers.JSONField(
        default="all-linear",
        help_text='"all-linear" or a list of module names, e.g. ["q_proj", "v_proj"].')

    def validate_target_modules(self, value: Any) -> Any:
        if value == "all-linear":
            return value
        if (isinstance(value, list) and value and len(value) <= 64
                and all(isinstance(item, str) and 0 < len(item) <= 100 for item in value)):
            return value
        raise serializers.ValidationError('Must be "all-linear" or a list of module names.')


class JobCreateSerializer(StrictSerializer):
    model = serializers.CharField(max_length=300)
    training_file = serializers.CharField(max_length=40)
    validation_file = serializers.CharField(max_length=40, required=False, allow_null=True)
    method = MethodSerializer(required=False)
    hyperparameters = SupervisedHyperparameters(
        required=False, help_text="Deprecated by OpenAI in favour of method; still accepted.")
    suffix = serializers.RegexField(r"^[A-Za-z0-9_-]{1,64}$", required=False, allow_null=True,
                                    help_text="Up to 64 letters, digits, - or _.")
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False,
                                    allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField(max_length=512,
                                                                 allow_blank=True),
                                     required=False, allow_null=True)
    integrations = serializers.ListField(child=serializers.DictField(), required=False,
                                         allow_null=True, max_length=0,
                                         help_text="Not supported: must be empty.")
    pool = serializers.CharField(max_length=40, required=False,
                                 help_text="Posttrain extension: the GPU pool to train on.")
    training_type = serializers.ChoiceField(
        choices=["lora", "full"], default="lora",
        help_text="Posttrain extension: LoRA adapter (default) or full fine-tuning.")
    lora = LoraSerializer(required=False, help_text="Posttrain extension: LoRA settings.")
    max_seq_length = serializers.IntegerField(
        min_value=16, max_value=32768, default=512,
        help_text="Posttrain extension: examples are truncated to this many tokens.")
    devices = serializers.IntegerField(
        min_value=1, max_value=64, required=False,
        help_text="Posttrain extension: devices (GPUs; CPU processes on the cpu pool) for the "
        "job. More than one runs the trainer under torchrun; every device is billed.")
    lr_scheduler = serializers.ChoiceField(
        choices=["linear", "cosine", "constant"], default="linear",
        help_text="Posttrain extension: learning-rate schedule after warmup.")
    warmup_ratio = serializers.FloatField(
        min_value=0, max_value=0.5, default=0.0,
        help_text="Posttrain extension: fraction of steps spent warming up the learning rate.")
    assistant_only_loss = serializers.BooleanField(
        default=True,
        help_text="Posttrain extension: train on assistant turns only (needs a chat template "
        "with generation markers; otherwise every token is trained on, with a warning event).")
    max_cost = serializers.DecimalField(
        max_digits=20, decimal_places=6, min_value=Decimal("0.000001"), required=False,
        allow_null=True, coerce_to_string=True,
        help_text="Posttrain extension: cost cap in USD; the job pauses (checkpointed) at the "
        "step that reaches it; raise it and resume to continue.")
    eval_samples = serializers.IntegerField(
        min_value=0, max_value=5000, default=200,
        help_text="Posttrain extension: held-out examples scored before and after training.")

    def validate_metadata(self, value: dict[str, str] | None) -> dict[str, str]:
        value = value or {}
        if len(value) > 16 or any(len(key) > 64 for key in value):
            raise serializers.ValidationError("At most 16 keys of at most 64 characters.")
        return value


@extend_schema_field(OpenApiTypes.OBJECT)
class AnyObject(serializers.JSONField):
    pass


class JobResumeSerializer(StrictSerializer):
    max_cost = serializers.DecimalField(
        max_digits=20, decimal_places=6, min_value=Decimal("0.000001"), required=False,
        allow_null=True, help_text="A new cost cap (USD); null removes it. Omitted: unchanged.")
