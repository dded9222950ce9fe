#!/bin/bash
# Stop the maple-ci test cluster started by setup.sh (the daemons only; packages and files stay),
# and wait until they are gone, so that setup.sh can start them again at once.
. "$(dirname "$0")/daemons.sh"
for pidfile in "${pidfiles[@]}"; do running "$pidfile" && kill "$(cat "$pidfile")"; done
for _ in $(seq 20); do
    alive=0
    for pidfile in "${pidfiles[@]}"; do running "$pidfile" && alive=1; done
    [ $alive = 0 ] && exit 0
    sleep 0.5
done
echo "stop.sh: daemons still running after 10 s" >&2
exit 1
