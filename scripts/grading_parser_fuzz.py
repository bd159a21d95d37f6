#!/usr/bin/env python3
"""Writes tests/fixtures/grading/fuzz/parsers.json: random logs built from the tokens the
official parsers react to (status words, separators, Python whitespace oddities, ANSI codes,
Django and sympy markers), each with the status map the official parser (swebench==4.1.0)
returns. Logs on which the official parser raises are left out (the Rust parsers skip such a
line instead). Run once and commit the output:

    python3 scripts/grading_parser_fuzz.py [COUNT]     # default 250
"""

import json
import random
import sys
from pathlib import Path

from swebench.harness.log_parsers.python import (
    parse_log_django,
    parse_log_matplotlib,
    parse_log_pytest,
    parse_log_pytest_options,
    parse_log_pytest_v2,
    parse_log_seaborn,
    parse_log_sympy,
)

PARSERS = {f.__name__: f for f in [parse_log_pytest, parse_log_pytest_options, parse_log_pytest_v2,
                                   parse_log_django, parse_log_seaborn, parse_log_sympy, parse_log_matplotlib]}
TOKENS = [
    "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS", " ", "  ", "\t", "\r", "\x1c", "\x1f", "\xa0",
    "\u2003", "\x85", "\x0b", "\x0c", "\u2028", " - ", "-", "::", "t.py", "test_a", "test_b", "[", "]",
    "/tmp/x/y.py", "//srv", "*", "...", " ... ", " ... ok", " ... OK", " ...  OK", " ... FAIL", " ... ERROR",
    " ... skipped 'r'", "ok", "FAIL:", "ERROR:", "\x1b[32m", "\x1b[0m", "\x1b", "[1m", "[12m",
    "MouseButton.LEFT", "MouseButton.RIGHT", "_____", ".py:", " E", " F", " ok", "\u00e9", "\U0001F600", "(m.C)",
    "--version is equivalent to version", "System check identified no issues (0 silenced)",
    "Testing against Django installed in", " silenced).", "Internal Server Error: /a/",
    "Applying sites.0002_alter_domain_unique...test_no_migrations", " PASSED ", "____ a.py:test_x ____",
    "\n", "\nok", "\n", "\n",
]


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 250
    rng = random.Random(20260)
    cases = []
    while len(cases) < count:
        log = "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 40)))
        name = rng.choice(sorted(PARSERS))
        try:
            statuses = PARSERS[name](log, None)
        except Exception:
            continue
        cases.append({"parser": name, "log": log, "statuses": statuses})
    out = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "grading" / "fuzz" / "parsers.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cases, indent=0, ensure_ascii=True) + "\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
