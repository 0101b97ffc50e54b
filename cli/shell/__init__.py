"""``kraft-replay shell``: Kafka's metadata shell over the image at any point of a log, and through time.

* :mod:`cli.shell.session` — the tree at a point (built once per point), moving it, what a path is made of in
  the temporal image;
* :mod:`cli.shell.commands` — the commands, Kafka's and kraft-replay's;
* :mod:`cli.shell.args` — the command parser (argparse4j's behaviour and messages), :mod:`cli.shell.paths` — paths and
  globs, :mod:`cli.shell.nodes` — ``/``, ``/local`` and the printer;
* :mod:`cli.shell.history` — ``history PATH``; :mod:`cli.shell.interactive` — the prompt, :mod:`cli.shell.ctrl_c` — its
  Ctrl-C.

The image as a file system is :mod:`image.node` (Kafka's ``org.apache.kafka.image.node``).
"""
