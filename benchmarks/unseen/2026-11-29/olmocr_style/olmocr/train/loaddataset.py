import sys
print('caches the dataset', sys.argv[1:])
