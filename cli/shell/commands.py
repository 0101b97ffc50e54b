"""The shell's commands: Kafka's metadata shell's (``cat``, ``cd``, ``exit``, ``find``, ``help``, ``history N``,
``ls``, ``man``, ``pwd``, ``tree``: Kafka's output, byte for byte, messages included) and kraft-replay's (``at``,
``next``, ``prev``, ``diff``, ``history PATH``: the tree through time).

A command writes what Kafka's shell writes to its terminal (errors too) to ``Context.out``; with ``json`` it
builds ``Context.document`` instead and its messages go to ``Context.problems``. An exception Kafka's shell
throws (:class:`~image.node.java.JavaException`) propagates: the output so far stays written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from cli.shell.args import ArgumentError, CommandSpec, Positional, command_help, commands_help, parse, split_line
from cli.shell.nodes import ShellNodePrinter
from cli.shell.paths import NodeInfo, absolute_components, complete_path, effective_paths, visit
from cli.shell.session import Context, Session, TreeDiff, point_text
from image.node.java import JavaException, java_sorted, parse_int

WELCOME = "Welcome to kraft-replay's metadata shell: Kafka's metadata shell at any point of the log."

SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "at",
        "Move the tree to another point of the log.",
        False,
        (Positional("target", "1", "An offset, or a time (ISO 8601)."),),
    ),
    CommandSpec(
        "cat",
        "Show the contents of metadata files.",
        False,
        (Positional("targets", "+", "The metadata files to display."),),
    ),
    CommandSpec(
        "cd", "Set the current working directory.", True, (Positional("target", "?", "The directory to change to."),)
    ),
    CommandSpec(
        "diff",
        "Show what changed under a node between this point and another.",
        False,
        (
            Positional("target", "1", "The other point: an offset, or a time (ISO 8601)."),
            Positional("path", "?", "The node (default: the working directory)."),
        ),
    ),
    CommandSpec("exit", "Exit the metadata shell.", True),
    CommandSpec(
        "find",
        "Search for nodes in the directory hierarchy.",
        False,
        (Positional("paths", "*", "The paths to start at."),),
    ),
    CommandSpec("help", "Display this help message.", True),
    CommandSpec(
        "history",
        "Print command history, or the versions of a node.",
        False,
        (
            Positional(
                "numEntriesToShow", "?", "The number of entries to show, or a node (default: the working directory)."
            ),
        ),
    ),
    CommandSpec("ls", "List metadata nodes.", False, (Positional("targets", "*", "The metadata node paths to list."),)),
    CommandSpec(
        "man",
        "Show the help text for a specific command.",
        True,
        (Positional("cmd", "[1]", "The command to get help text for."),),
    ),
    CommandSpec(
        "next",
        "Move the tree to the next change of a node.",
        False,
        (Positional("path", "?", "The node (default: the working directory)."),),
    ),
    CommandSpec(
        "prev",
        "Move the tree to the previous change of a node.",
        False,
        (Positional("path", "?", "The node (default: the working directory)."),),
    ),
    CommandSpec("pwd", "Print the current working directory.", True),
    CommandSpec(
        "tree",
        "Show the contents of metadata nodes in a tree structure.",
        False,
        (Positional("targets", "+", "The metadata nodes to display."),),
    ),
)
"""Every command; ``shell_only`` ones exist only in an interactive shell (as in Kafka's)."""

BY_NAME = {spec.name: spec for spec in SPECS}
KAFKA_COMMANDS = ("cat", "cd", "exit", "find", "help", "history", "ls", "man", "pwd", "tree")
"""The commands of Kafka's metadata shell."""


class ExitShell(Exception):
    """``exit``."""


def specs(interactive: bool) -> list[CommandSpec]:
    """The commands a shell has: every one interactively, else those that are not shell-only."""
    return [s for s in SPECS if interactive or not s.shell_only]


def run(ctx: Context, words: list[str]) -> None:
    """Parse and run one command line (Kafka's ``Commands.parseCommand`` and the handler)."""
    try:
        parsed = parse(specs(ctx.interactive), words)
    except ArgumentError as e:
        ctx.problem(str(e))
        return
    if parsed.command is None:
        return
    if parsed.help is not None:
        ctx.out.write(parsed.help)
        return
    HANDLERS[parsed.command.name](ctx, parsed.values)


# ------------------------------------------------------------------------------------------------ Kafka's


def _cat(ctx: Context, values: dict[str, Any]) -> None:
    items = []
    for target in values["targets"]:

        def handle(info: NodeInfo | None, target: str = target) -> None:
            if info is None:
                ctx.problem(f"cat: {target}: No such file or directory.")
            elif info.node.is_directory():
                ctx.problem(f"cat: {target}: Is a directory")
            elif ctx.json:
                items.append({"path": info.absolute_path, "value": info.node.to_json()})
            else:
                info.node.print(ShellNodePrinter(ctx.out))

        visit(ctx.session.root, ctx.session.cwd, target, handle)
    ctx.document = items


def _cd(ctx: Context, values: dict[str, Any]) -> None:
    target = values["target"] if values["target"] is not None else "/"

    def handle(info: NodeInfo | None) -> None:
        if info is None:
            ctx.problem(f"cd: {target}: no such directory.")
        elif not info.node.is_directory():
            ctx.problem(f"cd: {target}: not a directory.")
        else:
            ctx.session.cwd = info.absolute_path

    visit(ctx.session.root, ctx.session.cwd, target, handle)


def _exit(ctx: Context, values: dict[str, Any]) -> None:
    raise ExitShell


def _find(ctx: Context, values: dict[str, Any]) -> None:
    found: list[str] = []

    def walk(path: str, node: Any) -> None:
        found.append(path)
        ctx.say(path)
        if node.is_directory():
            for name in java_sorted(node.child_names()):
                child = node.child(name)
                if child is None:
                    raise JavaException(f"Expected {name} to be a valid child of {path}, but it was not.")
                walk(path + name if path == "/" else f"{path}/{name}", child)

    for path in effective_paths(values["paths"] or []):

        def handle(info: NodeInfo | None, path: str = path) -> None:
            if info is None:
                ctx.problem(f"find: {path}: no such file or directory.")
            else:
                walk(path, info.node)

        visit(ctx.session.root, ctx.session.cwd, path, handle)
    ctx.document = found


def _help(ctx: Context, values: dict[str, Any]) -> None:
    ctx.out.write(f"{WELCOME}\n\n{commands_help(specs(True))}")


def _history(ctx: Context, values: dict[str, Any]) -> None:
    argument = values["numEntriesToShow"]
    count = None if argument is None else parse_int(argument)
    if count is None:
        from cli.shell.history import node_history

        node_history(ctx, argument if argument is not None else ".")
        return
    if not ctx.interactive:
        ctx.problem("history: the command history is an interactive shell's")
        return
    lines = ctx.session.history
    first = max(0, len(lines) - max(0, count))
    for index in range(first, len(lines)):
        ctx.out.write(f"{index:5d}  {lines[index]}\n")


def _ls(ctx: Context, values: dict[str, Any]) -> None:
    files: list[str] = []
    directories: list[tuple[str, list[str]]] = []
    entries: list[dict[str, Any]] = []
    for target in effective_paths(values["targets"] or []):

        def handle(info: NodeInfo | None, target: str = target) -> None:
            if info is None:
                ctx.problem(f"ls: {target}: no such file or directory.")
            elif info.node.is_directory():
                children = java_sorted(info.node.child_names())
                directories.append((info.last_component, children))
                entries.append({"path": info.absolute_path, "directory": True, "children": children})
            else:
                files.append(info.last_component)
                entries.append({"path": info.absolute_path, "directory": False})

        visit(ctx.session.root, ctx.session.cwd, target, handle)
    ctx.document = entries
    if not ctx.json:
        print_targets(ctx.out, ctx.screen_width, files, directories)


def _man(ctx: Context, values: dict[str, Any]) -> None:
    (name,) = values["cmd"]
    spec = BY_NAME.get(name)
    if spec is None:
        ctx.out.write(f"man: unknown command {name}. Type help to get a list of commands.\n")
        return
    ctx.out.write(f"{name}: {spec.description}\n\n{command_help(spec, name, with_help_flag=False)}")


def _pwd(ctx: Context, values: dict[str, Any]) -> None:
    ctx.out.write(ctx.session.cwd + "\n")


def _tree(ctx: Context, values: dict[str, Any]) -> None:
    items = []
    for target in values["targets"]:

        def handle(info: NodeInfo | None, target: str = target) -> None:
            if info is None:
                ctx.problem(f"tree: {target}: No such file or directory.")
            elif ctx.json:
                items.append({"path": info.absolute_path, "tree": info.node.to_json()})
            else:
                info.node.print(ShellNodePrinter(ctx.out))

        visit(ctx.session.root, ctx.session.cwd, target, handle)
    ctx.document = items


def print_targets(
    out: TextIO, screen_width: int | None, files: list[str], directories: list[tuple[str, list[str]]]
) -> None:
    """``LsCommandHandler.printTargets``: the files, then each directory's children (under ``name:`` when there is
    more than one thing listed)."""
    print_entries(out, "", screen_width, files)
    need_intro = bool(files) or len(directories) > 1
    first_intro = not files
    for name, children in directories:
        intro = ""
        if need_intro:
            if not first_intro:
                intro += "\n"
            intro += name + ":"
            first_intro = False
        print_entries(out, intro, screen_width, children)


def _java_length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def print_entries(out: TextIO, intro: str, screen_width: int | None, entries: list[str]) -> None:
    """``LsCommandHandler.printEntries``: in as many columns as fit the screen (one without a screen)."""
    if not entries:
        return
    if intro:
        out.write(intro + "\n")
    widths, per_column = column_schema(screen_width, entries)
    columns = len(widths)
    lines = (len(entries) + columns - 1) // columns
    for line in range(lines):
        text = ""
        for column in range(columns):
            index = line + column * per_column
            if index < len(entries):
                entry = entries[index]
                text += entry
                if column < columns - 1:
                    text += " " * (widths[column] - _java_length(entry))
        out.write(text + "\n")


def column_schema(screen_width: int | None, entries: list[str]) -> tuple[list[int], int]:
    """``calculateColumnSchema``: the widest layout (column widths, entries per column) that fits the screen."""
    if screen_width is None or screen_width // 4 <= 1:
        return [0], len(entries)
    schemas = []
    for columns in range(1, screen_width // 4 + 1):
        per_column = (len(entries) + columns - 1) // columns
        widths = [0] * columns
        for i, entry in enumerate(entries):
            widths[i // per_column] = max(widths[i // per_column], _java_length(entry) + 2)
        schemas.append((widths, per_column))
    for widths, per_column in reversed(schemas[1:]):
        if widths[-1] != 0 and sum(widths) <= screen_width:
            return widths, per_column
    return schemas[0]


# ------------------------------------------------------------------------------------------------ kraft-replay's


def _point(ctx: Context) -> dict[str, Any]:
    p = ctx.session.provenance
    return {
        "offset": ctx.session.offset,
        "image": {
            "offset": p.last_contained_offset,
            "epoch": p.last_contained_epoch,
            "timestamp": p.last_contained_log_time_ms,
        },
        "cwd": ctx.session.cwd,
    }


def _moved(ctx: Context, cwd: str | None) -> None:
    if cwd is not None:
        ctx.say(f"(the working directory does not exist at this point: now {cwd})")


def _at(ctx: Context, values: dict[str, Any]) -> None:
    try:
        offset = ctx.session.resolve(values["target"])
    except ValueError as e:
        ctx.problem(f"at: {e}")
        return
    cwd = ctx.session.move(offset)
    ctx.say(point_text(offset, ctx.session.provenance))
    _moved(ctx, cwd)
    ctx.document = _point(ctx)


def _step(ctx: Context, values: dict[str, Any], forward: bool) -> None:
    session = ctx.session
    path = "/" + "/".join(absolute_components(values["path"] or ".", session.cwd))
    name = "next" if forward else "prev"
    found = session.next_change(path, forward)
    if found is None:
        where = "after" if forward else "before"
        ctx.problem(f"{name}: {path} does not change {where} offset {session.offset}")
        ctx.document = None
        return
    target, changes = found
    cwd = session.move(target)
    ctx.say(point_text(target, session.provenance))
    for line in changes.lines():
        ctx.say(line)
    _moved(ctx, cwd)
    ctx.document = {**_point(ctx), "changes": changes.to_json()}


def _diff(ctx: Context, values: dict[str, Any]) -> None:
    session = ctx.session
    try:
        other = session.resolve(values["target"])
    except ValueError as e:
        ctx.problem(f"diff: {e}")
        return
    path = "/" + "/".join(absolute_components(values["path"] or ".", session.cwd))
    first, last = sorted((other, session.offset))
    changes = TreeDiff.of(session.subtree_at(path, first), session.subtree_at(path, last), path)
    ends = [(o, session.image_at(o).provenance) for o in (first, last)]
    ctx.say(f"--- {point_text(*ends[0])}")
    ctx.say(f"+++ {point_text(*ends[1])}")
    for line in changes.lines():
        ctx.say(line)
    ctx.document = {
        "from": first,
        "to": last,
        "path": path,
        **changes.to_json(),
    }


HANDLERS: dict[str, Callable[[Context, dict[str, Any]], None]] = {
    "at": _at,
    "cat": _cat,
    "cd": _cd,
    "diff": _diff,
    "exit": _exit,
    "find": _find,
    "help": _help,
    "history": _history,
    "ls": _ls,
    "man": _man,
    "next": lambda ctx, values: _step(ctx, values, True),
    "prev": lambda ctx, values: _step(ctx, values, False),
    "pwd": _pwd,
    "tree": _tree,
}


def completions(session: Session, line: str) -> list[str]:
    """What tab completes the last word of ``line`` with (JLine's ``MetadataShellCompleter``): a command name, or a
    path (a directory ends with ``/``, a file with a space) for the commands that take paths."""

    words = split_line(line, partial=True)
    if line.endswith((" ", "\t")) or not words:
        words.append("")
    if len(words) == 1:
        return [name + " " for name in sorted(BY_NAME) if name.startswith(words[0])]
    spec = BY_NAME.get(words[0])
    arguments = words[1:]
    if spec is None:
        return []
    if spec.name == "man":
        return [n + " " for n in sorted(BY_NAME) if n.startswith(arguments[0])] if len(arguments) == 1 else []
    takes_path = {"cat", "find", "ls", "tree"}
    if (
        spec.name in takes_path
        or (spec.name in ("cd", "next", "prev", "history") and len(arguments) == 1)
        or (spec.name == "diff" and len(arguments) == 2)
    ):
        return [
            c if not complete else c + " " for c, complete in complete_path(session.root, session.cwd, arguments[-1])
        ]
    return []
