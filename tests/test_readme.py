"""The README is part of the product: its walkthrough runs, every command is in it and has help."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from batchpay.cli import cli
from tests.support import readme_transcript

README = readme_transcript.README.read_text(encoding="utf-8")


def test_first_screen_has_exactly_the_two_setup_commands() -> None:
    first_block = README.split("```console\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines() == [
        "pip install . && batchpay run samples/november-payouts.xlsx",
        "pip install '.[test]' && pytest",
    ]


def test_walkthrough_covers_the_month() -> None:
    commands = [s.command.split()[1] for block in readme_transcript.steps(README) for s in block]
    for name in ("template", "validate", "run", "rerun", "sync", "runs", "report", "verify"):
        assert name in commands, name


@pytest.mark.slow
def test_every_runnable_command_in_the_readme_works() -> None:
    folder = readme_transcript.workspace()
    try:
        for block in readme_transcript.steps(README):
            for step in block:
                code, output = readme_transcript.run(step.command, folder)
                assert code == step.expected_exit, f"$ {step.command}\n{output}"
                assert "Traceback" not in output, output
                # what the README shows is what the command prints (run ids, times, rates
                # aside); `python tests/support/readme_transcript.py --write` renews it
                assert readme_transcript.normalised(output) == readme_transcript.normalised(
                    step.output), f"$ {step.command}\n{output}"
    finally:
        readme_transcript.remove_workspace(folder)


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_help_and_is_documented(name: str) -> None:
    command = cli.commands[name]
    assert command.help and len(command.help.strip()) > 20, name
    for param in command.params:
        if param.param_type_name == "option":
            assert getattr(param, "help", None), f"{name} {param.opts} has no help text"
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output
    assert f"batchpay {name}" in README, f"`batchpay {name}` is not in the README"
