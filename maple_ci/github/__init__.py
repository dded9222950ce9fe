"""The GitHub bot: events in, actions out (comments, branches, PRs, reviews, check runs).

commands  parse `/maple ...` comments, decide who may run them        (pure)
events    event payload -> Plan: what to do, for whom, where          (pure)
delivery  PyGithub calls: one branch/commit/PR, review, check runs, summaries
bot       carry out a Plan with a port function from the pipeline
action    `maple action`: Actions' environment -> plan -> exit code
"""
