#!/bin/bash
ray start --address=$1:6379 --block
