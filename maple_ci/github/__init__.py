"""The GitHub bot: events in, actions out (comments, branches, PRs, reviews, check runs).

commands  parse `/maple ...` comments, decide who may run them        (pure)
events    event payload -> Plan: what to do, for whom, where          (pure)
delivery  PyGithub calls: one branch/commit/PR, review, summaries
checks    check runs per ported script, in progress then completed; verdicts
config    .github/maple.yml: targets, tracked sources, output dir, backend per cluster, schedule
pipeline  the real port/verify functions: extract, port, verify backends, debug-agent suggestions
dashboard the portability dashboard issue (a row per script and cluster, checkboxes; report.py finds it)
onboarding the "Configure maple-ci" PR in a repository with no .github/maple.yml; quota: the open-PR limit
bot       carry out a Plan with the pipeline's port and verify functions
action    `maple action`: Actions' environment -> plan -> exit code and outputs
"""

DEFAULT_PATH = ".github/maple.yml"  # the bot's settings in a repository; here, so `maple --help` needs no config model
