"""Running untrusted user code (python graders) in a locked-down child process.

``pool.SandboxPool`` starts the processes and talks to them; ``child_program.py`` is the
program that runs inside (stdlib only, passed with ``-c`` so nothing of this repository is on
its path or in its working folder).
"""
