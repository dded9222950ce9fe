"""The scheduler options a center submits a verification with, derived from the committed script's
own directives (read by its scheduler unit, maple_ci.schedulers): only what shapes the allocation,
nodes and time capped by the site, then the site's own options (account, QOS). A trigger never
names them."""

import re

from maple_ci import schedulers
from maple_ci.errors import MapleError

SAFE_VALUE = re.compile(r"[A-Za-z0-9_.,:=+-]+")  # no spaces, quotes or paths in a scheduler option


def scheduler_parameters(text: str, max_nodes: int, max_minutes: int, site_options: str,
                         scheduler: str) -> tuple[str, list[str]]:
    """SCHEDULER_PARAMETERS from the script's directives: the node count and walltime capped, the
    options of the unit's gate_kept with plain values, then the site's own options (account, QOS);
    and what was dropped. `scheduler` (the cluster's) reads a script that has no directives.
    ValueError for directives that cannot be read."""
    unit = schedulers.detect(text) or schedulers.get(scheduler)
    try:
        options = unit.options(text)
    except MapleError as exc:
        raise ValueError(str(exc)) from exc
    kept, dropped = [], []
    for option in options:
        if option.name in unit.size_options:
            continue
        if option.name in unit.gate_kept and (option.value is None or SAFE_VALUE.fullmatch(option.value)):
            kept += unit.format_option(option.name, option.value)
        else:
            dropped.append(unit.display(option))
    sized = unit.capped(unit.effective(options), max_nodes, max_minutes * 60)
    return " ".join([*sized, *kept, *site_options.split()]), dropped
