"""``{{ sample.output_text }}`` and ``{{ item.reference_answer }}``: OpenAI's grader templates.

Only references are substituted, no logic: a template is text with ``{{ path }}`` holes, and a
path is ``sample.`` or ``item.`` followed by keys. Anything else is refused at create time.
"""

from __future__ import annotations

import json
import re
from typing import Any

HOLE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
PATH = re.compile(r"^(sample|item)(\.[A-Za-z_][A-Za-z0-9_]*)+$")
SAMPLE_FIELDS = {"output_text", "output_json"}


class TemplateError(Exception):
    pass


def template_errors(template: Any) -> str | None:
    if not isinstance(template, str):
        return "must be a string"
    for path in HOLE.findall(template):
        if not PATH.match(path):
            return f"{{{{{path}}}}} is not a reference to sample.* or item.*"
        parts = path.split(".")
        if parts[0] == "sample" and parts[1] not in SAMPLE_FIELDS:
            return f"{{{{{path}}}}}: a sample has only {', '.join(sorted(SAMPLE_FIELDS))}"
    return None


def _lookup(path: str, context: dict[str, Any]) -> Any:
    parts = path.split(".")
    value: Any = context
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            raise TemplateError(f"{{{{{path}}}}} is missing from this {parts[0]}")
        value = value[part]
    return value


def render(template: str, *, sample: dict[str, Any], item: dict[str, Any]) -> str:
    """The template with each reference replaced; strings as they are, others as JSON."""
    context = {"sample": sample, "item": item}

    def fill(match: re.Match[str]) -> str:
        value = _lookup(match.group(1), context)
        return value if isinstance(value, str) else json.dumps(value)

    return HOLE.sub(fill, template)


def sample_of(output_text: str) -> dict[str, Any]:
    """OpenAI's sample: the model's text, and its JSON when the text parses as JSON."""
    sample: dict[str, Any] = {"output_text": output_text}
    try:
        sample["output_json"] = json.loads(output_text)
    except (json.JSONDecodeError, ValueError):
        pass
    return sample
