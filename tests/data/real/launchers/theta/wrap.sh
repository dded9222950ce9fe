#!/bin/bash
# print where each rank landed, then run the command
echo "rank ${ALPS_APP_PE} on $(hostname)"
exec "$@"
