"""Run the README's walkthrough: every ```console block marked `<!-- runnable -->`.

    python tests/readme_transcript.py           run them, print the transcript
    python tests/readme_transcript.py --write   also put the real output back into README.md

A command line is `$ batchpay ...` (an expected exit code other than 0 is written after it
as `# exit N`); the lines after it, up to the next `$`, are its output. Commands run in a
fresh folder holding a copy of samples/, on the embedded sandbox, with no BATCHPAY_
settings at all: exactly what a newcomer who cloned the repository has.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"<!-- runnable -->\n```console\n(.*?)```", re.S)
EXIT = re.compile(r"\s+# exit (\d+)\s*$")


@dataclass
class Step:
    command: str  # without the "$ " and the "# exit N"
    expected_exit: int
    output: str  # as shown in the README


def steps(text: str) -> list[list[Step]]:
    blocks = []
    for block in BLOCK.findall(text):
        found: list[Step] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                command = line[2:]
                match = EXIT.search(command)
                code = int(match.group(1)) if match else 0
                command = EXIT.sub("", command)
                found.append(Step(command, code, ""))
            elif found:
                found[-1].output += line + "\n"
        blocks.append(found)
    return blocks


def run(command: str, cwd: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPAY_")}
    env.update(NO_COLOR="1", COLUMNS="100", TERM="dumb")
    args = shlex.split(command)
    if args[0] == "batchpay":
        args = [sys.executable, "-m", "batchpay", *args[1:]]
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    return proc.returncode, proc.stdout.replace(str(cwd), ".")


def workspace() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="batchpay-readme-"))
    shutil.copytree(ROOT / "samples", folder / "samples")
    return folder


def main() -> int:
    text = README.read_text(encoding="utf-8")
    folder = workspace()
    failed = 0
    rendered_blocks = []
    try:
        for block in steps(text):
            lines = []
            for step in block:
                code, output = run(step.command, folder)
                mark = f"   # exit {code}" if code else ""
                lines.append(f"$ {step.command}{mark}\n{output}")
                print(f"$ {step.command}{mark}\n{output}", end="")
                if code != step.expected_exit:
                    failed += 1
                    print(f"!! expected exit {step.expected_exit}, got {code}", file=sys.stderr)
            rendered_blocks.append("".join(lines))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if "--write" in sys.argv:
        pieces = iter(rendered_blocks)
        README.write_text(BLOCK.sub(lambda m: f"<!-- runnable -->\n```console\n{next(pieces)}```",
                                    text), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
