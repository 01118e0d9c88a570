"""Dataset validation rules, re-exported from the SDK (``posttrain.dataset_rules``).

The implementation lives in the ``posttrain`` SDK so that ``posttrain files check FILE`` on a
laptop and the platform's validation task run the very same code (one implementation, not
two); this module keeps the historical import path working for the platform and the workers.
The star import also passes on any public name added there later.
"""

from posttrain.dataset_rules import *  # noqa: F403

__all__ = [  # noqa: F405 - the names come from the star import above
    "CHAT_ROLES",
    "MAX_REPORTED_ERRORS",
    "ROW_CHECKS",
    "Limits",
    "Report",
    "chat_row_errors",
    "detect_format",
    "preference_row_errors",
    "read_chat_rows",
    "reinforcement_row_errors",
    "validate_jsonl",
]
