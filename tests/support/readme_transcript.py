"""Run the README's walkthrough: every ```console block marked `<!-- runnable -->`.

    python tests/support/readme_transcript.py           run them, print the transcript
    python tests/support/readme_transcript.py --write   also put the real output back into README.md

A command line is `$ batchpay ...` (an expected exit code other than 0 is written after it
as `# exit N`); the lines after it, up to the next `$`, are its output, which must be what
the command prints, but for what varies from run to run (see `normalised`). Commands run in a
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

ROOT = Path(__file__).resolve().parents[2]
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


# the newcomer's user data folder, where the default journal lives, as the README shows it
DATA_HOME_SHOWN = "~/.local/share"


# what legitimately differs from one walkthrough to the next, each with what it reads as
_VARYING = [
    (re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b"), "<run id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?\b"), "<time>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<date>"),
    (re.compile(r"[\d,]+(\.\d+)? rows/s"), "<rate>"),
    (re.compile(r"\b\d+:\d{2}:\d{2}\b"), "<duration>"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "<hash>"),
    # the status polls and webhooks a run journals depend on how fast the sandbox settles
    (re.compile(r"\b\d+ events\b"), "<n> events"),
    (re.compile(r"(━|─|═)+"), "─"),
    (re.compile(r"[ \t]+"), " "),
]
# a line that a run prints or not depending on timing: whether the payouts it sent were
# already final when it finished sending
_SOMETIMES = re.compile(r"^Waiting up to \d+ s for the final status of \d+ payout\(s\)")


def normalised(output: str) -> list[str]:
    """The lines of a command's output with what varies between runs replaced by a
    placeholder (run ids, times, dates, rates, durations, journal hashes), so that a
    difference left is one of substance."""
    lines = []
    for line in output.splitlines():
        for pattern, placeholder in _VARYING:
            line = pattern.sub(placeholder, line)
        line = line.strip()
        if line and not _SOMETIMES.match(line):
            lines.append(line)
    return lines


def run(command: str, cwd: Path) -> tuple[int, str]:
    """Run one command in the workspace `cwd`; its user data and config folders are the
    workspace's own (a fresh user), shown in the output as ~/.local/share and ~/.config; its
    clock's zone is UTC (`time_zone` defaults to the machine's), as on every machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPAY_")}
    data, config = user_folders(cwd)
    env.update(NO_COLOR="1", COLUMNS="100", TERM="dumb", TZ="UTC", XDG_DATA_HOME=str(data),
               XDG_CONFIG_HOME=str(config))
    args = shlex.split(command)
    if args[0] == "batchpay":
        args = [sys.executable, "-m", "batchpay", *args[1:]]
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    output = proc.stdout.replace(str(data), DATA_HOME_SHOWN).replace(str(config), "~/.config")
    return proc.returncode, output.replace(str(cwd), ".")


def user_folders(folder: Path) -> tuple[Path, Path]:
    """The workspace's user data and config folders: beside it, so that neither the
    developer's own journals nor a run from an earlier walkthrough are ever seen."""
    return folder.with_name(folder.name + "-data"), folder.with_name(folder.name + "-config")


def workspace() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="batchpay-readme-"))
    shutil.copytree(ROOT / "samples", folder / "samples")
    return folder


def remove_workspace(folder: Path) -> None:
    for path in (folder, *user_folders(folder)):
        shutil.rmtree(path, ignore_errors=True)


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
                elif normalised(output) != normalised(step.output):
                    failed += "--write" not in sys.argv
                    print("!! the output differs from the README's", file=sys.stderr)
            rendered_blocks.append("".join(lines))
    finally:
        remove_workspace(folder)
    if "--write" in sys.argv:
        pieces = iter(rendered_blocks)
        README.write_text(BLOCK.sub(lambda m: f"<!-- runnable -->\n```console\n{next(pieces)}```",
                                    text), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
