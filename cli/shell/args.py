"""The metadata shell's command-line parser: argparse4j 0.7.0 (what Kafka's shell parses commands with) as far as
the shell's commands use it — a sub-command per command (a unique prefix names it), each with ``-h/--help`` and
positional arguments — with argparse4j's messages and help layout, so that a mistyped command reads as in
Kafka's shell (``too few arguments``, ``unrecognized arguments: '-l'``, ``ambiguous command: c could match cat,
cd``, ``invalid choice: 'tr': did you mean 'tree'?``)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from image.node.java import parse_int

HELP_FLAGS = ("-h", "--help")
DEFAULT_WIDTH = 75
_FLAG = re.compile(r"^-+")
_NEGATIVE_NUMBER = re.compile(r"-[0-9]+")  # Java's \d: ASCII digits


@dataclass(frozen=True, slots=True)
class Positional:
    """A positional argument: ``nargs`` ``"1"`` (exactly one, a value), ``"?"``, ``"*"``, ``"+"`` or ``"[1]"``
    (a list of exactly one, argparse4j's ``nargs(1)``); ``integer``: converted as ``Integer.valueOf``."""

    name: str
    nargs: str
    help: str
    integer: bool = False

    @property
    def bounds(self) -> tuple[int, int]:
        """argparse4j's (minNumArg, maxNumArg): -1 for exactly one value."""
        return {"1": (-1, -1), "?": (0, 1), "*": (0, 1 << 31), "+": (1, 1 << 31), "[1]": (1, 1)}[self.nargs]

    def syntax(self) -> str:
        """``formatMetavar``: ``name``, ``[name]``, ``[name [name ...]]``, ``name [name ...]``."""
        return {
            "1": self.name,
            "?": f"[{self.name}]",
            "*": f"[{self.name} [{self.name} ...]]",
            "+": f"{self.name} [{self.name} ...]",
            "[1]": self.name,
        }[self.nargs]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A command's name, description, whether only an interactive shell has it, and its arguments."""

    name: str
    description: str
    shell_only: bool
    positionals: tuple[Positional, ...] = ()


class ArgumentError(Exception):
    """A command line argparse4j refuses; the message is argparse4j's."""


@dataclass
class Parsed:
    """A parsed command line: the command, its arguments by name, or the help text ``-h`` asked for."""

    command: CommandSpec | None
    values: dict[str, Any] = field(default_factory=dict)
    help: str | None = None


def format_width() -> int:
    """``ArgumentParsers.getFormatWidth``: the terminal's width (``COLUMNS``, else the controlling terminal's) less
    5, else 75."""
    columns = os.environ.get("COLUMNS")
    if columns is not None:
        width = parse_int(columns)
        width = -1 if width is None else width
    else:
        try:
            fd = os.open("/dev/tty", os.O_RDONLY)
        except OSError:
            width = -1
        else:
            try:
                width = os.get_terminal_size(fd).columns
            except OSError:
                width = -1
            finally:
                os.close(fd)
    width -= 5
    return DEFAULT_WIDTH if width <= 0 else width


def _is_flag(term: str, separated: bool) -> bool:
    """``flagFound``: ``--`` (until consumed), or a ``-`` prefix that is not the whole term nor a negative number."""
    if separated:
        return False
    if term == "--":
        return True
    found = _FLAG.match(term)
    return found is not None and found.group(0) != term and not _NEGATIVE_NUMBER.fullmatch(term)


def resolve_command(specs: Sequence[CommandSpec], word: str) -> CommandSpec:
    """The command a word names: itself or the one command it is a prefix of."""
    by_name = {s.name: s for s in specs}
    if word in by_name:
        return by_name[word]
    candidates = sorted(n for n in by_name if n.startswith(word)) if word else []
    if len(candidates) == 1:
        return by_name[candidates[0]]
    if len(candidates) > 1:
        raise ArgumentError(f"ambiguous command: {word} could match {', '.join(candidates)}")
    choices = ", ".join(f"'{n}'" for n in sorted(by_name))
    raise ArgumentError(f"invalid choice: '{word}' (choose from {choices})")


def parse(specs: Sequence[CommandSpec], words: Sequence[str]) -> Parsed:
    """Kafka's ``Commands.parseCommand``: trailing empty words dropped (none left: no command), the command and
    its arguments parsed; a prefix of a command parses and is then refused with ``did you mean``."""
    args = list(words)
    while args and args[-1] == "":
        args.pop()
    if not args:
        return Parsed(None)
    first = args[0]
    if first == "--":
        rest = " ".join(args[1:])
        raise ArgumentError(f"unrecognized arguments: '{rest}'" if rest else "too few arguments")
    if _is_flag(first, False):
        raise ArgumentError(f"unrecognized arguments: '{first}'")
    spec = resolve_command(sorted(specs, key=lambda s: s.name), first)
    parsed = _parse_arguments(spec, args[1:])
    if parsed.help is None and spec.name != first:
        raise ArgumentError(f"invalid choice: '{first}': did you mean '{spec.name}'?")
    return parsed


def _parse_arguments(spec: CommandSpec, args: list[str]) -> Parsed:
    """argparse4j's ``parseArgs`` of a sub-command (``-h/--help`` and ``spec.positionals``)."""
    separated = False
    index = 0
    slot = 0  # the positional argument being filled
    taken = 0  # values it took so far (lists)
    gathered: list[str] = []
    while index < len(args):
        term = args[index]
        if _is_flag(term, separated) and term != "--":
            flag, eq, embedded = term.partition("=")
            known = [f for f in HELP_FLAGS if f.startswith(flag)] if flag not in HELP_FLAGS else [flag]
            if known:
                if eq:
                    raise ArgumentError(f"argument -h/--help: ignore implicit argument '{embedded}'")
                return Parsed(spec, help=command_help(spec, f" {spec.name}", with_help_flag=True))
            if re.match(r"^-(?!-)", term) and len(term) > 1 and term[1] == "h":  # -h… concatenated short options
                return Parsed(spec, help=command_help(spec, f" {spec.name}", with_help_flag=True))
            raise ArgumentError(f"unrecognized arguments: '{term}'")
        if term == "--" and not separated:
            separated = True
            index += 1
            continue
        if slot < len(spec.positionals):
            low, high = spec.positionals[slot].bounds
            if low == -1 or (low == 0 and high == 1):
                gathered.append(term)
                index += 1
                slot += 1
                continue
            while taken < high and index < len(args) and not _is_flag(args[index], separated):
                gathered.append(args[index])
                taken += 1
                index += 1
            if taken == high:
                slot += 1
                taken = 0
            continue
        raise ArgumentError(f"unrecognized arguments: '{' '.join(args[index:])}'")
    return Parsed(spec, _assign(spec, gathered))


def _assign(spec: CommandSpec, gathered: list[str]) -> dict[str, Any]:
    """argparse4j's ``processPositionalArgs``: the gathered values dealt to the positional arguments."""
    need = [1 if p.bounds[0] == -1 else p.bounds[0] for p in spec.positionals]
    must_left = [sum(need[i:]) for i in range(len(need) + 1)]
    if must_left[0] > len(gathered):
        raise ArgumentError("too few arguments")
    values: dict[str, Any] = {}
    at = 0
    for i, p in enumerate(spec.positionals):
        low, high = p.bounds
        if low == -1:
            values[p.name] = _convert(p, gathered[at])
            at += 1
        elif low == 0 and high == 1:
            if must_left[i + 1] == len(gathered) - at:
                values[p.name] = None
                continue
            values[p.name] = _convert(p, gathered[at])
            at += 1
        else:
            n = min(high, len(gathered) - at - must_left[i + 1])
            values[p.name] = [_convert(p, v) for v in gathered[at : at + n]] if n else None
            at += n
    return values


def _convert(p: Positional, value: str) -> Any:
    if not p.integer:
        return value
    number = parse_int(value)
    if number is None:
        raise ArgumentError(
            f"argument {p.name}: could not convert '{value}' to Integer (For input string: \"{value}\")"
        )
    return number


# ------------------------------------------------------------------------------------------------- help texts


def _wrap(text: str, width: int, offset: int, subsequent: str) -> str:
    """``TextHelper.wrap`` (lines broken after spaces, each full line justified as argparse4j justifies it)."""
    pieces = re.findall(r"\S*\s*", text)
    out = []
    line = ""
    current = offset
    for piece in pieces:
        if not piece:
            continue
        current += len(piece)
        if current > width:
            out.append(_justify(line, width, current - len(piece)) + "\n" + subsequent)
            line = ""
            current = len(subsequent) + len(piece)
        line += piece
    return "".join(out) + line


def _justify(line: str, width: int, current: int) -> str:
    """``TextHelper.adjustSpace``: the line stripped, its missing width spread over its runs of spaces (the
    remainder to the middle ones)."""
    stripped = line.strip(" ")
    current -= len(line) - len(stripped)
    runs = re.split(r"( +)", stripped)
    blocks = len(runs) // 2
    if blocks == 0:
        return stripped
    need = width - current
    each, rem = divmod(need, blocks)
    start = (blocks - rem + 1) // 2
    out = []
    for i, run in enumerate(runs):
        if i % 2:
            b = i // 2
            run += " " * (each + (1 if start <= b < start + rem else 0))
        out.append(run)
    return "".join(out)


def _help_line(title: str, help_text: str, width: int) -> str:
    """``TextHelper.printHelp``: ``  title`` and the help at column 25 (on the next line after a long title)."""
    if not help_text:
        return f"  {title}\n"
    if len(title) <= 21:
        head = f"  {title}" + " " * (25 - len(title) - 2)
    else:
        head = f"  {title}\n" + " " * 25
    return head + _wrap(help_text, width, 25, " " * 25) + "\n"


def _usage(prog: str, items: list[str], width: int) -> str:
    """``printUsage``: ``usage: <prog>`` and the items, wrapped under the program name."""
    head = f"usage: {prog}"
    if len(head) > 30:
        out, offset, first, subsequent = head + "\n", 6, " " * 6, " " * 6
    else:
        out, offset, first, subsequent = head, len(head), "", " " * len(head)
    out += first
    current = offset + len(first)
    for i, item in enumerate(items):
        if i and current + len(item) + 1 > width:
            out += "\n" + subsequent + " " + item
            current = len(subsequent) + 1 + len(item)
        else:
            out += " " + item
            current += 1 + len(item)
    return out + "\n"


def command_help(spec: CommandSpec, prog: str, *, with_help_flag: bool, width: int | None = None) -> str:
    """A command's help: ``-h`` (program `` <name>``, with ``-h/--help``) or ``man`` (program ``<name>``)."""
    width = format_width() if width is None else width
    items = (["[-h]"] if with_help_flag else []) + [p.syntax() for p in spec.positionals]
    out = _usage(prog, items, width)
    if spec.positionals:
        out += "\npositional arguments:\n" + "".join(_help_line(p.name, p.help, width) for p in spec.positionals)
    if with_help_flag:
        out += "\noptional arguments:\n" + _help_line("-h, --help", "show this help message and exit", width)
    return out


def commands_help(specs: Sequence[CommandSpec], width: int | None = None) -> str:
    """The help of the shell's parser (``help``): usage and one line per command."""
    width = format_width() if width is None else width
    names = sorted(s.name for s in specs)
    choices = "{" + ",".join(names) + "}"
    out = _usage("", [choices, "..."], width) + "\npositional arguments:\n" + _help_line(choices, "", width)
    for spec in sorted(specs, key=lambda s: s.name):
        out += _help_line(f"  {spec.name}", spec.description, width)
    return out


def split_line(line: str, partial: bool = False) -> list[str]:
    """The words of a command line, as JLine's parser splits them for Kafka's shell: at whitespace, with ``'…'`` and
    ``"…"`` quoting and ``\\`` escaping (``partial``: an unclosed quote ends the last word, as while typing it).
    ValueError for an unclosed quote."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    try:
        for word in lexer:
            words.append(word)
    except ValueError:
        if not partial:
            raise ValueError("unclosed quotation") from None
        words.append(lexer.token)
    return words
