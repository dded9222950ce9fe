import pytest

from maple_ci.github.commands import Command, CommandError, authorize, parse_comment

KNOWN = ("perlmutter", "aurora", "polaris")


def parse(body):
    return parse_comment(body, KNOWN)


def test_port_with_every_option():
    cmd = parse("Thanks!\n/maple port Perlmutter aurora aurora --from=jobs/./train.sh --framework deepspeed "
                "--strategy zero3 --nodes 16 --no-verify\n/maple help")
    assert cmd == Command("port", ("perlmutter", "aurora"), source="jobs/train.sh", framework="deepspeed",
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
    assert parse("  /maple verify  ") == Command("verify")
    assert parse("/maple verify polaris") == Command("verify", ("polaris",))
    assert parse("/maple help") == Command("help")


@pytest.mark.parametrize("line, problem", [
    ("/maple", "needs a command"),
    ("/maple deploy aurora", "Unknown command"),
    ("/maple port", "at least one target"),
    ("/maple port frontier", "Unknown cluster `frontier`"),
    ("/maple port aurora --nodes 0", "--nodes"),
    ("/maple port aurora --nodes 10001", "--nodes"),
    ("/maple port aurora --nodes ²", "--nodes"),
    ("/maple port aurora --nodes", "needs a value"),
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
    assert parse("/maple recreate") == Command("port", recreate=True)
    assert parse("/maple ignore aurora jobs/a.sh") == Command("ignore", ("aurora",), files=("jobs/a.sh",))
    assert parse("/maple unignore") == Command("unignore")
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
                                  "/maple recreate aurora", "/maple ignore polaris jobs/old.sh", "/maple verify perlmutter"])
def test_a_command_written_back_asks_for_the_same(line):
    # Refusals quote it as the request to copy (with the missing value or the new head filled in).
    command = parse(line)
    assert command.text() == line and parse(command.text()) == command
