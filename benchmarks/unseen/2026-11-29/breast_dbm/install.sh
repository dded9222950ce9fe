#!/bin/bash
# runs inside the container before the program
pip install -q -r requirements.txt
exec "$@"
