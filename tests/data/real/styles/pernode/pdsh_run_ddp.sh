#!/bin/bash
# run the per-node launch script on every host of the cluster with pdsh
export PDSH_RCMD_TYPE=ssh
export PDSH_SSH_ARGS='-oBatchMode=yes -oStrictHostKeyChecking=accept-new'
HOSTS=node01,node02

rm -rf outputs/

pdsh -w $HOSTS "cd $(pwd) && bash node_ddp.sh"
