"""Command-line handling shared by the training and evaluation scripts.

* :func:`cli_error` ends a script with one line and exit status 2 (argparse's convention for a bad
  command line); the ``check_*`` functions refuse bad flag values with it, naming the flag, the
  value and what was expected.
* :func:`flowing_help` gives tyro each ``Args`` field's docstring as flowing help text.
* :func:`given_fields` and :func:`resume_args` rebuild a resumed run's ``Args`` (``--resume``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import sys
from typing import Any

from sc2_envs.validation import did_you_mean


def cli_error(message: str, prog: str | None = None) -> None:
    """Print ``<prog>: error: <message>`` (one line) to stderr and exit with status 2.

    Raises:
        SystemExit: always, with code 2 (the status argparse and tyro use for a bad command line).
    """
    prog = prog or os.path.basename(sys.argv[0] or "sc2_envs")
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def check_finite_flags(args: Any) -> None:
    """Refuse every float field of the dataclass ``args`` that is NaN or infinite.

    Why first: NaN passes no comparison, so a range check such as ``ent_coef >= 0`` would report
    it as out of range only by luck, and a check written as ``not x < 0`` lets it through; a NaN
    coefficient trains silently into NaN weights.

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the first such flag and its value.
    """
    message = nonfinite_flag(args)
    if message:
        cli_error(message)


def nonfinite_flag(args: Any) -> str | None:
    """``"--flag nan: expected a finite number"`` for the first float field of the dataclass ``args``
    that is NaN or infinite, else None (:func:`check_finite_flags`; the benchmarks raise it as a ValueError)."""
    for f in dataclasses.fields(args):
        v = getattr(args, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            return f"--{f.name.replace('_', '-')} {v!r}: expected a finite number"
    return None


_LOSS_FLAG_RANGES = (
    ("ent_coef", lambda v: v >= 0, "a value >= 0"),
    ("vf_coef", lambda v: v > 0, "a value > 0"),
    ("huber_delta", lambda v: v >= 0, "a value >= 0 (0: squared error)"),
    ("max_grad_norm", lambda v: v > 0, "a gradient-norm bound > 0"),
    ("target_kl", lambda v: v is None or v > 0, "a KL > 0 (or unset: no early stop)"),
    ("accept_ratio", lambda v: 0 < v <= 1, "a ratio in (0, 1]"),
    ("backtrack_coeff", lambda v: 0 < v < 1, "a shrink factor in (0, 1)"),
    ("cg_damping", lambda v: v >= 0, "a damping >= 0"),
    ("ls_step", lambda v: v >= 1, "an integer >= 1 (line-search trials)"),
    ("cg_iters", lambda v: v >= 1, "an integer >= 1 (conjugate-gradient iterations)"),
)


def check_loss_flags(args: Any) -> None:
    """The ranges of the PPO / TRPO loss and update flags that ``args`` has (HAPPO's ``ent_coef``,
    ``max_grad_norm``, ``target_kl``; HATRPO's line search and conjugate gradient). A negative
    ``max_grad_norm`` or ``vf_coef`` flips a gradient; none of them is clipped into range.

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the flag, its value and the range.
    """
    for flag, ok, expected in _LOSS_FLAG_RANGES:
        if hasattr(args, flag) and not ok(getattr(args, flag)):
            cli_error(f"--{flag.replace('_', '-')} {getattr(args, flag)!r}: expected {expected}")


def close_names(names: list[str], valid: list[str]) -> str:
    """``"; 'protoss_5_vs5' (did you mean 'protoss_5_vs_5'?)"`` for each of ``names`` that has a close
    match in ``valid`` (the suggestion ``make_batched`` gives for the same name), once per name; ``""`` when
    none has."""
    return "".join(f"; {n!r}{did_you_mean(n, valid)}" for n in dict.fromkeys(names) if did_you_mean(n, valid))


def refuse_one_string(flag: str, value: Any) -> None:
    """Refuse one string where a sequence of names is expected (``Args(map="3m")`` in Python; the command
    line always gives a tuple): ``list("3m")`` would read it as the names ``'3'`` and ``'m'``.

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the flag and the value.
    """
    if isinstance(value, str):
        cli_error(f"--{flag} {value!r}: expected a sequence of map names such as ({value!r},), not one string")


def check_eval_maps(eval_maps: Any, train_maps: list[str], backend: str, valid_maps: list[str]) -> None:
    """Refuse a bad ``--eval-maps`` of a training script (maps played zero-shot at every evaluation).

    Args:
        eval_maps: the flag's value, a sequence of map names (may be empty).
        train_maps: the run's ``--map`` names.
        backend: ``--backend``; zero-shot maps need the embedded simulator (``sim``), since a real game
            per extra map would start another StarCraft II process at every evaluation.
        valid_maps: every known map or scenario name (``sc2_envs.list_maps("all")``).

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for an unknown, repeated or training map, or a
            backend other than ``sim``; the message names the value and what was expected. Whether the
            actors can play a map (its unit classes, entity widths) is checked once the models exist.
    """
    refuse_one_string("eval-maps", eval_maps)
    names = list(eval_maps)
    if not names:
        return
    shown = " ".join(map(str, names))
    unknown = [m for m in names if m not in valid_maps]
    if unknown:
        cli_error(
            f"--eval-maps {shown}: unknown {unknown}{close_names(unknown, valid_maps)}; "
            "expected names of sc2_envs.list_maps('all')"
        )
    if len(set(names)) < len(names):
        cli_error(f"--eval-maps {shown}: expected distinct maps")
    trained = [m for m in names if m in train_maps]
    if trained:
        cli_error(
            f"--eval-maps {shown}: {trained} also in --map; expected maps not trained on (training maps are evaluated anyway)"
        )
    if backend != "sim":
        cli_error(f"--eval-maps {shown} with --backend {backend}: expected --backend sim (one simulator per zero-shot map)")


def refuse_computed_flags(cli: Any, names: tuple[str, ...], how: str, given: set[str] | frozenset[str] | None = None) -> None:
    """Refuse the CleanRL fields that are computed at runtime (``batch_size`` ...) when the command
    line set them: they would be overwritten without notice. ``how`` says what they are computed from.
    ``given``: the fields the command line set (:func:`given_fields`), so that even ``--batch-size 0``
    is refused; None: those whose value is not 0 (their unset default).

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the flag.
    """
    for name in names:
        if (name in given) if given is not None else getattr(cli, name):
            cli_error(f"--{name.replace('_', '-')} {getattr(cli, name)!r}: this is computed at runtime ({how}); do not set it")


def flags_off_default(args: Any, names: tuple[str, ...]) -> list[str]:
    """The fields among ``names`` whose value differs from their dataclass default, in ``names``' order: the
    flags a command line set that a check may refuse as ignored (a value equal to its default cannot be told
    from an absent flag here; :func:`given_fields` can, from the command line)."""
    defaults = {f.name: f.default for f in dataclasses.fields(args)}
    return [name for name in names if getattr(args, name) != defaults[name]]


def flags_set(args: Any, names: tuple[str, ...], given: frozenset[str] | None) -> list[str]:
    """The fields among ``names`` the command line set, in ``names``' order: those in ``given``
    (:func:`given_fields`, which sees a flag given even at its default value) or, without that record
    (``given`` None, e.g. ``Args`` built in Python), those off their default (:func:`flags_off_default`)."""
    return [n for n in names if n in given] if given is not None else flags_off_default(args, names)


def is_plain_name(name: str) -> bool:
    """Whether ``name`` can be one folder or file name: non-empty, not ``.`` or ``..``, and without a
    path separator (``/``, or ``\\`` on Windows). The scripts check their name flags with it before any
    work, so that ``--exp-name ../x`` is a command-line error, not a traceback from :func:`make_run_dir`."""
    return (
        bool(name)
        and name not in (".", "..")
        and "/" not in name
        and os.sep not in name
        and not (os.altsep and os.altsep in name)
    )


def split_flags(text: str, flag: str) -> list[str]:
    """A pass-through flag string (e.g. ``--extra``) split as a shell would (``shlex.split``: quoted
    values keep their spaces).

    Raises:
        ValueError: unbalanced quotes; the message names ``flag`` and the text.
    """
    import shlex

    try:
        return shlex.split(text)
    except ValueError as e:
        raise ValueError(f"{flag} {text!r}: {e} (quote values as in a shell)") from None


def flag_clashes(text: str, taken, flag: str) -> list[str]:
    """The flags of the pass-through string ``text`` (:func:`split_flags`, ``--name`` or ``--name=value``)
    that are in ``taken``, in order, once each: flags a harness sets itself, where a repeat would win
    and make a run other than its label."""
    given = [t.split("=", 1)[0] for t in split_flags(text, flag) if t.startswith("--")]
    return [f for f in dict.fromkeys(given) if f in taken]


def flowing_help(cls: Any) -> Any:
    """The dataclass ``cls`` with each field's docstring given to tyro as help text in flowing paragraphs.

    tyro keeps a field docstring's line breaks, so a docstring wrapped at the source's width broke
    mid-sentence in ``--help`` on a narrower terminal. Each field that has a docstring gets it as
    ``tyro.conf.arg(help=...)`` with the line breaks inside a paragraph joined (blank lines still
    separate paragraphs); the terminal then wraps it. A class without a docstring of its own is given
    the first paragraph of its module's docstring, which ``--help`` then opens with. reST inline
    literals (in double backticks) show in single backticks, and an empty list default as
    ``(default: empty)`` (tyro's own reads ``(default: )``; a field marked ``tyro.conf.UseAppendAction``
    or ``Fixed`` keeps tyro's hint). Only help changes: flags, defaults and parsing do not. ``cls`` is
    changed in place (once; a second call does nothing) and returned, and so are
    its dataclass bases, whose inherited fields' docstrings flow too. When a class's source or
    annotations cannot be read (an interactive session), that class is left unchanged.

    Usage: ``tyro.cli(flowing_help(Args))``.
    """
    import ast
    import inspect
    import re
    import textwrap
    import typing

    import tyro

    if cls.__dict__.get("_flowing_help", False):
        return cls
    for base in cls.__mro__[1:]:  # inherited fields: their annotations live in the base's __annotations__
        if dataclasses.is_dataclass(base):
            flowing_help(base)
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
        hints = typing.get_type_hints(cls, include_extras=True)
    except (OSError, TypeError, NameError, SyntaxError, IndexError, AttributeError):
        return cls
    module_doc = getattr(sys.modules.get(cls.__module__), "__doc__", None) or ""
    if module_doc.strip() and (cls.__doc__ or "").startswith(f"{cls.__name__}("):  # dataclass's own signature doc
        # no docstring of its own: --help opens with the first paragraph of the script's docstring
        cls.__doc__ = _single_backticks(" ".join(re.split(r"\n\s*\n", module_doc.strip())[0].split()))
    for node, doc in zip(body, body[1:], strict=False):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(doc, ast.Expr)):
            continue
        if not (isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            continue
        name = node.target.id
        paragraphs = re.split(r"\n\s*\n", doc.value.value.strip())
        text = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        text = _single_backticks(text)
        arg = tyro.conf.arg(help=text)
        # tyro prints an empty list as "(default: )"; a hint of its own ("(repeatable)", "(fixed to: ...)") stays
        if _empty_default(cls.__dataclass_fields__.get(name)) and not _has_own_hint(hints[name]):
            arg = tyro.conf.arg(help=text, help_behavior_hint="(default: empty)")
        cls.__annotations__[name] = typing.Annotated[hints[name], arg]
    cls._flowing_help = True
    return cls


def _single_backticks(text: str) -> str:
    """reST inline literals (````x````) as Markdown's (```x```), which read better in a terminal; a literal
    holding a backtick, or a longer run of backticks, stays as written (Markdown's double-backtick span,
    or not a literal at all)."""
    import re

    return re.sub(r"(?<!`)``([^`]+)``(?!`)", r"`\1`", text)


def _empty_default(f: Any) -> bool:
    """Whether the dataclass field ``f`` (or None) defaults to an empty list, tuple, set or dict."""
    if f is None:
        return False
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    elif f.default is not dataclasses.MISSING:
        value = f.default
    else:
        return False
    return isinstance(value, (list, tuple, set, dict)) and len(value) == 0


def _has_own_hint(tp: Any) -> bool:
    """Whether the annotation ``tp`` carries a tyro marker whose help hint replaces the default's:
    ``tyro.conf.UseAppendAction`` ("(repeatable)") or ``tyro.conf.Fixed`` ("(fixed to: ...)")."""
    import typing

    import tyro

    if typing.get_origin(tp) is not typing.Annotated:
        return False
    return any(m is tyro.conf.UseAppendAction or m is tyro.conf.Fixed for m in tp.__metadata__)


def given_fields(cls: Any, argv: list[str] | None = None) -> frozenset[str]:
    """The fields of the dataclass ``cls`` that the command line ``argv`` (default ``sys.argv[1:]``) sets.

    A field counts as given when one of tyro's spellings of its flag appears: ``--field-name``,
    ``--field_name``, either with ``=value``, and ``--no-field-name`` / ``--no_field_name`` for a bool.
    Whether the value equals the default does not matter (``--total-timesteps 2000000`` is given even
    when 2,000,000 is the default): :func:`resume_args` needs what was asked for, not what differs.
    Tokens after a bare ``--`` are positional values, not flags.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    given = set()
    for token in argv:
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        name = token[2:].split("=", 1)[0].replace("-", "_")
        if name in fields:
            given.add(name)
        elif name.startswith("no_") and name[3:] in fields:
            given.add(name[3:])
    return frozenset(given)


def resume_args(
    saved: dict, cli: Any, defaults: Any, changeable: tuple[str, ...], given: set[str] | frozenset[str] | None = None
) -> Any:
    """The resumed run's ``Args``: the saved config, with the ``changeable`` flags the command line set.

    Args:
        saved: the run's config as saved (``dataclasses.asdict`` of its ``Args``).
        cli: the ``Args`` parsed from this command line.
        defaults: ``Args`` with every default; used only when ``given`` is None.
        changeable: fields a resumed run may change (e.g. ``total_timesteps`` to train longer).
        given: the fields the command line set (:func:`given_fields`), whatever their values: a given
            changeable flag is applied even when it equals its default (``--total-timesteps 2000000``,
            ``--torch-threads 0``), and a given other flag is checked against the saved value even
            when it equals its default (``--seed 1`` on a seed-5 run is refused). None (a caller
            that builds ``cli`` itself, not from a command line): the fields that differ from
            ``defaults``.

    Raises:
        ValueError: the command line sets another field to a value other than the saved one; the
            message names the flag, both values and the changeable flags.
    """
    values = dict(saved)
    if given is None:
        given = {f.name for f in dataclasses.fields(cli) if getattr(cli, f.name) != getattr(defaults, f.name)}
    flags = ", ".join("--" + c.replace("_", "-") for c in changeable)
    for f in dataclasses.fields(cli):
        if f.name not in given or f.name == "resume":
            continue
        value = getattr(cli, f.name)
        if f.name in changeable:
            values[f.name] = value
            continue
        # a flag the saved run predates keeps its default on resume
        kept = values[f.name] if f.name in values else getattr(defaults, f.name)
        if kept != value and not (isinstance(value, tuple) and list(value) == kept):
            shown = " ".join(map(str, value)) if isinstance(value, (tuple, list)) else repr(value)
            raise ValueError(
                f"--{f.name.replace('_', '-')} {shown}: the resumed run has {kept!r} and keeps its "
                f"configuration; only {flags} may change on --resume"
            )
    names = {f.name for f in dataclasses.fields(cli)}
    return type(cli)(**{k: v for k, v in values.items() if k in names})


def check_training_args(args: Any) -> None:
    """Refuse bad settings of an on-policy training script's ``Args`` (``algos/happo_gnn.py``,
    ``hatrpo_gnn.py``) before anything is created: the maps, backend, env split, minibatches, ranges
    of the rates and coefficients (the fields ``args`` has), ``--eval-maps`` and ``--ally-dropout``.

    Raises:
        SystemExit: :func:`cli_error` (status 2), naming the flag, its value and what was expected.
    """
    from sc2_envs import list_maps

    def need(ok: bool, flag: str, expected: str) -> None:
        if not ok:
            cli_error(f"--{flag.replace('_', '-')} {getattr(args, flag)!r}: expected {expected}")

    check_finite_flags(args)
    refuse_one_string("map", args.map)
    maps = list(args.map)
    if not maps:
        cli_error("--map: expected at least one map name")
    valid = list_maps("all")
    bad = [m for m in maps if m not in valid]
    if bad:
        # the suggestion make_batched gives for the same name (sc2_envs.validation.did_you_mean)
        shown = repr(maps[0]) + did_you_mean(maps[0], valid) if len(maps) == 1 else " ".join(maps)
        cli_error(
            f"--map {shown}: expected one of "
            + ", ".join(valid)
            + (f" (unknown: {bad}{close_names(bad, valid)})" if len(maps) > 1 else "")
        )
    if len(set(maps)) < len(maps):
        cli_error(f"--map {' '.join(maps)}: expected distinct maps (each map gets its own simulator)")
    K = len(maps)
    need(args.backend in ("sim", "sc2"), "backend", "sim or sc2")
    need(
        args.backend == "sim" or args.num_envs == K,
        "num_envs",
        "1 with --backend sc2 (it runs one StarCraft II game)" if K == 1 else f"{K} with --backend sc2 (one game per map)",
    )
    need(args.actor in ("gnn", "mlp"), "actor", "gnn or mlp")
    need(
        is_plain_name(args.exp_name),
        "exp_name",
        "a name without path separators (it names the run folder runs/<map>__<exp_name>__<seed>__<time>)",
    )
    for flag in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "eval_episodes", "eval_interval", "hidden"):
        if hasattr(args, flag):
            need(getattr(args, flag) >= 1, flag, "an integer >= 1")
    need(args.seed >= 0, "seed", "a non-negative integer")
    need(args.actor_layers >= 1, "actor_layers", "an integer >= 1 (attention blocks in each GNN actor)")
    need(args.torch_threads >= 0, "torch_threads", "an integer >= 0 (0: torch's default)")
    if hasattr(args, "pass_rows"):
        need(args.pass_rows >= 0, "pass_rows", "an integer >= 0 (0: automatic)")
    need(0.0 < args.gamma <= 1.0, "gamma", "a discount in (0, 1]")
    need(0.0 <= args.gae_lambda <= 1.0, "gae_lambda", "a value in [0, 1]")
    need(args.time_budget_s >= 0, "time_budget_s", "seconds >= 0 (0: no budget)")
    for flag in ("learning_rate", "critic_learning_rate", "clip_coef", "kl_threshold"):
        if hasattr(args, flag):
            need(getattr(args, flag) > 0, flag, "a value > 0")
    check_loss_flags(args)
    need(
        args.num_envs % K == 0,
        "num_envs",
        f"a multiple of the number of maps ({K}): the envs are split evenly, one batched simulator per map",
    )
    batch = args.num_envs * args.num_steps
    if K == 1:
        need(
            args.num_minibatches <= batch and batch % args.num_minibatches == 0,
            "num_minibatches",
            f"a divisor of the batch of {batch} env steps (--num-envs x --num-steps), for equal minibatches",
        )
    else:
        per_map = batch // K
        need(
            args.num_minibatches <= per_map and per_map % args.num_minibatches == 0,
            "num_minibatches",
            f"a divisor of each map's batch of {per_map} env steps (--num-envs / {K} maps x --num-steps), so that "
            "every minibatch holds the same share of every map",
        )
    need(
        args.total_timesteps >= batch, "total_timesteps", f"at least one batch of {batch} env steps (--num-envs x --num-steps)"
    )
    if getattr(args, "recurrent", False):  # the actors' minibatches are whole envs (CleanRL ppo_atari_lstm.py)
        need(args.actor == "gnn", "actor", "gnn with --recurrent (the GRU follows the GNN actor's readout)")
        need(
            (args.num_envs // K) % args.num_minibatches == 0,
            "num_minibatches",
            f"a divisor of the {args.num_envs // K} envs of each map with --recurrent (minibatches of whole env sequences)",
        )
    check_eval_maps(args.eval_maps, maps, args.backend, list_maps("all"))
    check_ally_dropout(args.ally_dropout, maps, args.backend)


def check_ally_dropout(ally_dropout: Any, train_maps: list[str], backend: str) -> list[float]:
    """Refuse a bad ``--ally-dropout`` of a training script; return one probability per training map.

    Args:
        ally_dropout: the flag's value, one probability in ``[0, 1)`` for every map, or one per map.
        train_maps: the run's ``--map`` names.
        backend: ``--backend``; removing units at reset needs the embedded simulator (``sim``).

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for a value that is not a number or lies outside
            ``[0, 1)``, no value or a count of values that is neither 1 nor the number of maps, or a
            non-zero value with ``--backend sc2``.
    """
    values = list(ally_dropout) if isinstance(ally_dropout, (list, tuple)) else [ally_dropout]  # one number: one value
    shown = " ".join(map(str, values)) or "(no value)"
    if any(isinstance(p, bool) or not isinstance(p, numbers.Real) for p in values):
        cli_error(f"--ally-dropout {shown}: expected probabilities in [0, 1) (numbers)")
    probs = [float(p) for p in values]
    if len(probs) not in (1, len(train_maps)):
        cli_error(
            f"--ally-dropout {shown}: expected one probability (used for every map) or one per --map ({len(train_maps)}: "
            f"{' '.join(train_maps)})"
        )
    bad = [p for p in probs if not 0.0 <= p < 1.0]
    if bad:
        cli_error(f"--ally-dropout {shown}: expected probabilities in [0, 1) (got {bad})")
    probs = probs * len(train_maps) if len(probs) == 1 else probs
    if any(probs) and backend != "sim":
        cli_error(f"--ally-dropout {shown} with --backend {backend}: expected --backend sim (SMACSim.remove_allies) or 0")
    return probs


def ally_dropout_for(ally_dropout: Any, train_maps: list[str], backend: str, infos: list[dict]) -> list[float]:
    """:func:`check_ally_dropout`, then refuse dropout on a map of one agent (its only ally would go).

    Args:
        infos: each training map's ``get_env_info()``, in ``train_maps`` order.

    Returns:
        One probability per training map.

    Raises:
        SystemExit: via :func:`cli_error` (status 2), as :func:`check_ally_dropout`, or for a non-zero
            probability on a map with fewer than 2 agents.
    """
    probs = check_ally_dropout(ally_dropout, train_maps, backend)
    for m, p, info in zip(train_maps, probs, infos, strict=True):
        if p > 0 and info["n_agents"] < 2:
            cli_error(f"--ally-dropout {p} on {m}: it has {info['n_agents']} agent; expected maps of 2 or more agents")
    return probs
