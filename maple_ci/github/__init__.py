"""The GitHub bot: events in, actions out (comments, branches, PRs, reviews, check runs)."""
