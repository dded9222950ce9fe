import os
import sys

import ray

ray.init(address=os.environ["ip_head"])
num_cpus = int(sys.argv[1])
