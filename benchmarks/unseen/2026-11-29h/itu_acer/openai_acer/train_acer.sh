#!/bin/bash

PYTHONPATH=. python baselines/acer/run_rogue.py -f cfg_rogue_default.cfg $*
