"""What belongs to one scheduler (issue 17's direction): today its job variables and their
translation to another scheduler's job (jobvars)."""
