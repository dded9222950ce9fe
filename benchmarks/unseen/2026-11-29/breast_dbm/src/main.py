import argparse
p = argparse.ArgumentParser(); p.add_argument("--config")
print(p.parse_args())
