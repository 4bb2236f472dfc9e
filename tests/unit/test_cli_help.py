"""`synthorg-a2a --help` at every level: each command and each positional argument says what
it is."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from synthorg.cli.main import build_parser


def _commands(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def test_every_positional_argument_has_help() -> None:
    missing = [
        f"{path} {action.metavar or action.dest}"
        for path, parser in _commands(build_parser(), "synthorg-a2a")
        for action in parser._actions
        if not action.option_strings
        and not isinstance(action, argparse._SubParsersAction)
        and not action.help
    ]
    assert missing == []


def test_every_command_has_help() -> None:
    missing = []
    for action in [a for _, p in _commands(build_parser(), "synthorg-a2a") for a in p._actions]:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions if choice.help}
            missing += [name for name in action.choices if name not in helped]
    assert missing == []


def test_a_kid_starting_with_a_dash_is_retired_after_two_dashes() -> None:
    args = build_parser().parse_args(["keys", "retire", "--", "-ZoMkzLuiZqgDbapbH6Zh3t7J"])
    assert args.kid == "-ZoMkzLuiZqgDbapbH6Zh3t7J"
