#!/bin/bash
# Stop the maple-ci test cluster started by setup.sh (the daemons only; packages and files stay).
run=/run/maple-slurm
for pidfile in "$run"/slurmd-*.pid "$run"/slurmctld.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
    rm -f "$pidfile"
done
# munged is started by setup.sh only for this cluster; its pid file is munge's own.
[ -f /run/munge/munged.pid ] && kill "$(cat /run/munge/munged.pid)" 2>/dev/null
exit 0
