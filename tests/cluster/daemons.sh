# Sourced by setup.sh and stop.sh: the pid files of the test cluster's daemons, and whether one runs.
run=/run/maple-slurm
pidfiles=("$run"/slurmd-n1.pid "$run"/slurmd-n2.pid "$run"/slurmctld.pid /run/munge/munged.pid)

# A daemon runs if its pid file names a live process. Not a zombie: PID 1 of this sandbox reaps
# late, and a stopped daemon's zombie must not count as running.
running() {
    local pid
    pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && [ -e "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status"
}
