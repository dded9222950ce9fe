#!/bin/bash
# Start the maple-ci test cluster on this one machine, as root: munge, slurmctld and two slurmd
# (nodes n1 and n2, 4 GPUs each as GRES), Lmod with stand-in modulefiles for every module the
# cluster profiles load. Idempotent: safe to run again while the cluster is up.
#
# Slurm is the real Debian slurm-wlm (22.05); only the hardware is pretend: both "nodes" are
# 127.0.0.1, and the GPUs are character devices standing in for /dev/nvidia*.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "setup.sh: must run as root (installs packages, starts daemons)" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
. "$here/daemons.sh"  # $run, running
state=/var/spool/maple-slurm
logs=/var/log/maple-slurm

need=()
for cmd in munged slurmctld slurmd sbatch mpiexec.hydra bwrap; do command -v "$cmd" >/dev/null || need+=("$cmd"); done
[ -r /usr/share/lmod/lmod/init/bash ] || need+=(lmod)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    # Other jobs may hold the dpkg lock; wait for it instead of failing.
    apt-get -o DPkg::Lock::Timeout=600 update -q
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
        munge slurm-wlm slurmctld slurmd slurm-client lmod mpich bubblewrap
fi

# Node names must resolve: job scripts take MASTER_ADDR from the node list.
grep -qE '^127\.0\.0\.1\s+n1 n2$' /etc/hosts || echo '127.0.0.1 n1 n2' >> /etc/hosts

# GPU stand-ins: Slurm's gres.conf needs character devices; /dev/null's numbers will do.
for i in 0 1 2 3; do [ -c /dev/maple-gpu$i ] || mknod /dev/maple-gpu$i c 1 3; done

mkdir -p "$state/ctld" "$state/n1" "$state/n2" "$logs" "$run" /etc/slurm
ctl_host=$(hostname -s)
sed "s/@CTL_HOST@/$ctl_host/" "$here/slurm.conf.in" > /etc/slurm/slurm.conf
cp "$here/gres.conf" "$here/cgroup.conf" /etc/slurm/

python3 "$here/make_modulefiles.py"
# The startup file jobs get through BASH_ENV, where only root can write it, as a center's is (its
# gate accepts no other BASH_ENV): wherever this checkout lives, /tmp included.
install -d -m 755 /opt/maple-test
printf '# Installed by tests/cluster/setup.sh: the test site'"'"'s startup file.\n. %q\n' "$here/site-env.sh" \
    > /opt/maple-test/site-env.sh
chmod 644 /opt/maple-test/site-env.sh

# munge: the key comes with the package; munged refuses to run as root, so run it as munge.
if ! running /run/munge/munged.pid; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
fi
running "$run/slurmctld.pid" || slurmctld
# Each slurmd runs in a UTS namespace of its own whose hostname is the node's name, so a job step
# on n2 sees hostname n2 (mini-apps report gethostname() per rank). A slurmd started by an older
# setup.sh, in this machine's namespace, is restarted; running job steps are not touched.
for node in n1 n2; do
    pidfile="$run/slurmd-$node.pid"
    if running "$pidfile" && [ "$(nsenter -t "$(cat "$pidfile")" -u hostname)" != "$node" ]; then
        kill "$(cat "$pidfile")"
        for _ in $(seq 20); do running "$pidfile" || break; sleep 0.5; done
    fi
    running "$pidfile" || unshare --uts sh -c 'hostname "$1" && exec slurmd -N "$1"' slurmd "$node"
done

# Nodes come up idle on their own; a node left DOWN by an earlier run is resumed.
for _ in $(seq 30); do scontrol ping >/dev/null 2>&1 && break; sleep 1; done
down=$(sinfo -h -t down,drain -o %N)
[ -z "$down" ] || scontrol update nodename="$down" state=resume
