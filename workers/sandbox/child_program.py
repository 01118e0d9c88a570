"""The program inside a sandbox: compile the user's grader once, then grade line by line.

Stdlib only and self-contained: it is passed to the interpreter with ``-c``, so it runs with
no access to this repository. Protocol on stdin/stdout, one JSON object per line: first
``{"source": ...}``, answered ``{"ok": true}`` or ``{"ok": false, "error": ...}``; then
``{"sample": ..., "item": ...}`` per grade, answered ``{"ok": true, "score": x}`` or an error.
Whatever the user's code prints is thrown away; only this program writes the protocol.
"""

import json
import os
import sys
import traceback


def main():
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(devnull, "w", closefd=False)
    requests = sys.stdin

    def reply(**body):
        channel.write(json.dumps(body) + "\n")
        channel.flush()

    header = json.loads(requests.readline())
    namespace = {"__name__": "grader"}
    try:
        exec(compile(header["source"], "grader.py", "exec"), namespace)  # noqa: S102
        grade = namespace["grade"]
        if not callable(grade):
            raise TypeError("grade is not a function")
    except BaseException as exc:  # noqa: BLE001 - every failure is the user's to read
        reply(ok=False, error=f"could not load grade(sample, item): "
                              f"{type(exc).__name__}: {exc}")
        return
    reply(ok=True)
    for line in requests:
        request = json.loads(line)
        try:
            result = grade(request["sample"], request["item"])
        except BaseException as exc:  # noqa: BLE001
            last = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" (line {last[0].lineno})" if last else ""
            reply(ok=False, error=f"grade raised {type(exc).__name__}: {exc}{where}"[:2000])
            continue
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            reply(ok=False, error=f"grade returned {type(result).__name__}, not a number")
            continue
        reply(ok=True, score=float(result))


if __name__ == "__main__":  # it runs as ``python -c``; importing it runs nothing
    main()
