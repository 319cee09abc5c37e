"""The `kit` command line: train, eval, serve, model, env, gym, tools, user, sky.

Each subcommand imports its (heavy) modules only when it runs, so `kit --help` is instant.
Exit codes: 0 ok, 1 the job failed, 2 bad input (config, arguments, files) with a message saying what to fix.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kit.config.tree import ConfigError


def _add_config_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--config", required=required, help="recipe: a YAML path or a shipped name (cpu_demo, ...)"
    )
    parser.add_argument(
        "overrides", nargs="*", help="dotted overrides, e.g. grpo.max_steps=2 generation.mode=server"
    )


def _train(args: argparse.Namespace) -> int:
    from kit.config.tree import load_config
    from kit.train.job import train

    cfg = load_config(args.config, [*args.overrides, *(["run.resume=true"] if args.resume else [])])
    if args.dry_run:
        from kit.train.preflight import print_plan

        return print_plan(cfg)
    train(cfg)
    return 0


def _eval(args: argparse.Namespace) -> int:
    from kit.config.tree import load_config
    from kit.train.evaluate import evaluate_cli

    databases = [f"env.databases={args.databases}"] if args.databases else []
    agent = [f"rollout.agent={args.agent}", "generation.mode=server"] if args.agent == "nemo_gym" else []
    repeats = [] if args.repeats is None else [f"run.eval_repeats={args.repeats}"]
    cfg = load_config(args.config, [*args.overrides, *databases, *agent, *repeats])
    return evaluate_cli(cfg, args)


def _serve(args: argparse.Namespace) -> int:
    from kit.config.tree import load_config
    from kit.serve.server import serve_cli

    cfg = load_config(args.config, args.overrides)
    return serve_cli(cfg, args)


def _model_dummy(args: argparse.Namespace) -> int:
    from kit.dummy_models import write_dummy_model
    from kit.models import ModelResolutionError, cache_dir

    name = f"{args.arch}-tiny-dummy" if args.tiny else f"{args.arch}-dummy"
    try:
        folder = write_dummy_model(args.arch, Path(args.out or cache_dir() / "models" / name), args.tiny)
    except ModelResolutionError as err:
        print(f"kit model dummy: {err}", file=sys.stderr)
        return 2
    print(f"{folder}\n  DUMMY weights, for measuring cost only ({folder}/DUMMY_WEIGHTS.md). Use it with\n"
          f"  kit train --config single_gpu model.name_or_path={folder} generation.ignore_eos=true",
          flush=True)  # fmt: skip
    return 0


def _register_group(sub, name: str, help_text: str, *modules: str) -> None:
    """A subcommand group whose own subcommands come from each `module.register(subparsers)`."""
    group = sub.add_parser(name, help=help_text, description=help_text)
    group_sub = group.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
    group_sub.required = True
    for module in modules:
        __import__(module, fromlist=["register"]).register(group_sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kit",
        description="gym-grpo-kit: GRPO training of LLM tool-use agents on TRL, with vLLM server mode.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    train = sub.add_parser("train", help="train a policy with GRPO from a recipe, writing a run folder")
    _add_config_args(train)
    train.add_argument(
        "--dry-run", action="store_true", help="resolve and check the config, print the plan, exit"
    )
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in run.output_dir from its newest complete checkpoint (run.resume=true)",
    )
    train.set_defaults(func=_train)

    evaluate = sub.add_parser(
        "eval", help="success rate of a model (or a served endpoint) on tasks, per category"
    )
    _add_config_args(evaluate, required=False)
    evaluate.add_argument("--model", help="model path or hub id (default: the recipe's model)")
    evaluate.add_argument(
        "--server", help="evaluate through a served OpenAI endpoint at this base URL instead"
    )
    evaluate.add_argument("--api-key", help="API key for --server")
    evaluate.add_argument("--tasks", help="NeMo-Gym rows (jsonl; default: the recipe's env.eval_file)")
    evaluate.add_argument(
        "--databases", help="CSV directory in NeMo-Gym's layout the tasks run against (env.databases)"
    )
    evaluate.add_argument(
        "--limit", type=int, help="evaluate at most N tasks (default: run.eval_tasks; all when 0)"
    )
    evaluate.add_argument(
        "--repeats",
        type=int,
        help="episodes per task (default: run.eval_repeats, 1): 1 is greedy; K > 1 samples K at "
        "grpo.temperature, seeded from run.seed, and reports pass^k and pass@k for k = 1..K",
    )
    evaluate.add_argument(
        "--agent",
        choices=["kit", "nemo_gym"],
        help="who runs the episodes: the kit's loop, or NeMo-Gym's agent against --server (rollout.agent)",
    )
    evaluate.add_argument("--out", help="write the JSON report here (default: print only)")
    evaluate.set_defaults(func=_eval)

    serve = sub.add_parser(
        "serve", help="serve the policy with vLLM (OpenAI API, tool parser, weight-update endpoints)"
    )
    _add_config_args(serve)
    serve.add_argument("--model", help="model path or hub id (default: the recipe's model)")
    serve.add_argument("--host", help="bind address (default: serve.host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: serve.port)")
    serve.add_argument("--api-key", help="require this API key on every endpoint but /health")
    serve.add_argument("--log-file", help="write the server log here (default: RUN_DIR/server.log)")
    serve.set_defaults(func=_serve)

    model = sub.add_parser("model", help="model folders: published architectures with dummy weights")
    model_sub = model.add_subparsers(dest="model_command", metavar="COMMAND")
    model_sub.required = True
    dummy = model_sub.add_parser(
        "dummy",
        help="write a model folder of a published architecture with dummy weights, for measuring cost only",
        description="Write a model folder with a published architecture's dimensions, the demo tokenizer "
        "and no weights: kit serve loads it with --load-format dummy, kit train initialises the policy at "
        "random. Speed and memory are the architecture's; learning cannot be measured with it.",
    )
    from kit.dummy_models import ARCHITECTURES

    dummy.add_argument("--arch", required=True, choices=list(ARCHITECTURES), help="published architecture")
    dummy.add_argument("--tiny", action="store_true", help="the architecture at test size (2-3 layers)")
    dummy.add_argument("--out", help="the folder (default: $KIT_CACHE/models/ARCH[-tiny]-dummy)")
    dummy.set_defaults(func=_model_dummy)

    _register_group(
        sub,
        "env",
        "the workplace-assistant environment: generate tasks, verify rows, show a task",
        "kit.envs.workplace.cli",
    )
    _register_group(
        sub,
        "gym",
        "NeMo-Gym's own servers: list them, start them, write rows for the counter server",
        "kit.envs.nemo_gym.cli",
    )
    _register_group(
        sub,
        "tools",
        "tool-call parsers: parse text with a built-in or plugin parser, list parsers",
        "kit.tool_parsers.cli",
    )
    _register_group(
        sub,
        "user",
        "simulated users of dialogue tasks: check that one keeps its rules before a run, train a small one",
        "kit.rollout.user_cli",
        # `train` lives with the trainers: the rollout room may not import kit.train.
        "kit.train.user_model",
    )
    _register_group(
        sub, "sky", "SkyPilot: validate task YAMLs, print launch commands, run a node's role", "kit.sky.cli"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The kit's own progress at INFO; the libraries' chatter (vLLM, urllib3, ...) only from WARNING on.
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(asctime)s %(name)s: %(message)s"
    )
    logging.getLogger("kit").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    from kit.envs.nemo_gym.gym_python import GymNotFound
    from kit.envs.nemo_gym.servers import NeMoGymError
    from kit.envs.rows import RowsError

    try:
        return int(args.func(args) or 0)
    except ConfigError as err:
        print(f"kit {args.command}: config error: {err}", file=sys.stderr)
        return 2
    except (RowsError, GymNotFound, NeMoGymError) as err:
        print(f"kit {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
