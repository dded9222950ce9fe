import argparse
p = argparse.ArgumentParser(); p.add_argument("config", nargs="?"); p.add_argument("-d", "--distributed", action="store_true")
p.add_argument("--rank-gpu", action="store_true")
print(p.parse_args())
