from contextlib import nullcontext

import pytest

from maple_ci.github.authorization import authorize
from maple_ci.github.commands import MAX_LINE, BotCommand, CommandError, parse_comment
from maple_ci.github.config import Config
from maple_ci.github.pipeline import Pipeline

KNOWN = ("perlmutter", "aurora", "polaris")


def parse(body):
    return parse_comment(body, KNOWN)


def test_port_with_every_option():
    cmd = parse("Thanks!\n/maple port Perlmutter aurora aurora --from=jobs/./train.sh --framework deepspeed "
                "--strategy zero3 --nodes 16 --no-verify\n/maple help")
    assert cmd == BotCommand("port", ("perlmutter", "aurora"), source="jobs/train.sh", framework="deepspeed",
                          strategy="zero3", nodes=16, verify=False)


@pytest.mark.parametrize("body", ["no command here", "see /maple port aurora", "> /maple port aurora",
                                  "```\n/maple port aurora\n```", "/maplefoo port aurora"])
def test_comments_without_a_command_line(body):
    # quoted, fenced and mid-sentence mentions are someone talking about the bot, not to it
    assert parse(body) is None


def test_first_maple_line_wins_even_if_a_later_one_is_valid():
    with pytest.raises(CommandError):
        parse("/maple port mars\n/maple port aurora")


def test_verify_and_help():
    assert parse("  /maple verify  ") == BotCommand("verify")
    assert parse("/maple verify polaris") == BotCommand("verify", ("polaris",))
    assert parse("/maple help") == BotCommand("help")


@pytest.mark.parametrize("line, problem", [
    ("/maple", "needs a command"),
    ("/maple deploy aurora", "Unknown command"),
    ("/maple port", "at least one target"),
    ("/maple port frontier", "Unknown cluster `frontier`"),
    ("/maple port aurora --nodes 0", "--nodes"),
    ("/maple port aurora --nodes 10001", "--nodes"),
    ("/maple port aurora --nodes ²", "--nodes"),
    ("/maple port aurora --nodes", "needs a value"),
    ("/maple port aurora --from --no-verify", "needs a value"),
    ("/maple port aurora --framework jax", "--framework"),
    ("/maple port aurora --strategy zero4", "--strategy"),
    ("/maple port aurora --from a.sh --from b.sh", "twice"),
    ("/maple port aurora --force", "Unknown option"),
    ("/maple verify aurora --nodes 2", "only cluster names"),
    ("/maple help me", "no arguments"),
])
def test_invalid_commands_explain_in_short_and_point_to_help(line, problem):
    with pytest.raises(CommandError) as info:
        parse(line)
    assert problem in info.value.problem
    reply = str(info.value)
    assert reply.endswith("`/maple help` lists every command, option and cluster.") and reply.count("\n") == 2
    assert info.value.exit_code == 2


def test_an_unknown_word_with_no_close_match_lists_what_is_known():
    with pytest.raises(CommandError) as info:
        parse("/maple port frontier")
    assert "Unknown cluster `frontier`. Known: aurora, perlmutter, polaris." in str(info.value)


def test_recreate_ignore_and_unignore():
    assert parse("/maple recreate") == BotCommand("port", recreate=True)
    assert parse("/maple ignore aurora jobs/a.sh") == BotCommand("ignore", ("aurora",), files=("jobs/a.sh",))
    assert parse("/maple unignore") == BotCommand("unignore")
    with pytest.raises(CommandError, match="needs a cluster or a launch script"):
        parse("/maple ignore")


@pytest.mark.parametrize("path", ["/etc/passwd", "../secrets", "a/../../b", "a\\b", "a\x00b", "~/x", ".git/config", ".", "a\x1b[2Jb"])
def test_from_must_stay_inside_the_repository(path):
    with pytest.raises(CommandError, match="relative path inside the repository"):
        parse(f"/maple port aurora --from={path}")


def test_help_reply_is_not_itself_a_command():
    with pytest.raises(CommandError) as info:
        parse("/maple port mars")
    assert parse(str(info.value)) is None


@pytest.mark.parametrize("association, permission, allowed", [
    ("OWNER", "admin", True),
    ("MEMBER", "maintain", True),
    ("COLLABORATOR", "write", True),
    ("MEMBER", "read", False),  # org member without write access to this repository
    ("COLLABORATOR", None, False),
    ("CONTRIBUTOR", "write", False),
    ("NONE", "admin", False),
    ("FIRST_TIME_CONTRIBUTOR", "none", False),
])
def test_authorize_needs_association_and_write_permission(association, permission, allowed):
    assert authorize(association, permission) is allowed


@pytest.mark.parametrize("line", ["/maple port aurora --framework deepspeed --nodes 2 --no-verify @abcdef123456",
                                  "/maple port perlmutter aurora --from jobs/a.sh --entrypoint train.py --walltime 01:00:00",
                                  "/maple port aurora --entrypoint 'train.py --config x' --program-args '--lr 3e-4'",
                                  "/maple recreate aurora", "/maple ignore polaris jobs/old.sh", "/maple verify perlmutter"])
def test_a_command_written_back_asks_for_the_same(line):
    # Refusals quote it as the request to copy (with the missing value or the new head filled in).
    command = parse(line)
    assert command.text() == line and parse(command.text()) == command


# --- issue 16 item 1: --entrypoint takes a command line, as `maple port --entrypoint` does ---

@pytest.mark.parametrize("line, program, arguments", [
    ("/maple port aurora --entrypoint 'train.py --config x' --program-args \"--lr 3e-4\"",
     "train.py", ["--config", "x", "--lr", "3e-4"]),
    ("/maple port aurora --entrypoint='python3 -m pkg.train +trainer.devices=4'", "-m pkg.train", ["+trainer.devices=4"]),
    ("/maple port aurora --entrypoint tools/train.py", "tools/train.py", None),  # the script's arguments stay
    ("/maple port aurora --program-args '--config=configs/a.yaml'", None, ["--config=configs/a.yaml"]),
])
def test_entrypoint_is_a_command_line_read_as_the_cli_reads_it(line, program, arguments):
    overrides = parse(line).overrides()
    assert (overrides["entrypoint"], overrides["script_args"]) == (program, arguments)


@pytest.mark.parametrize("option", [
    "--entrypoint 'train.py --config x",  # a quote not closed
    "--entrypoint 'train.py $(id)'", "--entrypoint 'train.py; touch x'", "--entrypoint 'train.py `id`'",
    "--program-args '--name \"a\"'", "--program-args 'a\\b'", "--entrypoint python", "--entrypoint '../x.py --a'",
    "--entrypoint '-m'", "--entrypoint '-m ../x'", "--program-args '  '", "--entrypoint 'train.py ~/.ssh/*'",
    "--program-args '" + "a " * 600 + "'",
])
def test_a_command_line_holds_only_literal_words(option):
    with pytest.raises(CommandError) as info:
        parse(f"/maple port aurora {option}")
    assert "quote" in str(info.value) and "/maple help" in str(info.value)


def test_a_line_longer_than_the_limit_is_refused_before_it_is_read():
    with pytest.raises(CommandError, match=f"at most {MAX_LINE} characters"):
        parse("/maple port aurora --program-args '" + "--x " * MAX_LINE + "'")


def test_the_comment_s_command_line_reaches_the_ported_script(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "train.sh").write_text("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=4\n"
                                                 "srun python old.py --epochs 1\n")
    command = parse("/maple port perlmutter --from jobs/train.sh --entrypoint 'tools/train.py --config configs/a.yaml' "
                    "--program-args '--lr 3e-4'")
    [result] = Pipeline(Config(), lambda ref: nullcontext(tmp_path), env={}).port(command, (), "c0")
    assert (result["intent"]["entrypoint"], result["intent"]["script_args"]) == \
        ("tools/train.py", ["--config", "configs/a.yaml", "--lr", "3e-4"])
    script = result["clusters"][0]["content"]
    assert "tools/train.py --config configs/a.yaml --lr 3e-4" in script and "old.py" not in script
