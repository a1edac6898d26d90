# The fixed bootstrap every response script runs under (python3 -I -S -B -c <this>).
# It reads the job {code, trigger_args, variables, secrets} as JSON on stdin, binds the
# globals of the script contract (DESIGN.md section 1), and runs the operator's code as
# script.py so that tracebacks name script.py lines. The exit code is the verdict:
# 0 success, anything else failed.
import sys


def _sleuth_read_job():
    text = sys.stdin.buffer.read().decode("utf-8")
    try:
        # The C scanner of the json package, without the package: importing json pulls in
        # re and enum, about 10 ms, more than the whole isolation costs.
        import _json

        class _Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = float

        job, _end = _json.make_scanner(_Context())(text, 0)
        return job
    except ImportError:
        import json

        return json.loads(text)


def _sleuth_run():
    job = _sleuth_read_job()
    # Line by line, so that a script killed at its time limit still shows what it printed.
    sys.stdout.reconfigure(line_buffering=True)
    source = job.get("code") or ""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "__file__": "script.py"}
    for name, value in (job.get("variables") or {}).items():
        namespace[name] = value
    # Bound after the variables so that no variable can shadow them.
    namespace["trigger_args"] = job.get("trigger_args") or {}
    namespace["secrets"] = job.get("secrets") or {}
    del job
    try:
        # The interpreter prints source lines in tracebacks from a file of that name in the
        # working directory, which is the run's private work dir.
        with open("script.py", "w", encoding="utf-8") as copy:
            copy.write(source)
    except OSError:
        pass
    try:
        exec(compile(source, "script.py", "exec"), namespace)
    except SystemExit:
        raise
    except BaseException as error:
        traceback = error.__traceback__
        # Drop the bootstrap's own frames: the operator's traceback starts at script.py.
        while traceback is not None and traceback.tb_frame.f_code.co_filename != "script.py":
            traceback = traceback.tb_next
        # The default hook prints the exception's own __traceback__, so trim that one.
        error.__traceback__ = traceback
        sys.excepthook(type(error), error, traceback)
        sys.exit(1)


_sleuth_run()
