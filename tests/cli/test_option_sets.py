"""Each CLI command's option set, frozen: adding, renaming or removing an option is a
deliberate change to this file (as torchtitan's test_no_new_cli_options does).

When you add an option on purpose, add it to its command's set below in the same commit.
"""

from __future__ import annotations

import typer

from chipwise.cli import app

OPTION_SETS = {
    "advise": {
        "--allow-porting",
        "--as-is",
        "--batch",
        "--batch-tokens",
        "--budget-usd",
        "--chip-file",
        "--chips",
        "--cloud",
        "--deadline-days",
        "--disaggregation",
        "--framework",
        "--global-batch",
        "--html",
        "--input-len",
        "--json",
        "--kv-dtype",
        "--lora-rank",
        "--lora-targets",
        "--max-chips",
        "--method",
        "--objective",
        "--output-len",
        "--own-hardware",
        "--phase",
        "--precision",
        "--prices",
        "--pricing",
        "--project",
        "--quiet",
        "--requests-per-day",
        "--rps",
        "--seq-len",
        "--tokens",
        "--tpot",
        "--ttft",
        "--utilization",
        "--verbose",
        "--work",
        "--workers",
        "-q",
        "-v",
    },
    "bench compare": {"--benchmark", "--calibrated", "--chip", "--db", "--json"},
    "bench list": {"--benchmark", "--db", "--device", "--json", "--run"},
    "calibrate": {"--chip", "--db", "--device", "--json", "--no-save"},
    "chips show": {"--json", "--verbose", "-v"},
    "explore": {
        "--batch",
        "--chip",
        "--chip-file",
        "--cloud",
        "--count",
        "--global-batch",
        "--input-len",
        "--json",
        "--load",
        "--max-points",
        "--no-cache",
        "--out",
        "--output-len",
        "--phase",
        "--precision",
        "--pricing",
        "--quiet",
        "--ray",
        "--requests-per-day",
        "--seq-len",
        "--tokens",
        "--tpot-slo-s",
        "--ttft-slo-s",
        "--workers",
        "--workload",
        "-o",
        "-q",
        "-w",
    },
    "predict": {
        "--api",
        "--batch",
        "--calibrated",
        "--chip",
        "--chip-file",
        "--chips",
        "--concurrency",
        "--db",
        "--disaggregated",
        "--global-batch",
        "--input-len",
        "--input-len-std",
        "--json",
        "--engine",
        "--engine-date",
        "--kv-dtype",
        "--lengths",
        "--max-num-seqs",
        "--max-num-tokens",
        "--memory-fraction",
        "--moe-backend",
        "--num-requests",
        "--max-throughput",
        "--output-len",
        "--output-len-std",
        "--phase",
        "--plan",
        "--precision",
        "--prefill-pool",
        "--prefix-hit-rate",
        "--prices",
        "--quiet",
        "--rps",
        "--seq-len",
        "--spec-accept",
        "--spec-method",
        "--spec-tokens",
        "--server",
        "--slot-cache-len",
        "--tpot",
        "--ttft",
        "-q",
    },
    "prices show": {"--cloud", "--json", "--prices", "--pricing"},
    "prices update": {"--dry-run", "--from", "--provider"},
    "profile": {
        "--arg",
        "--db",
        "--device",
        "--dtype",
        "--json",
        "--quiet",
        "--steps",
        "--trust-code",
        "--warmup",
        "-q",
    },
    "scan": {"--json", "--verbose", "-v"},
    "serve": {"--host", "--port"},
    "validate": {
        "--calibrated",
        "--db",
        "--json",
        "--kind",
        "--lopo",
        "--measured",
        "--phase",  # issue 13: 'validate --phase infer', the same as --kind
        "--quiet",
        "--wide",
        "--workers",  # the rows' runs spread over this machine's cores, as explore's points
        "-q",
    },
    "workload list": {"--json"},
    "workload show": {"--json", "--quiet", "--seq-len", "--trust-code", "-q"},
}


def _option_sets() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}

    def walk(cmd: object, prefix: str) -> None:
        commands = getattr(cmd, "commands", None)
        if commands is not None:
            for name, sub in commands.items():
                walk(sub, f"{prefix} {name}".strip())
            return
        params = getattr(cmd, "params", [])
        out[prefix] = {
            opt for p in params if getattr(p, "param_type_name", "") == "option" for opt in p.opts
        }

    walk(typer.main.get_command(app), "")
    return out


def test_every_command_has_the_frozen_option_set() -> None:
    have = _option_sets()
    assert set(have) == set(OPTION_SETS), "a command was added or removed: update OPTION_SETS"
    for command, options in have.items():
        added, removed = options - OPTION_SETS[command], OPTION_SETS[command] - options
        assert not added and not removed, (
            f"'chipwise {command}': options added {sorted(added)}, removed {sorted(removed)}; "
            "if deliberate, update OPTION_SETS in tests/cli/test_option_sets.py"
        )


def test_speculative_decoding_options_refuse_bad_values_in_one_line() -> None:
    from typer.testing import CliRunner

    base = ["predict", "llama3-8b", "--phase", "infer", "--chip", "h100", "--chips", "1",
            "--concurrency", "4"]  # fmt: skip
    cases = (
        (["--spec-tokens", "3", "--spec-accept", "4.5"], "spec_accept 4.5 must be in [1,"),
        (["--spec-tokens", "2", "--spec-accept", "0.5"], "spec_accept 0.5 must be in [1,"),
        (["--spec-accept", "2"], "1 + spec_tokens = 1"),
        (["--spec-tokens", "17"], "--spec-tokens"),
        (["--spec-tokens", "2", "--spec-method", "medusa"], "--spec-method"),
    )
    for extra, message in cases:
        result = CliRunner().invoke(app, [*base, *extra])
        assert result.exit_code != 0, extra
        assert message in result.output, (extra, result.output)
    static = ["predict", "llama3-8b", "--phase", "infer", "--chip", "h100", "--spec-tokens", "2",
              "--spec-accept", "2"]  # fmt: skip
    result = CliRunner().invoke(app, static)
    assert result.exit_code != 0
    assert "not a static --batch" in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    ok = CliRunner().invoke(app, [*base, "--spec-tokens", "3", "--spec-accept", "2.5",
                                  "--spec-method", "eagle", "--json"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
