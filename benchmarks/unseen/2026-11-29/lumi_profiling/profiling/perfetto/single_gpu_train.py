import argparse
p = argparse.ArgumentParser(); p.add_argument("--num_workers", type=int)
print(p.parse_args())
